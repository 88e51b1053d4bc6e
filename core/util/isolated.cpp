#include "core/util/isolated.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <new>
#include <thread>

#include "core/util/check.h"

namespace attnlab {
namespace {

// Writes the whole text (the parent drains the pipe meanwhile) and ignores failures: the child
// exits next, and a parent that stopped reading has stopped waiting for it.
void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    done += static_cast<size_t>(wrote);
  }
}

constexpr int kChildError = 3;
constexpr int kChildOutOfMemory = 4;
constexpr int kChildOtherException = 5;

}  // namespace

std::string run_in_child_for_bytes(const std::function<std::string()>& body,
                                   const std::string& what, double timeout_seconds) {
  int channel[2];
  CHECK(::pipe(channel) == 0) << what << ": cannot create a pipe: " << std::strerror(errno);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(channel[0]);
    ::close(channel[1]);
    CHECK(false) << what << ": cannot fork to read it safely: " << std::strerror(errno);
  }
  if (child == 0) {
    ::close(channel[0]);
    // A crash is the child's expected way to fail: it dies of the signal (which the parent
    // reports) rather than running a handler inherited from the parent or a sanitizer.
    for (int crash : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(crash, SIG_DFL);
    int status = 0;
    try {
      write_all(channel[1], body());
    } catch (const Error& error) {
      write_all(channel[1], error.what());
      status = kChildError;
    } catch (const std::bad_alloc&) {
      status = kChildOutOfMemory;
    } catch (...) {
      status = kChildOtherException;
    }
    ::close(channel[1]);
    // _exit, not exit: the parent's atexit handlers and buffered streams are not the child's.
    ::_exit(status);
  }
  ::close(channel[1]);
  // The pipe is drained while the child runs (a result may be larger than the pipe's buffer)
  // until the child closes it; then the child is reaped. Both within the deadline.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(timeout_seconds, 0.001));
  auto stop = [&] {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ::close(channel[0]);
    throw Error(what + ": reading it did not finish in " +
                std::to_string(static_cast<int>(timeout_seconds)) +
                " s (a damaged file that makes the parser loop?); the reader was stopped");
  };
  auto milliseconds_left = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  };
  std::string output;
  char buffer[1 << 16];
  while (true) {
    pollfd readable{channel[0], POLLIN, 0};
    const int ready = ::poll(&readable, 1, milliseconds_left());
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) stop();
    const ssize_t got = ::read(channel[0], buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the child closed its end: it is exiting
    output.append(buffer, static_cast<size_t>(got));
  }
  ::close(channel[0]);
  int status = 0;
  auto pause = std::chrono::microseconds(200);
  while (true) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    CHECK(done == 0 || errno == EINTR) << what << ": lost track of the process reading it";
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
  if (WIFSIGNALED(status)) {
    throw Error(what + ": reading it crashed the reader (signal " +
                std::to_string(WTERMSIG(status)) + ", " + strsignal(WTERMSIG(status)) +
                "): the file is damaged");
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0) return output;
  if (code == kChildError) throw Error(output);
  if (code == kChildOutOfMemory) {
    throw Error(what + ": reading it ran out of memory (a damaged file claiming huge sizes?)");
  }
  throw Error(what + ": reading it failed (exit code " + std::to_string(code) + ")");
}

void run_in_child(const std::function<void()>& body, const std::string& what,
                  double timeout_seconds) {
  run_in_child_for_bytes(
      [&] {
        body();
        return std::string();
      },
      what, timeout_seconds);
}

}  // namespace attnlab
