// chrF and chrF++: n-gram counting and the F score of sacreBLEU's metrics/chrf.py.
#include "core/metrics/chrf.h"

#include <algorithm>
#include <unordered_map>

#include "core/metrics/bleu.h"
#include "core/metrics/python_text.h"
#include "core/util/check.h"

namespace attnlab {
namespace {

using NgramCounts = std::unordered_map<std::string, int64_t>;

// string.punctuation, which chrF++ splits off the ends of words.
bool is_ascii_punctuation(char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
         (c >= '{' && c <= '~');
}

// Character n-grams of orders 1..max_order over code points, whitespace removed unless kept.
std::vector<NgramCounts> char_ngrams(const std::string& line, int max_order, bool whitespace) {
  std::vector<CodePoint> text;
  for (const CodePoint c : decode_utf8(line)) {
    if (whitespace || !is_python_space(c)) text.push_back(c);
  }
  // start[i]: byte offset of code point i in `bytes`, so that an n-gram is one substring.
  std::string bytes;
  std::vector<size_t> start;
  start.reserve(text.size() + 1);
  for (const CodePoint c : text) {
    start.push_back(bytes.size());
    append_utf8(bytes, c);
  }
  start.push_back(bytes.size());
  std::vector<NgramCounts> counts(max_order);
  for (int n = 1; n <= max_order; ++n) {
    for (size_t i = 0; i + n <= text.size(); ++i) {
      ++counts[n - 1][bytes.substr(start[i], start[i + n] - start[i])];
    }
  }
  return counts;
}

size_t code_points(const std::string& word) {
  size_t count = 0;
  for (const char c : word) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

// chrF++'s words: str.split(), then one ASCII punctuation mark split off the end of a word of two
// or more characters, else off its start ("(hi)" -> "(hi", ")").
std::vector<std::string> chrf_words(const std::string& line) {
  std::vector<std::string> words;
  for (std::string& word : split_whitespace(line)) {
    const bool splittable = code_points(word) > 1;
    if (splittable && is_ascii_punctuation(word.back())) {
      words.push_back(word.substr(0, word.size() - 1));
      words.push_back(word.substr(word.size() - 1));
    } else if (splittable && is_ascii_punctuation(word.front())) {
      words.push_back(word.substr(0, 1));
      words.push_back(word.substr(1));
    } else {
      words.push_back(std::move(word));
    }
  }
  return words;
}

NgramCounts word_ngrams(const std::vector<std::string>& words, int n) {
  NgramCounts counts;
  for (size_t i = 0; i + n <= words.size(); ++i) {
    std::string key = words[i];
    for (int k = 1; k < n; ++k) key += " " + words[i + k];
    ++counts[key];
  }
  return counts;
}

// Every order's n-grams of one (lowercased if asked) segment.
std::vector<NgramCounts> all_ngrams(const std::string& segment, const ChrfOptions& options) {
  const std::string text = options.lowercase ? bleu_lowercase(segment) : segment;
  std::vector<NgramCounts> counts = char_ngrams(text, options.char_order, options.whitespace);
  if (options.word_order > 0) {
    const std::vector<std::string> words = chrf_words(text);
    for (int n = 1; n <= options.word_order; ++n) counts.push_back(word_ngrams(words, n));
  }
  return counts;
}

}  // namespace

std::vector<int64_t> chrf_segment_stats(const std::string& hypothesis,
                                        const std::vector<std::string>& references,
                                        const ChrfOptions& options) {
  CHECK(!references.empty()) << "chrF needs at least one reference";
  CHECK(options.char_order >= 0 && options.word_order >= 0 && options.orders() > 0)
      << "chrF needs a character or word order above 0";
  const std::vector<NgramCounts> hyp = all_ngrams(hypothesis, options);
  std::vector<int64_t> best;
  double best_score = -1.0;
  for (const std::string& reference : references) {
    const std::vector<NgramCounts> ref = all_ngrams(reference, options);
    std::vector<int64_t> stats;
    stats.reserve(3 * hyp.size());
    for (size_t order = 0; order < hyp.size(); ++order) {
      int64_t hyp_count = 0;
      int64_t matches = 0;
      for (const auto& [ngram, count] : hyp[order]) {
        hyp_count += count;
        const auto found = ref[order].find(ngram);
        if (found != ref[order].end()) matches += std::min(count, found->second);
      }
      int64_t ref_count = 0;
      for (const auto& entry : ref[order]) ref_count += entry.second;
      // A hypothesis n-gram counts only where the reference has n-grams of that order.
      stats.insert(stats.end(), {ref[order].empty() ? 0 : hyp_count, ref_count, matches});
    }
    const double score = chrf_score(stats, options);
    if (score > best_score) {
      best_score = score;
      best = std::move(stats);
    }
  }
  return best;
}

double chrf_score(const std::vector<int64_t>& stats, const ChrfOptions& options) {
  CHECK(stats.size() == 3 * static_cast<size_t>(options.orders()))
      << "chrF statistics of " << stats.size() << " counts for " << options.orders() << " orders";
  // Per order: P = matches / hyp, R = matches / ref (1e-16 when undefined), and
  // F = (1 + beta^2) P R / (beta^2 P + R). eps smoothing averages F over every order; the
  // default averages P and R over the orders both sides have, then takes F of the averages.
  constexpr double kEps = 1e-16;
  const double factor = static_cast<double>(options.beta) * options.beta;
  double f_sum = 0.0;
  double precision_sum = 0.0;
  double recall_sum = 0.0;
  int effective_order = 0;
  for (int order = 0; order < options.orders(); ++order) {
    const int64_t hyp = stats[3 * order];
    const int64_t ref = stats[3 * order + 1];
    const auto matches = static_cast<double>(stats[3 * order + 2]);
    const double precision = hyp > 0 ? matches / static_cast<double>(hyp) : kEps;
    const double recall = ref > 0 ? matches / static_cast<double>(ref) : kEps;
    const double denominator = factor * precision + recall;
    f_sum += denominator > 0 ? (1 + factor) * precision * recall / denominator : kEps;
    if (hyp > 0 && ref > 0) {
      precision_sum += precision;
      recall_sum += recall;
      ++effective_order;
    }
  }
  if (options.eps_smoothing) return 100 * f_sum / options.orders();
  if (effective_order == 0) return 0.0;
  const double precision = precision_sum / effective_order;
  const double recall = recall_sum / effective_order;
  if (precision + recall == 0.0) return 0.0;
  double score = (1 + factor) * precision * recall;
  score /= factor * precision + recall;
  return 100 * score;
}

std::string chrf_name(const ChrfOptions& options) {
  return "chrF" + std::to_string(options.beta) + std::string(options.word_order, '+');
}

std::string chrf_signature(size_t references, const ChrfOptions& options,
                           const std::string& test_fields) {
  return "nrefs:" + std::to_string(references) + "|" + test_fields +
         "case:" + (options.lowercase ? "lc" : "mixed") +
         "|eff:" + (options.eps_smoothing ? "no" : "yes") +
         "|nc:" + std::to_string(options.char_order) + "|nw:" + std::to_string(options.word_order) +
         "|space:" + (options.whitespace ? "yes" : "no") + "|version:" + kSignatureVersion;
}

}  // namespace attnlab
