#include "core/util/files.h"

#include <fcntl.h>
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

}  // namespace attnlab
