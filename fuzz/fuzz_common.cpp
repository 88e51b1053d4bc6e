// Scratch directory and input files of the fuzz targets.
#include "fuzz/fuzz_common.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <system_error>

#include "core/util/check.h"

namespace attnlab::fuzz {
namespace fs = std::filesystem;
namespace {

// $TMPDIR when set; else /dev/shm when there is one, since the readers write and sync files
// (a sweep record is synced twice per append) and a memory file system makes that cheap.
fs::path temporary_root() {
  const char* tmp = std::getenv("TMPDIR");
  if (tmp != nullptr && *tmp != '\0') return tmp;
  if (::access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  return "/tmp";
}

fs::path make_scratch_dir() {
  std::string pattern = (temporary_root() / "attnlab-fuzz-XXXXXX").string();
  CHECK(mkdtemp(pattern.data()) != nullptr) << "cannot create a directory from " << pattern;
  return pattern;
}

void remove_scratch_dir() {
  std::error_code error;
  fs::remove_all(scratch_dir(), error);
}

}  // namespace

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path made = make_scratch_dir();
    std::atexit(remove_scratch_dir);
    return made;
  }();
  return dir;
}

void clear_scratch() {
  for (const fs::directory_entry& entry : fs::directory_iterator(scratch_dir())) {
    fs::remove_all(entry.path());
  }
}

fs::path fresh_path(const std::string& stem, const std::string& extension) {
  static uint64_t counter = 0;
  return scratch_dir() / (stem + "-" + std::to_string(++counter) + extension);
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  CHECK(out.good()) << "cannot write " << path.string();
}

std::vector<std::string_view> split_parts(std::string_view bytes, size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = bytes.find('\xFF');
    if (at == std::string_view::npos) break;
    parts.push_back(bytes.substr(0, at));
    bytes.remove_prefix(at + 1);
  }
  parts.push_back(bytes);
  return parts;
}

std::optional<std::string> long_line(std::string_view bytes, size_t limit) {
  constexpr std::string_view kPrefix = "LONG";
  if (bytes.substr(0, kPrefix.size()) != kPrefix || bytes.size() <= kPrefix.size()) {
    return std::nullopt;
  }
  const size_t length = limit - 1 + static_cast<unsigned char>(bytes[kPrefix.size()]) % 3;
  std::string_view pattern = bytes.substr(kPrefix.size() + 1);
  if (pattern.empty()) pattern = "a";
  std::string line(length, 'a');
  for (size_t i = 0; i < length; ++i) {
    line[i] = static_cast<char>('a' + static_cast<unsigned char>(pattern[i % pattern.size()]) % 26);
  }
  return line;
}

}  // namespace attnlab::fuzz
