// A training run as the CLI starts it: the run directory (run.h5, checkpoints), resume, signals,
// progress, the HDF5 log, and the final summary and attention maps.
#pragma once

#include <functional>
#include <string>

#include "core/config/experiment.h"
#include "core/dist/comm.h"
#include "core/util/exit_code.h"

namespace attnlab {

struct RunRequest {
  ExperimentConfig config;
  std::string out_dir;       // the run directory
  std::string command_line;  // argv joined, for the log
  std::string run_id;        // stable id (sweeps); empty = derived from the directory name
  std::string sweep_id;
  bool force = false;  // a completed run starts again in a new directory (<out>.1, ...)
  bool quiet = false;  // no progress output
  // Called on rank 0 with the run directory once the run is completed (now, or already before),
  // while the directory is still locked: work that belongs to a finished run (decoding splits).
  std::function<void(const std::string& dir)> after_completion;
};

// Trains (or resumes, or skips a completed run) and returns the process exit code:
// kExitOk completed or already completed, kExitStopped when stopped by a signal after a
// checkpoint (core/util/exit_code.h).
int run_training(const RunRequest& request, dist::Comm& comm);

// Installs SIGTERM/SIGUSR1 handlers that ask the trainer to stop after the current step, and a
// SIGINT handler that does the same the first time and quits at once (kExitInterrupted) the second.
void install_stop_signals();

}  // namespace attnlab
