// fork/exec with captured output, timeouts and logged, detached runs.
#include "core/cluster/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/util/check.h"
#include "core/util/exit_code.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace attnlab::cluster {
namespace {

// argv and envp as the NULL-terminated arrays execve takes, built before fork: after fork a child
// of a threaded process may only call async-signal-safe functions.
struct ExecArgs {
  std::vector<std::string> words;
  std::vector<std::string> env_entries;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string path;

  ExecArgs(const std::vector<std::string>& command, const Environment& env) : words(command) {
    CHECK(!command.empty()) << "an empty command";
    path = find_program(command[0]);
    std::map<std::string, std::string> merged;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string text = *entry;
      const size_t equals = text.find('=');
      if (equals != std::string::npos) merged[text.substr(0, equals)] = text.substr(equals + 1);
    }
    for (const auto& [name, value] : env) merged[name] = value;
    for (const auto& [name, value] : merged) env_entries.push_back(name + "=" += value);
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    for (std::string& entry : env_entries) envp.push_back(entry.data());
    envp.push_back(nullptr);
  }
};

// In the child: default signal mask, then exec; kExitCannotStart if exec fails.
[[noreturn]] void exec_child(const ExecArgs& args) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (!args.path.empty()) execve(args.path.c_str(), args.argv.data(), args.envp.data());
  _exit(kExitCannotStart);
}

}  // namespace

std::string find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    std::string candidate = dir + "/";
    candidate += program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

CommandResult run_command(const std::vector<std::string>& argv, const std::string& cwd,
                          double timeout_seconds) {
  const ExecArgs args(argv, {});
  CommandResult result;
  if (args.path.empty()) {
    result.exit_code = kExitCannotStart;
    result.err = argv[0] + ": command not found";
    return result;
  }
  int out_pipe[2];
  int err_pipe[2];
  CHECK(pipe2(out_pipe, O_CLOEXEC) == 0 && pipe2(err_pipe, O_CLOEXEC) == 0)
      << "pipe: " << std::strerror(errno);
  const pid_t pid = fork();
  CHECK(pid >= 0) << "fork: " << std::strerror(errno);
  if (pid == 0) {
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(kExitCannotStart);
    exec_child(args);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    const int ready = poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    CHECK(ready >= 0) << "poll: " << std::strerror(errno);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t count = read(fds[i].fd, buffer, sizeof(buffer));
      if (count > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(count));
      } else if (count == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = exit_code_of(status);
  return result;
}

pid_t spawn_logged(const std::vector<std::string>& argv, const Environment& env,
                   const std::string& log_path) {
  const ExecArgs args(argv, env);
  CHECK(!args.path.empty()) << argv[0] << ": command not found in PATH";
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  CHECK(log_fd >= 0) << "cannot open " << log_path << ": " << std::strerror(errno);
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    CHECK(false) << "fork: " << std::strerror(errno);
  }
  if (pid == 0) {
    setpgid(0, 0);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    exec_child(args);
  }
  setpgid(pid, pid);  // also here, so that the group exists before the child gets to it
  close(log_fd);
  return pid;
}

}  // namespace attnlab::cluster
