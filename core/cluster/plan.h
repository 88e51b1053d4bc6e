// Which runs of a sweep to launch: completed runs are skipped, failed runs wait for
// --retry-failed, runs Slurm still holds are not submitted twice, everything else starts or
// resumes (the trainer resumes from its newest checkpoint).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace attnlab::cluster {

// What a run's directory says (filled in by the caller from run.h5, which this layer does not
// read).
struct RunProgress {
  bool exists = false;  // run.h5 is there and readable
  std::string status;   // running | completed | failed | preempted, "" when nothing ran yet
  int64_t step = 0;     // the last /train step
  int64_t total = 0;    // train.steps
  std::optional<double> dev_ppl;
  std::optional<double> dev_accuracy;
  std::string stop_reason;              // steps | patience | epochs | preempted; "" while training
  std::optional<double> final_dev_ppl;  // /summary of a completed run
};

// Slurm job states in three classes (the first word of squeue/scontrol/sacct's state).
bool slurm_state_active(const std::string& state);  // pending, running, requeued, ...
bool slurm_state_failed(const std::string& state);  // failed, timeout, out of memory, node fail

enum class Decision { kLaunch, kSkipCompleted, kSkipFailed, kSkipActive };
const char* to_string(Decision decision);

// `slurm_state` is the state of the run's newest array task ("" when it was never submitted or
// Slurm no longer knows it).
Decision decide(const RunProgress& progress, const std::string& slurm_state, bool retry_failed);

}  // namespace attnlab::cluster
