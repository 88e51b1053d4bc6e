#include "core/util/installed.h"

#include <filesystem>

namespace attnlab {

std::string installed_data_dir(const std::string& relative) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (error) return "";
  // ATTNLAB_DATA_FROM_BIN: the data directory relative to the binary directory, as the install
  // rules lay them out (../share/attnlab by default).
  const fs::path data = (executable.parent_path() / ATTNLAB_DATA_FROM_BIN).lexically_normal();
  return fs::is_regular_file(data / relative, error) ? data.string() : std::string();
}

}  // namespace attnlab
