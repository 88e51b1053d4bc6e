// BLEU inputs, as `attnlab bleu REF [HYP] [-r REF2] [--tokenize T] [-lc]` reads and scores them:
// read_bleu_lines on a reference file and on the hypotheses as a stream (standard input), then,
// when the line counts match, corpus_bleu with the options the first byte picks (its low two bits
// the tokenizer: 13a, char, none, intl; the next bit -lc), the score's text and the signature.
// After the first byte the input is split at bytes 0xFF into the reference, the hypotheses
// (absent: the reference itself) and an optional second reference.
//
// Beyond crashes, the score must be a number from 0 to 100.
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "core/data/corpus.h"
#include "core/metrics/bleu.h"
#include "core/util/check.h"
#include "fuzz/fuzz_common.h"

namespace {

using attnlab::Error;
namespace fuzz = attnlab::fuzz;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const attnlab::BleuTokenizer tokenizers[] = {
      attnlab::BleuTokenizer::k13a, attnlab::BleuTokenizer::kChar, attnlab::BleuTokenizer::kNone,
      attnlab::BleuTokenizer::kIntl};
  attnlab::BleuOptions options;
  options.tokenizer = tokenizers[data[0] & 3];
  options.lowercase = (data[0] & 4) != 0;
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
  return 0;
}
