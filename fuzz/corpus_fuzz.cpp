// Corpus text files (data.train/dev/test of an experiment): the input, split at the first byte
// 0xFF into a source and a target file (no 0xFF: both the same), read with read_text_lines and
// read_parallel_text under both empty-line rules, as the training and evaluation data sources do.
//
// Inputs starting with "LONG" check the stated line limit (kMaxLineBytes, docs/fuzzing.md): a
// line of up to the limit is read back whole, a longer one is an Error naming the limit.
//
// Beyond crashes, find_invalid_utf8 is checked against a plain decoder of RFC 3629 UTF-8 on the
// whole input (0xFF bytes included): a disagreement is a finding.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/corpus.h"
#include "core/util/check.h"
#include "fuzz/fuzz_common.h"

namespace {

using attnlab::EmptyLines;
using attnlab::Error;
namespace fuzz = attnlab::fuzz;

// Offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629, Table 3 of
// Unicode's chapter 3: the exact second-byte ranges), or -1.
int64_t reference_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  auto in = [](unsigned char byte, unsigned lo, unsigned hi) { return byte >= lo && byte <= hi; };
  for (size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    size_t length = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (b <= 0x7F) {
      length = 1;
    } else if (in(b, 0xC2, 0xDF)) {
      length = 2;
    } else if (b == 0xE0) {
      length = 3, lo = 0xA0;
    } else if (in(b, 0xE1, 0xEC) || in(b, 0xEE, 0xEF)) {
      length = 3;
    } else if (b == 0xED) {
      length = 3, hi = 0x9F;
    } else if (b == 0xF0) {
      length = 4, lo = 0x90;
    } else if (in(b, 0xF1, 0xF3)) {
      length = 4;
    } else if (b == 0xF4) {
      length = 4, hi = 0x8F;
    } else {
      return static_cast<int64_t>(i);
    }
    if (i + length > n) return static_cast<int64_t>(i);
    if (length > 1 && !in(s[i + 1], lo, hi)) return static_cast<int64_t>(i);
    for (size_t k = 2; k < length; ++k) {
      if (!in(s[i + k], 0x80, 0xBF)) return static_cast<int64_t>(i);
    }
    i += length;
  }
  return -1;
}

void check_line_limit(const std::string& line) {
  const std::string path = (fuzz::scratch_dir() / "long.txt").string();
  fuzz::write_file(path, line + "\n");
  try {
    const std::vector<std::string> lines = attnlab::read_text_lines(path);
    if (static_cast<int64_t>(line.size()) > attnlab::kMaxLineBytes) {
      std::fprintf(stderr, "a line of %zu bytes was read, over the limit\n", line.size());
      __builtin_trap();
    }
    if (lines.size() != 1 || lines[0] != line) __builtin_trap();
  } catch (const Error& error) {
    if (static_cast<int64_t>(line.size()) <= attnlab::kMaxLineBytes ||
        std::string(error.what()).find("a line longer than 1024 KiB") == std::string::npos) {
      std::fprintf(stderr, "line of %zu bytes: %s\n", line.size(), error.what());
      __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = fuzz::as_text(data, size);
  if (const auto line = fuzz::long_line(bytes, static_cast<size_t>(attnlab::kMaxLineBytes))) {
    fuzz::clear_scratch();
    check_line_limit(*line);
    return 0;
  }
  const int64_t ours = attnlab::find_invalid_utf8(std::string(bytes));
  const int64_t reference = reference_invalid_utf8(bytes);
  if (ours != reference) {
    std::fprintf(stderr, "find_invalid_utf8 says %lld, the reference decoder %lld\n",
                 static_cast<long long>(ours), static_cast<long long>(reference));
    __builtin_trap();
  }

  fuzz::clear_scratch();
  const auto parts = fuzz::split_parts(bytes, 2);
  const std::string src = (fuzz::scratch_dir() / "train.src").string();
  const std::string tgt = (fuzz::scratch_dir() / "train.tgt").string();
  fuzz::write_file(src, parts.front());
  fuzz::write_file(tgt, parts.back());
  for (const EmptyLines empty : {EmptyLines::kRefuse, EmptyLines::kSkipPairs}) {
    try {
      (void)attnlab::read_text_lines(src, empty);
    } catch (const Error&) {
    }
    try {
      const attnlab::ParallelText text = attnlab::read_parallel_text(src, tgt, empty);
      if (text.src.size() != text.tgt.size() || text.src.empty()) __builtin_trap();
    } catch (const Error&) {
    }
  }
  return 0;
}
