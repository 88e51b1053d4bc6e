#include "core/util/isolated.h"

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

// Writes the whole message (or as much as the pipe takes) and ignores failures: the child exits
// next, and the parent reports a failure without a message as such.
void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote <= 0) return;
    done += static_cast<size_t>(wrote);
  }
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got > 0) {
      text.append(buffer, static_cast<size_t>(got));
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      return text;
    }
  }
}

constexpr int kChildError = 3;
constexpr int kChildOutOfMemory = 4;
constexpr int kChildOtherException = 5;

}  // namespace

void run_in_child(const std::function<void()>& body, const std::string& what,
                  double timeout_seconds) {
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
      body();
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
  // The pipe is read after the child ended: an Error message is short (well below a pipe's 64 KiB
  // buffer), so the child never blocks on writing it.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(timeout_seconds, 0.001));
  auto pause = std::chrono::microseconds(200);
  int status = 0;
  bool ended = false;
  while (!ended) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) {
      ended = true;
    } else if (done < 0 && errno != EINTR) {
      break;
    } else if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      ::close(channel[0]);
      throw Error(what + ": reading it did not finish in " +
                  std::to_string(static_cast<int>(timeout_seconds)) +
                  " s (a damaged file that makes the parser loop?); the reader was stopped");
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
  }
  const std::string message = read_all(channel[0]);
  ::close(channel[0]);
  CHECK(ended) << what << ": lost track of the process reading it";
  if (WIFSIGNALED(status)) {
    throw Error(what + ": reading it crashed the reader (signal " +
                std::to_string(WTERMSIG(status)) + ", " + strsignal(WTERMSIG(status)) +
                "): the file is damaged");
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0) return;
  if (code == kChildError) throw Error(message);
  if (code == kChildOutOfMemory) {
    throw Error(what + ": reading it ran out of memory (a damaged file claiming huge sizes?)");
  }
  throw Error(what + ": reading it failed (exit code " + std::to_string(code) + ")");
}

}  // namespace attnlab
