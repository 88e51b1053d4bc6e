// The training FLOPs of one optimizer step of a config, as `attnlab plan` prices it and the local
// launcher weighs runs for its ETA and launch order.
#pragma once

#include "core/config/experiment.h"

namespace attnlab::cli {

// Target tokens of a step (batch_tokens x accumulate / 2: source and target share the batch)
// x training FLOPs per target token (core/model/param_count.h) at sequences of half the longest
// allowed length.
double counted_step_flops(const ExperimentConfig& config);

}  // namespace attnlab::cli
