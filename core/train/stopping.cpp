#include "core/train/stopping.h"

#include <cmath>

namespace attnlab {

Observation StoppingRule::observe(int64_t step, double dev_loss) {
  // A NaN loss is never a best or a gain, so a diverged run runs out of patience.
  Observation seen;
  if (!std::isnan(dev_loss)) {
    seen.best = std::isinf(state_.best_loss) || dev_loss < state_.best_loss;
    seen.gain = std::isinf(state_.mark_loss) || dev_loss < state_.mark_loss - train_.stop.min_delta;
  }
  if (seen.best) {
    state_.best_loss = dev_loss;
    state_.best_step = step;
  }
  if (seen.gain) {
    state_.mark_loss = dev_loss;
    state_.evals_since_gain = 0;
    return seen;
  }
  ++state_.evals_since_gain;
  // The rate shrinks at every shrink_patience-th evaluation since the last gain, from step
  // shrink_after on (before it the count goes on, so the first shrink after it can come sooner
  // than shrink_patience evaluations).
  const int64_t shrink_patience = train_.lr.shrink_patience;
  if (shrink_patience > 0 && step >= train_.lr.shrink_after &&
      state_.evals_since_gain % shrink_patience == 0) {
    state_.lr_factor *= train_.lr.shrink;
    seen.lr_shrunk = true;
  }
  return seen;
}

bool StoppingRule::patience_exhausted() const {
  return train_.stop.patience > 0 && state_.evals_since_gain >= train_.stop.patience;
}

bool StoppingRule::epochs_done(int64_t epoch) const {
  return train_.max_epochs > 0 && epoch >= train_.max_epochs;
}

}  // namespace attnlab
