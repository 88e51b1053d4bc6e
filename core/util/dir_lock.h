// One process at a time per directory: a POSIX record lock on <dir>/.attnlab.lock, held for the
// process's whole life and released by the kernel when it exits, however it exits (kill -9
// included). A trainer holds its run directory's, `attnlab sweep` its sweep directory's. Others
// can ask who holds it without taking it, so `status` tells a run in progress from one whose
// process is gone, and a sweep does not start a second trainer on it.
#pragma once

#include <cstdint>
#include <string>

namespace attnlab {

class DirectoryLock {
 public:
  // Takes the lock of `dir` (which must exist) and writes "<pid> <host>" into the lock file.
  // When another process holds it: an Error naming the directory, that process's pid and host,
  // and `advice` (what one process per directory means here and what to do).
  explicit DirectoryLock(
      const std::string& dir,
      const std::string& advice = "one trainer per run directory; wait for it, or stop it first");
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

// The pid of the process holding dir's lock; 0 when none does (or there is no lock file), -1 when
// the file system cannot say (no record locks there). Never call it in the process that holds the
// lock: closing any descriptor of the file releases a POSIX record lock.
int64_t directory_lock_holder(const std::string& dir);

}  // namespace attnlab
