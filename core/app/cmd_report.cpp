// `attnlab report runs/<sweep> [...]`: runs the Python analysis (python3 -m analysis.report) with
// the repository root on PYTHONPATH, passing every argument through.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/app/cli.h"
#include "core/util/check.h"

namespace attnlab::cli {
namespace {

namespace fs = std::filesystem;

// The first of `start` and its parents that holds analysis/report.py, or "".
std::string find_analysis_root(fs::path start) {
  std::error_code error;
  start = fs::absolute(start, error);
  if (error) return "";
  for (fs::path dir = start;; dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / "analysis" / "report.py", error)) return dir.string();
    if (dir == dir.parent_path()) return "";
  }
}

// The working directory first (a checkout run from its root), then the directories above this
// executable (build/attnlab sits below the checkout).
std::string analysis_root() {
  std::string root = find_analysis_root(fs::current_path());
  if (!root.empty()) return root;
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error) root = find_analysis_root(executable.parent_path());
  return root;
}

// ATTNLAB_PYTHON, else Debian's /usr/bin/python3 (the one apt installs h5py and pandas for; a
// pyenv python3 earlier on PATH would not see them), else python3 on PATH.
std::string python_interpreter() {
  if (const char* chosen = std::getenv("ATTNLAB_PYTHON"); chosen && *chosen) return chosen;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

int run_report(const std::vector<std::string>& args) {
  const std::string root = analysis_root();
  CHECK(!root.empty()) << "cannot find analysis/report.py in " << fs::current_path().string()
                       << " or above the attnlab executable; run from the attnlab checkout";
  const std::string python = python_interpreter();
  std::string path = root;
  if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing) {
    path += ":" + std::string(existing);
  }

  std::vector<std::string> words = {python, "-m", "analysis.report"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(words.size() + 1);
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);

  const pid_t child = fork();
  CHECK(child >= 0) << "cannot start " << python << ": fork failed: " << std::strerror(errno);
  if (child == 0) {
    setenv("PYTHONPATH", path.c_str(), 1);
    execvp(argv[0], argv.data());
    const std::string message =
        "attnlab report: cannot run " + python + ": " + std::strerror(errno) + "\n";
    ssize_t ignored = write(STDERR_FILENO, message.data(), message.size());
    (void)ignored;
    _exit(kExitFailure);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    CHECK(errno == EINTR) << "waiting for " << python << ": " << std::strerror(errno);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return kExitFailure;  // killed by a signal
}

const CommandRegistration kRegister{
    "report", "tables, statistics and figures of a sweep directory (python3 -m analysis.report)",
    &run_report};

}  // namespace
}  // namespace attnlab::cli
