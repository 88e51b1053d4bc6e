// Which runs of a sweep to launch: completed runs are skipped, failed runs wait for
// --retry-failed, runs Slurm still holds are not submitted twice, everything else starts or
// resumes (the trainer resumes from its newest checkpoint).
#pragma once

#include <string>

#include "core/cluster/run_progress.h"

namespace attnlab::cluster {

// Slurm job states in three classes (the first word of squeue/scontrol/sacct's state).
bool slurm_state_active(const std::string& state);  // pending, running, requeued, ...
bool slurm_state_failed(const std::string& state);  // failed, timeout, out of memory, node fail

enum class Decision { kLaunch, kSkipCompleted, kSkipFailed, kSkipActive, kSkipRunning };
const char* to_string(Decision decision);

// `slurm_state` is the state of the run's newest array task ("" when it was never submitted or
// Slurm no longer knows it).
Decision decide(const RunProgress& progress, const std::string& slurm_state, bool retry_failed);

}  // namespace attnlab::cluster
