// What the dev loss decides besides the step cap: when a run stops (patience on the dev loss, as
// fairseq's --patience and Marian's --early-stopping; a limit on epochs) and when its learning
// rate shrinks (reduce on plateau, train.lr.shrink). The state is five numbers saved in every
// checkpoint, so a resumed run shrinks and stops exactly where an uninterrupted one does.
//
// Two losses are tracked because train.stop.min_delta asks two questions. The best checkpoint
// follows the lowest dev loss, however small the step down. Patience and the shrink count from
// the last gain: an evaluation whose loss came more than min_delta below the previous gain's (the
// mark), so that steps down by the size of the evaluation noise do not keep a run going. With
// min_delta 0 the two coincide.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "core/config/experiment.h"
#include "core/io/run_state.h"

namespace attnlab {

// Why training ended, as the run log records it (core/io/run_state.h).
using io::StopReason;

struct StopState {
  double best_loss = std::numeric_limits<double>::infinity();  // lowest dev loss so far
  int64_t best_step = 0;                                       // the step it was reached at
  double mark_loss = std::numeric_limits<double>::infinity();  // dev loss at the last gain
  int64_t evals_since_gain = 0;                                // evaluations since the last gain
  double lr_factor = 1.0;  // train.lr.shrink ^ (shrinks so far), multiplies the schedule
};

// What one dev evaluation changed.
struct Observation {
  bool best = false;       // the lowest dev loss so far: the best checkpoint is due
  bool gain = false;       // more than train.stop.min_delta below the mark: the counts restart
  bool lr_shrunk = false;  // the train.lr.shrink_patience-th evaluation since a gain: it shrank
};

class StoppingRule {
 public:
  explicit StoppingRule(const TrainConfig& train) : train_(train) {}

  // Records one dev evaluation (the first one is always the best so far).
  Observation observe(int64_t step, double dev_loss);
  // train.stop.patience evaluations in a row were no gain.
  bool patience_exhausted() const;
  // The data source has started epoch `epoch` (0-based): train.max_epochs passes are done.
  bool epochs_done(int64_t epoch) const;

  const StopState& state() const { return state_; }
  void restore(const StopState& state) { state_ = state; }

 private:
  TrainConfig train_;
  StopState state_;
};

}  // namespace attnlab
