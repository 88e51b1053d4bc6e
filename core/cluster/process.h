// Child processes for the launchers: run a command and capture what it prints (sbatch, squeue,
// scancel), or start a long-running one with its output appended to a log file (a training run).
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace attnlab::cluster {

using Environment = std::vector<std::pair<std::string, std::string>>;

struct CommandResult {
  int exit_code =
      -1;  // the exit status; 128 + signal when killed; kExitCannotStart when it could not start
  std::string out;  // standard output
  std::string err;  // standard error
  bool timed_out = false;
};

// Runs argv (argv[0] looked up in PATH) in `cwd` ("" = here), stdin from /dev/null, and waits at
// most timeout_seconds (then KILLs it and sets timed_out).
CommandResult run_command(const std::vector<std::string>& argv, const std::string& cwd = "",
                          double timeout_seconds = 60.0);

// Starts argv with `env` added to this process's environment, stdin from /dev/null, stdout and
// stderr appended to `log_path`, in a process group of its own (a Ctrl-C on the terminal reaches
// the launcher, which decides what the runs get). Returns its pid; throws Error if it cannot.
pid_t spawn_logged(const std::vector<std::string>& argv, const Environment& env,
                   const std::string& log_path);

// The full path of `program` found in PATH ("" if absent); a name with a '/' is returned as is.
std::string find_program(const std::string& program);

// The exit code of a waitpid status: the exit status, or 128 + the signal that ended it.
int exit_code_of(int wait_status);

}  // namespace attnlab::cluster
