// One process at a time per run directory: a POSIX record lock on <dir>/.attnlab.lock, held by
// the trainer for its whole life and released by the kernel when it exits, however it exits
// (kill -9 included). Others can ask who holds it without taking it, so `status` tells a run in
// progress from one whose process is gone, and a sweep does not start a second trainer on it.
#pragma once

#include <cstdint>
#include <string>

namespace attnlab {

class DirectoryLock {
 public:
  // Takes the lock of `dir` (which must exist); Error naming the directory and the pid that
  // holds it when another process does.
  explicit DirectoryLock(const std::string& dir);
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
