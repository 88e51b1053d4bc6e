// What a run directory's run.h5 says, for `attnlab status` and the sweep launchers.
#pragma once

#include <string>

#include "core/cluster/plan.h"

namespace attnlab::cli {

// Status, last step, train.steps and the last dev perplexity and accuracy of <run_dir>/run.h5;
// exists = false when there is no readable file yet.
cluster::RunProgress read_run_progress(const std::string& run_dir);

}  // namespace attnlab::cli
