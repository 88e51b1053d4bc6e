// The exit codes of every attnlab process, in one place: the commands return them, the launchers
// (local and Slurm) and `attnlab status` read them back from a run's last launch, and
// `attnlab --help` (so docs/cli.md) lists them from kExitCodes.
#pragma once

#include <string>

namespace attnlab {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,  // the command ran and failed (I/O, numerics, a run that crashed)
  kExitUsage = 2,    // bad command line or config: nothing was run
  kExitStopped = 3,  // stopped on request after a checkpoint: the same command again resumes
  // A launcher's child that could not be started (exec failed), as a shell reports it.
  kExitCannotStart = 127,
  kExitInterrupted = 130,  // a second Ctrl-C quit at once (128 + SIGINT): a rerun resumes
};

struct ExitCodeMeaning {
  ExitCode code;
  const char* meaning;
};

// Every code with its meaning, in increasing order.
inline constexpr ExitCodeMeaning kExitCodes[] = {
    {kExitOk, "ok"},
    {kExitFailure, "runtime failure"},
    {kExitUsage, "usage or config error (nothing was run)"},
    {kExitStopped,
     "stopped after a checkpoint (train, sweep: run the same command again to resume)"},
    {kExitCannotStart, "a launched run could not be started (sweep: its last_exit)"},
    {kExitInterrupted, "quit at once by a second Ctrl-C (train: a rerun resumes)"},
};

// "exit codes:\n  0  ok\n  1  runtime failure\n..." for a program's help text.
inline std::string exit_code_help() {
  std::string text = "exit codes:\n";
  for (const ExitCodeMeaning& entry : kExitCodes) {
    const std::string code = std::to_string(static_cast<int>(entry.code));
    text += "  " + code + std::string(code.size() < 5 ? 5 - code.size() : 1, ' ') + entry.meaning +
            "\n";
  }
  return text;
}

}  // namespace attnlab
