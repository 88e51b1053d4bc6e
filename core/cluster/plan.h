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
  // running | completed | failed | preempted | interrupted (run.h5 says running but no process
  // holds the run directory's lock: killed, or its node lost) | damaged (run.h5 unreadable),
  // "" when nothing ran yet.
  std::string status;
  bool alive = false;   // a live process holds the run directory's lock (core/util/dir_lock.h)
  int exit_code = 0;    // the launcher's record of the last launch's exit code (0 when none)
  std::string problem;  // why run.h5 could not be read (status "damaged" once no one writes it)
  int64_t step = 0;     // the last /train step; a completed run's /summary steps
  int64_t total = 0;    // train.steps
  std::optional<double> dev_ppl;
  std::optional<double> dev_accuracy;
  std::string stop_reason;              // steps | patience | epochs | preempted; "" while training
  std::optional<double> final_dev_ppl;  // /summary of a completed run
  std::optional<double> train_seconds;  // /summary of a completed run: its training time
  // /summary dev_cross_attention_entropy of a completed run: decoder-encoder attention entropy
  // over the dev set relative to uniform (1: the decoder ignores its source).
  std::optional<double> dev_cross_attention;
};

// Slurm job states in three classes (the first word of squeue/scontrol/sacct's state).
bool slurm_state_active(const std::string& state);  // pending, running, requeued, ...
bool slurm_state_failed(const std::string& state);  // failed, timeout, out of memory, node fail

enum class Decision { kLaunch, kSkipCompleted, kSkipFailed, kSkipActive, kSkipRunning };
const char* to_string(Decision decision);

// `slurm_state` is the state of the run's newest array task ("" when it was never submitted or
// Slurm no longer knows it).
Decision decide(const RunProgress& progress, const std::string& slurm_state, bool retry_failed);

}  // namespace attnlab::cluster
