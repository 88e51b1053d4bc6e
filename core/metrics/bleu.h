// Corpus BLEU with sacreBLEU's rules (sacreBLEU 2.x `BLEU()`): the 13a tokenizer by default (or
// `intl` / `char` / `none`), case-sensitive unless lowercased (`-lc`), one or more references,
// max n-gram order 4, 'exp' smoothing, effective order off.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

inline constexpr int kBleuMaxOrder = 4;

// sacreBLEU's "13a" tokenizer (mteval-v13a.pl): unescapes &quot; &amp; &lt; &gt;, splits
// punctuation and symbols off, splits '.' and ',' unless between digits and '-' after a digit,
// then splits on whitespace.
std::vector<std::string> tokenize_13a(const std::string& line);

// sacreBLEU's "intl" tokenizer (TokenizerV14International), with Unicode general categories
// from ICU: punctuation (P*) is split from a neighbour that is not a number (N*), first from the
// character before it, then from the one after it, each a left-to-right pass of non-overlapping
// two-character matches like Python's re.sub; every symbol (S*) is split off; then the line
// splits on Unicode whitespace.
std::vector<std::string> tokenize_intl(const std::string& line);

// Python's str.lower() (sacreBLEU's -lc): the full Unicode lowercase mapping of the root locale,
// through ICU ("İ" -> "i̇", a final "Σ" -> "ς"). Ill-formed UTF-8 becomes U+FFFD.
std::string bleu_lowercase(const std::string& line);

// sacreBLEU's tokenizers: 13a, intl (above), char (every character but whitespace a token) and
// none (whitespace splits).
enum class BleuTokenizer { k13a, kChar, kNone, kIntl };
BleuTokenizer parse_bleu_tokenizer(const std::string& name);  // Error naming the choices
const char* to_string(BleuTokenizer tokenizer);
std::vector<std::string> bleu_tokenize(const std::string& line, BleuTokenizer tokenizer);

// What sacreBLEU's BLEU(tokenize=..., lowercase=...) chooses. As sacreBLEU does, each segment is
// lowercased (if asked), stripped of trailing whitespace, then tokenized.
struct BleuOptions {
  BleuTokenizer tokenizer = BleuTokenizer::k13a;
  bool lowercase = false;
};
std::vector<std::string> bleu_tokenize(const std::string& line, const BleuOptions& options);

// Sufficient statistics of a corpus: summed over sentences, so corpora can be merged.
struct BleuStats {
  std::array<int64_t, kBleuMaxOrder> matches{};  // clipped n-gram matches, n = 1..4
  std::array<int64_t, kBleuMaxOrder> totals{};   // hypothesis n-grams, n = 1..4
  int64_t hyp_length = 0;
  int64_t ref_length = 0;
  BleuStats& operator+=(const BleuStats& other);
};

// The statistics as one row of counts in sacreBLEU's order, which the paired tests resample
// (significance.h): hyp_len, ref_len, matches for n = 1..4, totals for n = 1..4.
inline constexpr size_t kBleuStatsWidth = 2 + 2 * kBleuMaxOrder;
std::vector<int64_t> bleu_stats_row(const BleuStats& stats);
BleuStats bleu_stats_of_row(const std::vector<int64_t>& row);

BleuStats sentence_bleu_stats(const std::string& hypothesis, const std::string& reference);
// Several references, as sacreBLEU counts them: each n-gram clipped by its largest count in any
// reference; the reference length is the one closest to the hypothesis (the shorter on a tie).
BleuStats sentence_bleu_stats(const std::string& hypothesis,
                              const std::vector<std::string>& references, BleuTokenizer tokenizer);
BleuStats sentence_bleu_stats(const std::string& hypothesis,
                              const std::vector<std::string>& references,
                              const BleuOptions& options);

struct BleuScore {
  double score = 0.0;                              // 0..100
  std::array<double, kBleuMaxOrder> precisions{};  // percent, smoothed as sacreBLEU reports them
  double brevity_penalty = 0.0;
  double ratio = 0.0;  // hyp_length / ref_length
  BleuStats stats;
  // "BLEU = 34.21 65.3/40.1/27.0/19.3 (BP = 1.000 ratio = 1.012 hyp_len = 123 ref_len = 121)"
  std::string format() const;
};

// score = BP * exp(mean_n log p_n), BP = exp(1 - r/c) when c < r else 1. A precision with no
// match is smoothed to 100 / (2^k * total_n) for the k-th such order ('exp'); no match at any
// order scores 0; an order with no hypothesis n-gram gives log 0 (score 0), as sacreBLEU does.
BleuScore compute_bleu(const BleuStats& stats);

// Corpus BLEU of line-aligned hypotheses and references (Error if the counts differ).
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::string>& references);

// references[k][i]: line i of reference set k (every set as long as the hypotheses).
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references,
                      BleuTokenizer tokenizer);
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references,
                      const BleuOptions& options);

// The version field of attnlab's signatures: sacreBLEU 2.x's rules, as implemented here.
inline constexpr char kSignatureVersion[] = "2.x-attnlab";

// The signature that says which BLEU this is, in sacreBLEU's format (case:lc when lowercased);
// `test_fields` ("bs:1000|seed:12345|" of a paired test) go after nrefs, as sacreBLEU puts them.
std::string bleu_signature();
std::string bleu_signature(size_t references, BleuTokenizer tokenizer);
std::string bleu_signature(size_t references, const BleuOptions& options,
                           const std::string& test_fields = "");

}  // namespace attnlab
