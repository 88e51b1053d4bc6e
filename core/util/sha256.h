// SHA-256 of bytes and files: the checksum recorded for tokenizer models and data files, the same
// value `sha256sum` prints, so a run log can be checked against the data card by hand.
#pragma once

#include <string>

namespace attnlab {

// Lowercase hex digest of `bytes`.
std::string sha256_hex(const std::string& bytes);

// Lowercase hex digest of the file's contents; throws Error naming the file if it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace attnlab
