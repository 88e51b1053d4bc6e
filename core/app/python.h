// The project's Python scripts as run by commands (`attnlab report`, `attnlab data`): which
// interpreter, where the checkout that holds them is, and running one in the foreground.
#pragma once

#include <string>
#include <vector>

namespace attnlab::cli {

// $ATTNLAB_PYTHON when set, else Debian's /usr/bin/python3 (the one `make deps` installs h5py,
// pandas and PyYAML for; a pyenv python3 earlier on PATH would not see them), else python3 on PATH.
std::string python_interpreter();

// The root of the checkout holding `relative` (a file such as "analysis/report.py"): for an
// installed attnlab its data directory (<prefix>/share/attnlab, core/util/installed.h); else the
// first of the working directory and its parents that holds it (a checkout run from its root),
// else of the directories above this executable (build/attnlab sits below the checkout). Throws
// Error naming what was searched when none holds it.
std::string find_checkout(const std::string& relative);

// Runs python_interpreter() with `args`, sharing this terminal, with `pythonpath` (when not empty)
// put first on PYTHONPATH, and waits for it; meanwhile a Ctrl-C is the script's to handle (this
// process ignores SIGINT and SIGQUIT until it has ended). Returns its exit status, or kExitFailure
// when a signal ended it; throws Error when the interpreter cannot be started.
int run_python(const std::vector<std::string>& args, const std::string& pythonpath = "");

}  // namespace attnlab::cli
