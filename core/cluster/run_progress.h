// What a run directory says of its run: run.h5 (status, steps, dev metrics, /summary), the run
// directory's lock (a live trainer) and the launcher's record of the last exit code, read into
// one typed RunProgress for `attnlab status`, `plan`, `archive` and `sweep`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/io/run_log.h"
#include "core/util/enum_names.h"

namespace attnlab::cluster {

// A run's state as the commands report and decide on it: run.h5's status (io::RunStatus) plus
// what only the run directory tells.
enum class RunState {
  kNotStarted,  // no run.h5 and no recorded launch
  kRunning,     // run.h5 says running and a live process holds the run directory's lock
  kCompleted,
  kFailed,       // run.h5 says failed, or the last launch exited with an error
  kPreempted,    // stopped on request after a checkpoint: a rerun resumes it
  kInterrupted,  // run.h5 says running but no process holds the lock (killed, or its node lost)
  kDamaged,      // run.h5 exists but cannot be read, and no one writes it
};
// "not started | running | completed | failed | preempted | interrupted | damaged".
const EnumNames<RunState>& run_state_names();
// The state a run file's status means on its own (before the lock and launch records are read).
RunState state_of(io::RunStatus status);
// Stopped part-way in a way a rerun resumes (preempted, interrupted).
bool resumable(RunState state);

struct RunProgress {
  bool exists = false;  // run.h5 is there and readable
  RunState state = RunState::kNotStarted;
  bool alive = false;   // a live process holds the run directory's lock (core/util/dir_lock.h)
  int exit_code = 0;    // the launcher's record of the last launch's exit code (0 when none)
  std::string problem;  // why run.h5 could not be read (state kDamaged once no one writes it)
  int64_t step = 0;     // the last /train step; a completed run's /summary steps
  int64_t total = 0;    // train.steps
  std::optional<double> dev_ppl;
  std::optional<double> dev_accuracy;
  std::optional<io::StopReason> stop_reason;  // nullopt while training
  std::string failure;  // /summary failure of a run whose file says failed: what and where
  std::optional<double> final_dev_ppl;  // /summary of a completed run
  std::optional<double> train_seconds;  // /summary of a completed run: its training time
  // /summary dev_cross_attention_entropy of a completed run: decoder-encoder attention entropy
  // over the dev set relative to uniform (1: the decoder ignores its source).
  std::optional<double> dev_cross_attention;
  // eval.decode_splits a run whose training completed has still to decode
  // (io::RunContents::pending_splits); while any is left the run is running (its trainer decodes
  // them) or interrupted (training it again decodes them), not completed.
  std::vector<std::string> pending_splits;
};

// State, last step, train.steps and the last dev perplexity and accuracy of <run_dir>/run.h5,
// with the run directory's lock and last_exit; exists = false when there is no readable file yet.
RunProgress read_run_progress(const std::string& run_dir);

// What a run file's contents say, without the run directory's lock or launch records.
RunProgress progress_of(const io::RunContents& run);

}  // namespace attnlab::cluster
