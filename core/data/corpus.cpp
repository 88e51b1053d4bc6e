// Reading and validating line-aligned parallel text.
#include "core/data/corpus.h"

#include <filesystem>
#include <fstream>
#include <istream>
#include <string>

#include "core/util/check.h"

namespace attnlab {

namespace {

// Reads the next line (without its '\n') into `line`; false at the end of the input. A line
// longer than kMaxLineBytes, or an input longer than `max_total` bytes, is an Error naming
// `name`, the line and the limit, found before more than the limit is held in memory.
bool read_bounded_line(std::istream& in, std::string& line, const std::string& name,
                       int64_t line_number, int64_t max_total, int64_t& total) {
  line.clear();
  std::streambuf& buffer = *in.rdbuf();
  bool any = false;
  for (int c = buffer.sbumpc(); c != std::char_traits<char>::eof(); c = buffer.sbumpc()) {
    any = true;
    CHECK(++total <= max_total) << name << ": more than " << (max_total >> 20)
                                << " MiB of input (the limit of a text input to attnlab)";
    if (c == '\n') return true;
    CHECK(static_cast<int64_t>(line.size()) < kMaxLineBytes)
        << name << ":" << line_number << ": a line longer than " << (kMaxLineBytes >> 10)
        << " KiB (the limit of one segment; is this a text file?)";
    line.push_back(static_cast<char>(c));
  }
  in.setstate(std::ios::eofbit);
  return any;
}

void check_regular_file(const std::string& path) {
  std::error_code error;
  CHECK(std::filesystem::exists(path, error)) << "cannot open " << path << " (missing file)";
  CHECK(std::filesystem::is_regular_file(path, error))
      << path << " is not a regular file (a directory, a device or a pipe)";
}

}  // namespace

std::vector<std::string> read_text_lines(const std::string& path, EmptyLines empty) {
  check_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good()) << "cannot open " << path << " (missing file or no permission)";
  std::vector<std::string> lines;
  std::string line;
  int64_t total = 0;
  while (read_bounded_line(in, line, path, static_cast<int64_t>(lines.size()) + 1,
                           kMaxCorpusFileBytes, total)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const int64_t line_number = static_cast<int64_t>(lines.size()) + 1;
    const bool blank = line.find_first_not_of(" \t\v\f") == std::string::npos;
    CHECK(!blank || empty == EmptyLines::kSkipPairs)
        << path << ":" << line_number << ": empty line (every line must hold one segment)";
    if (blank) line.clear();
    const int64_t bad = find_invalid_utf8(line);
    CHECK(bad < 0) << path << ":" << line_number << ": invalid UTF-8 at byte " << bad + 1
                   << " of the line";
    lines.push_back(std::move(line));
  }
  CHECK(!in.bad()) << "error while reading " << path;
  CHECK(!lines.empty()) << path << ": the file is empty";
  return lines;
}

std::vector<std::string> read_bleu_lines(std::istream& in, const std::string& name) {
  std::vector<std::string> lines;
  std::string line;
  int64_t total = 0;
  while (read_bounded_line(in, line, name, static_cast<int64_t>(lines.size()) + 1,
                           kMaxBleuInputBytes, total)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const int64_t bad = find_invalid_utf8(line);
    CHECK(bad < 0) << name << ":" << lines.size() + 1 << ": invalid UTF-8 at byte " << bad + 1
                   << " of the line";
    lines.push_back(std::move(line));
  }
  CHECK(!in.bad()) << "error while reading " << name;
  CHECK(!lines.empty()) << name << " is empty: BLEU needs at least one line";
  return lines;
}

std::vector<std::string> read_bleu_lines(const std::string& path) {
  check_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good()) << "cannot open " << path << " (no permission?)";
  return read_bleu_lines(in, path);
}

ParallelText read_parallel_text(const std::string& src_path, const std::string& tgt_path,
                                EmptyLines empty) {
  ParallelText text;
  text.src_path = src_path;
  text.tgt_path = tgt_path;
  text.src = read_text_lines(src_path, empty);
  text.tgt = read_text_lines(tgt_path, empty);
  CHECK(text.src.size() == text.tgt.size())
      << "parallel files are not line-aligned: " << src_path << " has " << text.src.size()
      << " lines but " << tgt_path << " has " << text.tgt.size();
  size_t kept = 0;
  for (size_t i = 0; i < text.src.size(); ++i) {
    if (text.src[i].empty() || text.tgt[i].empty()) continue;
    if (kept != i) {  // a self-move would leave the string empty
      text.src[kept] = std::move(text.src[i]);
      text.tgt[kept] = std::move(text.tgt[i]);
    }
    ++kept;
  }
  text.empty_pairs_skipped = static_cast<int64_t>(text.src.size() - kept);
  text.src.resize(kept);
  text.tgt.resize(kept);
  CHECK(kept > 0) << src_path << " and " << tgt_path << " hold no pair with both sides non-empty";
  return text;
}

}  // namespace attnlab
