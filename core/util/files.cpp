#include "core/util/files.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/util/check.h"

namespace attnlab {
namespace {

// Forces the file's (or directory's) contents to disk, so that a rename is never seen before
// them.
void sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  CHECK(fd >= 0) << path << ": cannot open to sync: " << std::strerror(errno);
  const int status = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  CHECK(status == 0) << path << ": fsync failed: " << std::strerror(saved);
}

}  // namespace

void replace_file(const std::string& temporary, const std::string& path) {
  try {
    sync_path(temporary, false);
  } catch (const Error&) {
    std::remove(temporary.c_str());
    throw;
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) std::remove(temporary.c_str());
  CHECK(!error) << path << ": cannot rename " << temporary << " to it: " << error.message();
  const std::string directory = std::filesystem::path(path).parent_path().string();
  sync_path(directory.empty() ? "." : directory, true);
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    CHECK(out.good()) << "cannot write " << temporary << ": " << std::strerror(errno);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out.good()) {
      std::remove(temporary.c_str());
      CHECK(false) << "error while writing " << temporary << " (disk full?)";
    }
  }
  replace_file(temporary, path);
}

int64_t free_bytes(const std::string& path) {
  namespace fs = std::filesystem;
  // The nearest existing ancestor: a write into a missing directory fails by itself, naming it.
  std::error_code error;
  fs::path probe = fs::absolute(path);
  while (!fs::exists(probe, error) && probe.has_parent_path() && probe != probe.parent_path()) {
    probe = probe.parent_path();
  }
  struct statvfs stats {};
  CHECK(::statvfs(probe.c_str(), &stats) == 0)
      << probe.string()
      << ": cannot read the free space of its file system: " << std::strerror(errno);
  return static_cast<int64_t>(stats.f_bavail) * static_cast<int64_t>(stats.f_frsize);
}

void require_free_space(const std::string& path, int64_t needed, const std::string& what) {
  const int64_t free = free_bytes(path);
  if (free >= needed) return;
  constexpr int64_t kKiB = 1024;
  throw Error(path + ": not written: the file system has " + std::to_string(free / kKiB) +
              " KiB free, less than the " + std::to_string((needed + kKiB - 1) / kKiB) +
              " KiB that " + what +
              " needs with its reserve (a write cut short by a full disk would leave the file "
              "unreadable), so nothing was written and what the file held is intact. Free "
              "space, then rerun to resume");
}

}  // namespace attnlab
