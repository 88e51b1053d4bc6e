// What the fuzz targets share: a scratch directory of their own and the fuzz input written into
// files there, because the program reads every one of these inputs from a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::fuzz {

// A directory made once per process (mkdtemp under $TMPDIR, else /dev/shm, else /tmp) and removed
// at exit.
// Every file a target reads or writes is inside it.
const std::filesystem::path& scratch_dir();

// Removes everything in scratch_dir() (the previous input's files).
void clear_scratch();

// A path in scratch_dir() that no earlier call returned: "<stem>-<n><extension>". HDF5 keeps a
// file it still has open under its path, so each input gets a file of its own.
std::filesystem::path fresh_path(const std::string& stem, const std::string& extension);

// Writes `bytes` to `path`, replacing the file.
void write_file(const std::filesystem::path& path, std::string_view bytes);

// The input as text.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits `bytes` at bytes 0xFF (which no UTF-8 text holds) into at most `max_parts` parts; the
// last part keeps any further 0xFF bytes.
std::vector<std::string_view> split_parts(std::string_view bytes, size_t max_parts);

// Inputs that start with "LONG" test a line limit instead: long_line returns one line of
// limit - 1, limit or limit + 1 bytes (the byte after the prefix picks which), made of the rest of
// the input mapped to letters (so that only its length can be wrong); nullopt for other inputs.
// A reader must keep a line of up to `limit` bytes and refuse a longer one naming the limit.
std::optional<std::string> long_line(std::string_view bytes, size_t limit);

}  // namespace attnlab::fuzz
