// Finding the checkout's Python scripts and running them with the project's interpreter.
#include "core/app/python.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/app/cli.h"
#include "core/util/check.h"
#include "core/util/installed.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace attnlab::cli {
namespace {

namespace fs = std::filesystem;

// The first of `start` and its parents that holds `relative`, or "".
std::string find_above(fs::path start, const std::string& relative) {
  std::error_code error;
  start = fs::absolute(start, error);
  if (error) return "";
  for (fs::path dir = start;; dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / relative, error)) return dir.string();
    if (dir == dir.parent_path()) return "";
  }
}

// This process's environment with PYTHONPATH=<first>[:<the old value>], as NAME=VALUE entries.
std::vector<std::string> environment_with_pythonpath(const std::string& first) {
  std::vector<std::string> entries;
  std::string path = first;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.rfind("PYTHONPATH=", 0) == 0) {
      if (text.size() > 11) path += ":" + text.substr(11);
    } else {
      entries.push_back(text);
    }
  }
  entries.push_back("PYTHONPATH=" + path);
  return entries;
}

std::vector<char*> pointers(std::vector<std::string>& words) {
  std::vector<char*> result;
  result.reserve(words.size() + 1);
  for (std::string& word : words) result.push_back(word.data());
  result.push_back(nullptr);
  return result;
}

}  // namespace

std::string python_interpreter() {
  if (const char* chosen = std::getenv("ATTNLAB_PYTHON"); chosen && *chosen) return chosen;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

std::string find_checkout(const std::string& relative) {
  // An installed attnlab runs its own installed scripts, whatever directory it is started in.
  std::string root = installed_data_dir(relative);
  if (!root.empty()) return root;
  root = find_above(fs::current_path(), relative);
  if (!root.empty()) return root;
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error) root = find_above(executable.parent_path(), relative);
  if (root.empty()) {
    const std::string where = fs::current_path().string();
    throw Error("cannot find " + relative + " in this attnlab's installed tree (make install), " +
                where +
                ", the directories above it or those above the attnlab executable; run attnlab "
                "from its checkout or install it");
  }
  return root;
}

int run_python(const std::vector<std::string>& args, const std::string& pythonpath) {
  const std::string python = python_interpreter();
  std::vector<std::string> words = {python};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<std::string> env;
  if (!pythonpath.empty()) env = environment_with_pythonpath(pythonpath);
  std::vector<char*> argv = pointers(words);
  std::vector<char*> envp = pointers(env);
  // While the script runs this process ignores SIGINT and SIGQUIT, as system(3) does: a Ctrl-C at
  // the terminal reaches the script as well (one process group), the script decides how to end
  // (`report --watch` stops cleanly), and its exit status is returned once it has. The script
  // starts with their default actions (Python installs its KeyboardInterrupt handler only for a
  // SIGINT that is not ignored).
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction old_interrupt = {};
  struct sigaction old_quit = {};
  sigaction(SIGINT, &ignore, &old_interrupt);
  sigaction(SIGQUIT, &ignore, &old_quit);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGQUIT);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
  pid_t child = 0;
  const int failed = posix_spawnp(&child, python.c_str(), nullptr, &attributes, argv.data(),
                                  pythonpath.empty() ? environ : envp.data());
  posix_spawnattr_destroy(&attributes);
  int status = 0;
  int wait_error = 0;
  if (failed == 0) {
    while (waitpid(child, &status, 0) < 0) {
      if (errno != EINTR) {
        wait_error = errno;
        break;
      }
    }
  }
  sigaction(SIGINT, &old_interrupt, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (failed != 0) {
    throw Error("cannot run " + python + ": " + std::strerror(failed) +
                " (the interpreter is $ATTNLAB_PYTHON, else /usr/bin/python3, else python3 on "
                "PATH)");
  }
  CHECK(wait_error == 0) << "waiting for " << python << ": " << std::strerror(wait_error);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return kExitFailure;  // killed by a signal
}

}  // namespace attnlab::cli
