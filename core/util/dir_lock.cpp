#include "core/util/dir_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/util/check.h"

namespace attnlab {
namespace {

constexpr const char* kLockFile = "/.attnlab.lock";

struct flock whole_file(short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 0;  // to the end of the file, however long
  return lock;
}

std::string this_host() {
  char host[256] = "?";
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

// "pid 123 on host node1": the holder's own record in the lock file, and the record lock's pid,
// which is the one to trust on this host (the text may be missing or stale for a moment: a holder
// that has not written it yet, or an older attnlab), but means nothing for a holder on another
// host of a shared file system.
std::string describe_holder(const std::string& path, int64_t lock_pid) {
  std::string written_pid;
  std::string host;
  std::ifstream in(path);
  in >> written_pid >> host;
  std::string pid = lock_pid > 0 ? std::to_string(lock_pid) : "unknown";
  if (!written_pid.empty() && (lock_pid <= 0 || (!host.empty() && host != this_host()))) {
    pid = written_pid;
  }
  return "pid " + pid + (host.empty() ? "" : " on host " + host);
}

}  // namespace

DirectoryLock::DirectoryLock(const std::string& dir, const std::string& advice) {
  const std::string path = dir + kLockFile;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  CHECK(fd_ >= 0) << "cannot open " << path << ": " << std::strerror(errno);
  struct flock lock = whole_file(F_WRLCK);
  if (::fcntl(fd_, F_SETLK, &lock) == 0) {
    // Who holds it, for the message of a second process (the record lock's pid means nothing on
    // another host of a shared file system). Best effort: the lock holds without it.
    const std::string holder = std::to_string(::getpid()) + " " + this_host() + "\n";
    if (::ftruncate(fd_, 0) == 0) {
      [[maybe_unused]] const ssize_t written = ::pwrite(fd_, holder.data(), holder.size(), 0);
    }
    return;
  }
  const int error = errno;
  const int64_t holder = directory_lock_holder(dir);
  ::close(fd_);
  fd_ = -1;
  CHECK(error != EACCES && error != EAGAIN) << dir << " is in use by another attnlab process ("
                                            << describe_holder(path, holder) << "): " << advice;
  CHECK(false) << "cannot lock " << path << ": " << std::strerror(error);
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the record lock
}

int64_t directory_lock_holder(const std::string& dir) {
  const std::string path = dir + kLockFile;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock probe = whole_file(F_WRLCK);
  const int status = ::fcntl(fd, F_GETLK, &probe);
  ::close(fd);
  if (status != 0) return -1;
  return probe.l_type == F_UNLCK ? 0 : static_cast<int64_t>(probe.l_pid);
}

}  // namespace attnlab
