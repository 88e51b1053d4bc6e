// Finding the checkout's Python scripts and running them with the project's interpreter.
#include "core/app/python.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/app/cli.h"
#include "core/util/check.h"

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
  std::string root = find_above(fs::current_path(), relative);
  if (!root.empty()) return root;
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error) root = find_above(executable.parent_path(), relative);
  if (root.empty()) {
    throw Error("cannot find " + relative + " in " + fs::current_path().string() +
                ", the directories above it or those above the attnlab executable; run attnlab "
                "from its checkout");
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
  pid_t child = 0;
  const int failed = posix_spawnp(&child, python.c_str(), nullptr, nullptr, argv.data(),
                                  pythonpath.empty() ? environ : envp.data());
  if (failed != 0) {
    throw Error("cannot run " + python + ": " + std::strerror(failed) +
                " (the interpreter is $ATTNLAB_PYTHON, else /usr/bin/python3, else python3 on "
                "PATH)");
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    CHECK(errno == EINTR) << "waiting for " << python << ": " << std::strerror(errno);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return kExitFailure;  // killed by a signal
}

}  // namespace attnlab::cli
