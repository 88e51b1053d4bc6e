#include "core/util/dir_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace

DirectoryLock::DirectoryLock(const std::string& dir) {
  const std::string path = dir + kLockFile;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  CHECK(fd_ >= 0) << "cannot open " << path << ": " << std::strerror(errno);
  struct flock lock = whole_file(F_WRLCK);
  if (::fcntl(fd_, F_SETLK, &lock) == 0) return;
  const int error = errno;
  const int64_t holder = directory_lock_holder(dir);
  ::close(fd_);
  fd_ = -1;
  CHECK(error != EACCES && error != EAGAIN)
      << dir << " is in use by another attnlab process (pid " << holder
      << "): one trainer per run directory; wait for it, or stop it first";
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
