#include "core/train/stopping.h"

#include <cmath>

namespace attnlab {

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kSteps: return "steps";
    case StopReason::kPatience: return "patience";
    case StopReason::kEpochs: return "epochs";
    case StopReason::kPreempted: return "preempted";
  }
  return "?";
}

Observation StoppingRule::observe(int64_t step, double dev_loss) {
  // A NaN loss never improves, so a diverged run runs out of patience instead of becoming best.
  const bool improved =
      !std::isnan(dev_loss) &&
      (std::isinf(state_.best_loss) || dev_loss < state_.best_loss - train_.stop.min_delta);
  if (improved) {
    state_.best_loss = dev_loss;
    state_.best_step = step;
    state_.evals_since_best = 0;
    return {true, false};
  }
  ++state_.evals_since_best;
  // The rate shrinks at every shrink_patience-th stalled evaluation since the best.
  const int64_t shrink_patience = train_.lr.shrink_patience;
  if (shrink_patience == 0 || state_.evals_since_best % shrink_patience != 0) return {false, false};
  state_.lr_factor *= train_.lr.shrink;
  return {false, true};
}

bool StoppingRule::patience_exhausted() const {
  return train_.stop.patience > 0 && state_.evals_since_best >= train_.stop.patience;
}

bool StoppingRule::epochs_done(int64_t epoch) const {
  return train_.max_epochs > 0 && epoch >= train_.max_epochs;
}

}  // namespace attnlab
