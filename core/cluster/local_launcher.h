// The local launcher: runs a sweep's runs as child processes on this machine, as many at once as
// their cores fit, with a summary line (done / running / failed, ETA) that a terminal sees
// rewritten in place and a log sees as plain lines. SIGINT/SIGTERM are passed to every run as
// USR1 (the trainer checkpoints and stops; a rerun resumes).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/cluster/plan.h"
#include "core/cluster/process.h"
#include "core/util/exit_code.h"

namespace attnlab::cluster {

// <run dir>/last_exit: the exit code of the run's last launch (local or Slurm), removed when it
// starts again; a crash before run.h5 exists still leaves the run marked failed.
inline constexpr const char* kLastExitFile = "last_exit";
// kExitStopped (core/util/exit_code.h) is the trainer's exit code after a stop request (it
// checkpointed); last_exit also records it for a run that a stop request killed before it could
// checkpoint. Either way a rerun resumes the run.

struct LocalRun {
  std::string id;
  std::string name;
  std::string dir;                   // the run directory; output is appended to <dir>/train.log
  std::vector<std::string> command;  // argv
  Environment env;                   // added to this process's environment
  int64_t cores = 1;                 // ranks x threads per rank
  double work = 1.0;                 // cost relative to the other runs, for the ETA
  // The steps it is expected to train (core/cluster/run_length.h), for the ETA; 0: train.steps.
  double steps = 0.0;
};

struct LocalOptions {
  int64_t cores = 1;         // cores the sweep may use
  int64_t max_parallel = 0;  // at most this many runs at once; 0 = as many as the cores fit
  bool live = false;         // rewrite the summary line in place (stdout is a terminal)
  // Reads a run directory's progress for the ETA; may be empty.
  std::function<RunProgress(const std::string& dir)> progress;
};

struct LocalResult {
  std::vector<std::string> completed;  // run names
  std::vector<std::string> preempted;  // kExitStopped: stopped on request, to be resumed
  std::vector<std::string> failed;     // "name (exit N, see DIR/train.log)"
  bool interrupted = false;            // SIGINT/SIGTERM arrived
};

// One run's share of a sweep for the ETA.
struct RunWork {
  double work = 1.0;            // cost relative to the other runs (cmd_sweep: training FLOPs)
  double start_fraction = 0.0;  // of its steps already done when this launch began (resumed)
  double fraction = 0.0;        // of its steps done now
};

// Seconds until every run is done if the rest goes at the rate of the work done in the
// elapsed_seconds since this launch began: elapsed * sum(w * (1 - f)) / sum(w * (f - f0)).
// Empty before any work is done or when none is left.
std::optional<double> remaining_seconds(const std::vector<RunWork>& runs, double elapsed_seconds);

// How much of a run is done: its last step over the steps it is expected to train (0: its
// train.steps); empty while it has no readable log. A run past its expected length counts as done:
// it is about to stop, and by how much later nothing here can tell.
std::optional<double> progress_fraction(const RunProgress& progress, double expected_steps);

// Runs every run (in order, starting the next whenever its cores are free) and waits for all.
LocalResult run_local(const std::vector<LocalRun>& runs, const LocalOptions& options,
                      std::ostream& out);

// argv that trains one run here: `attnlab train -c CONFIG --out DIR --run-id ID --sweep-id SWEEP`,
// behind `mpirun -np RANKS --bind-to none` (+ --allow-run-as-root as root, + --oversubscribe when
// asked) when ranks > 1.
std::vector<std::string> local_train_command(const std::string& binary, const std::string& config,
                                             const std::string& run_dir, const std::string& run_id,
                                             const std::string& sweep_id, int64_t ranks,
                                             bool oversubscribe);

// "1h02m", "3m05s", "42s".
std::string format_duration(double seconds);

}  // namespace attnlab::cluster
