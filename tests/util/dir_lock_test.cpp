// DirectoryLock: a second process on a locked directory is refused at once, with the holder's
// pid and host and the advice the lock's owner gives; the lock goes with the holder.
#include "core/util/dir_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/util/check.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

fs::path fresh_directory(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A child process that takes the lock and waits until told to go (a byte on `release`); the
// parent learns it holds the lock from a byte on `held`. No timing: each side waits on a pipe.
struct LockHolder {
  pid_t pid = -1;
  int held = -1;
  int release = -1;

  explicit LockHolder(const fs::path& dir) {
    int held_pipe[2], release_pipe[2];
    if (::pipe(held_pipe) != 0 || ::pipe(release_pipe) != 0) std::abort();
    pid = ::fork();
    if (pid == 0) {
      ::close(held_pipe[0]);
      ::close(release_pipe[1]);
      {
        const DirectoryLock lock(dir.string(), "the holder's advice");
        char byte = 'h';
        if (::write(held_pipe[1], &byte, 1) != 1) ::_exit(2);
        if (::read(release_pipe[0], &byte, 1) < 0) ::_exit(3);
      }
      ::_exit(0);
    }
    ::close(held_pipe[1]);
    ::close(release_pipe[0]);
    held = held_pipe[0];
    release = release_pipe[1];
    char byte = 0;
    if (::read(held, &byte, 1) != 1) std::abort();
  }
  int finish() {
    char byte = 'r';
    if (::write(release, &byte, 1) != 1) return -1;
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(held);
    ::close(release);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

TEST(DirectoryLock, ASecondProcessIsRefusedWithTheHoldersPidHostAndAdvice) {
  const fs::path dir = fresh_directory("dir-lock-held");
  LockHolder holder(dir);
  char host[256] = "?";
  ::gethostname(host, sizeof(host) - 1);
  try {
    const DirectoryLock second(dir.string(), "the holder's advice");
    ADD_FAILURE() << "a second lock of a held directory was granted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(dir.string() + " is in use by another attnlab process (pid " +
                           std::to_string(holder.pid) + " on host " + host + ")"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("the holder's advice"), std::string::npos) << message;
  }
  EXPECT_EQ(directory_lock_holder(dir.string()), holder.pid);
  EXPECT_EQ(holder.finish(), 0);
  // Released with its holder: the directory can be taken now.
  EXPECT_EQ(directory_lock_holder(dir.string()), 0);
  EXPECT_NO_THROW(DirectoryLock(dir.string()));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnlab
