// Parallel corpus: line-aligned source and target text files (train.en / train.es, or any
// train.src / train.tgt pair), read whole and checked before anything trains on them.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/util/utf8.h"  // find_invalid_utf8, for the callers that check lines

namespace attnlab {

struct ParallelText {
  std::string src_path, tgt_path;
  std::vector<std::string> src;     // one segment per line, without the newline
  std::vector<std::string> tgt;     // same length as src
  int64_t empty_pairs_skipped = 0;  // pairs with an empty side left out (EmptyLines::kSkipPairs)
};

// What an empty (or all-whitespace) line means: an error (dev and test sets, whose lines must
// match hypotheses one to one), or, for training data, a pair to leave out and count, as real
// corpora hold some.
enum class EmptyLines { kRefuse, kSkipPairs };

// Limits of the text readers below, so that a device, an endless pipe or a file without newlines
// is an error naming the limit rather than memory that grows until the process is killed: one
// line (a segment) at most 1 MiB; a corpus file at most 64 GiB (WMT14 en-de is 1.4 GB); a BLEU
// input (references or hypotheses, from a file or stdin) at most 1 GiB.
inline constexpr int64_t kMaxLineBytes = int64_t{1} << 20;
inline constexpr int64_t kMaxCorpusFileBytes = int64_t{64} << 30;
inline constexpr int64_t kMaxBleuInputBytes = int64_t{1} << 30;

// The lines of a UTF-8 text file ('\n' or "\r\n" endings; a missing final newline is fine).
// Throws Error naming the file and the 1-based line for: a missing, unreadable or not regular
// file, an empty (or all-whitespace) line, invalid UTF-8, a line or file over the limits above.
// An empty file is an error too.
std::vector<std::string> read_text_lines(const std::string& path,
                                         EmptyLines empty = EmptyLines::kRefuse);

// Both sides of a parallel corpus; also an Error when the line counts differ (naming both files
// and both counts).
ParallelText read_parallel_text(const std::string& src_path, const std::string& tgt_path,
                                EmptyLines empty = EmptyLines::kRefuse);

// The lines of a BLEU input (`attnlab bleu`'s references and hypotheses), checked as sacreBLEU
// and read_text_lines check them: valid UTF-8 (an Error names `name` and the 1-based line), and at
// least one line, within the limits above. Empty lines are kept (an empty hypothesis is a valid,
// poor translation).
std::vector<std::string> read_bleu_lines(std::istream& in, const std::string& name);
// The same for the file at `path`; also an Error when it is not a regular file or cannot be opened.
std::vector<std::string> read_bleu_lines(const std::string& path);

}  // namespace attnlab
