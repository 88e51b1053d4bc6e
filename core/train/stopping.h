// When a run stops before train.steps: patience on the dev loss (fairseq's --patience, Marian's
// --early-stopping) and a limit on epochs. The state is three numbers saved in every checkpoint,
// so a resumed run stops exactly where an uninterrupted one does.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "core/config/experiment.h"

namespace attnlab {

enum class StopReason { kSteps, kPatience, kEpochs, kPreempted };
const char* to_string(StopReason reason);

struct StopState {
  double best_loss = std::numeric_limits<double>::infinity();  // lowest dev loss so far
  int64_t best_step = 0;                                       // the step it was reached at
  int64_t evals_since_best = 0;  // evaluations since then that did not improve on it
};

class StoppingRule {
 public:
  explicit StoppingRule(const TrainConfig& train) : train_(train) {}

  // Records one dev evaluation; true when it is the new best, i.e. it lowers the best loss by
  // more than train.stop.min_delta (the first evaluation always is).
  bool observe(int64_t step, double dev_loss);
  // train.stop.patience evaluations in a row did not improve.
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
