// BLEU and chrF inputs, as `attnlab bleu REF [HYP] [-r REF2] [--tokenize T] [-lc] --metrics
// bleu,chrf` reads and scores them: read_bleu_lines on a reference file and on the hypotheses as a
// stream (standard input), then, when the line counts match, corpus_bleu with the options the
// first byte picks (its low two bits the tokenizer: 13a, char, none, intl; the next bit -lc), the
// score's text and the signature, and corpus chrF (the first byte's bit 3: chrF++, bit 4:
// --chrf-lowercase, bit 5: --chrf-whitespace). After the first byte the input is split at bytes
// 0xFF into the reference, the hypotheses (absent: the reference itself) and an optional second
// reference.
//
// Inputs starting with "LONG" check the stated line limit instead (kMaxLineBytes, docs/fuzzing.md)
// on a reference file and on standard input: a line of up to the limit is read back whole, a
// longer one is an Error naming the limit.
//
// Beyond crashes, both scores must be numbers from 0 to 100.
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "core/data/corpus.h"
#include "core/metrics/bleu.h"
#include "core/metrics/chrf.h"
#include "core/util/check.h"
#include "fuzz/fuzz_common.h"

namespace {

using attnlab::Error;
namespace fuzz = attnlab::fuzz;

// Both readers of `attnlab bleu` on one line: the file and the stream.
void check_line_limit(const std::string& line) {
  const bool over = static_cast<int64_t>(line.size()) > attnlab::kMaxLineBytes;
  const std::string path = (fuzz::scratch_dir() / "long.txt").string();
  fuzz::write_file(path, line + "\n");
  for (const bool from_stream : {false, true}) {
    try {
      std::istringstream in(line + "\n");
      const std::vector<std::string> lines = from_stream
                                                 ? attnlab::read_bleu_lines(in, "standard input")
                                                 : attnlab::read_bleu_lines(path);
      if (over || lines.size() != 1 || lines[0] != line) {
        std::fprintf(stderr, "a line of %zu bytes was read wrongly or over the limit\n",
                     line.size());
        __builtin_trap();
      }
    } catch (const Error& error) {
      if (!over ||
          std::string(error.what()).find("a line longer than 1024 KiB") == std::string::npos) {
        std::fprintf(stderr, "line of %zu bytes: %s\n", line.size(), error.what());
        __builtin_trap();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (const auto line =
          fuzz::long_line(fuzz::as_text(data, size), static_cast<size_t>(attnlab::kMaxLineBytes))) {
    fuzz::clear_scratch();
    check_line_limit(*line);
    return 0;
  }
  const attnlab::BleuTokenizer tokenizers[] = {
      attnlab::BleuTokenizer::k13a, attnlab::BleuTokenizer::kChar, attnlab::BleuTokenizer::kNone,
      attnlab::BleuTokenizer::kIntl};
  attnlab::BleuOptions options;
  options.tokenizer = tokenizers[data[0] & 3];
  options.lowercase = (data[0] & 4) != 0;
  attnlab::ChrfOptions chrf;
  chrf.word_order = (data[0] & 8) != 0 ? 2 : 0;
  chrf.lowercase = (data[0] & 16) != 0;
  chrf.whitespace = (data[0] & 32) != 0;
  const auto parts = fuzz::split_parts(fuzz::as_text(data + 1, size - 1), 3);

  fuzz::clear_scratch();
  std::vector<std::vector<std::string>> references;
  try {
    const std::string ref = (fuzz::scratch_dir() / "ref.txt").string();
    fuzz::write_file(ref, parts[0]);
    references.push_back(attnlab::read_bleu_lines(ref));
    if (parts.size() > 2) {
      const std::string ref2 = (fuzz::scratch_dir() / "ref2.txt").string();
      fuzz::write_file(ref2, parts[2]);
      references.push_back(attnlab::read_bleu_lines(ref2));
    }
  } catch (const Error&) {
    return 0;
  }
  std::vector<std::string> hypotheses;
  try {
    std::istringstream in(std::string(parts.size() > 1 ? parts[1] : parts[0]));
    hypotheses = attnlab::read_bleu_lines(in, "standard input");
  } catch (const Error&) {
    return 0;
  }
  for (const std::vector<std::string>& reference : references) {
    if (reference.size() != hypotheses.size()) return 0;  // `attnlab bleu` stops here
  }
  try {
    const attnlab::BleuScore bleu = attnlab::corpus_bleu(hypotheses, references, options);
    (void)bleu.format();
    (void)attnlab::bleu_signature(references.size(), options);
    if (!(bleu.score >= 0.0 && bleu.score <= 100.0 + 1e-9)) {
      std::fprintf(stderr, "BLEU score %g is not in [0, 100]\n", bleu.score);
      __builtin_trap();
    }
  } catch (const Error&) {
  }
  std::vector<int64_t> totals(3 * static_cast<size_t>(chrf.orders()), 0);
  std::vector<std::string> line(references.size());
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    for (size_t k = 0; k < references.size(); ++k) line[k] = references[k][i];
    const std::vector<int64_t> row = attnlab::chrf_segment_stats(hypotheses[i], line, chrf);
    for (size_t c = 0; c < totals.size(); ++c) totals[c] += row[c];
  }
  const double chrf_score = attnlab::chrf_score(totals, chrf);
  (void)attnlab::chrf_signature(references.size(), chrf);
  if (!(chrf_score >= 0.0 && chrf_score <= 100.0 + 1e-9)) {
    std::fprintf(stderr, "chrF score %g is not in [0, 100]\n", chrf_score);
    __builtin_trap();
  }
  return 0;
}
