// What a run directory's run.h5 says, for `attnlab status` and the sweep launchers.
#pragma once

#include <string>

#include "core/cluster/plan.h"
#include "core/io/run_log.h"

namespace attnlab::cli {

// Status, last step, train.steps and the last dev perplexity and accuracy of <run_dir>/run.h5;
// exists = false when there is no readable file yet.
cluster::RunProgress read_run_progress(const std::string& run_dir);

// What a run file's contents say, without the run directory's lock or launch records.
cluster::RunProgress progress_of(const io::RunContents& run);

}  // namespace attnlab::cli
