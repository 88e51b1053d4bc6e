// chrF (Popović 2015) and chrF++ (Popović 2017) with sacreBLEU 2.x's rules (`CHRF()`): character
// n-grams up to order 6 with whitespace removed, word n-grams up to --chrf-word-order (0 for chrF,
// 2 for chrF++) after splitting one ASCII punctuation mark off each word's end (else its start),
// beta 2, and effective-order averaging: precision and recall are averaged over the orders that
// both the hypothesis and the reference have, then combined into F_beta.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

struct ChrfOptions {
  int char_order = 6;
  int word_order = 0;  // 2 = chrF++
  int beta = 2;
  bool lowercase = false;      // Python's str.lower() on both sides
  bool whitespace = false;     // keep whitespace inside character n-grams
  bool eps_smoothing = false;  // chrF++.py's average of per-order F scores instead
  int orders() const { return char_order + word_order; }
};

// The statistics of one segment: for each order (the character orders, then the word orders)
// three counts, [hypothesis n-grams, reference n-grams, matches], which add up over a corpus.
// With several references, those of the reference with the best sentence chrF (the first on a
// tie). Segments are taken as given (sacreBLEU's command line strips trailing whitespace from
// every line first, which only --chrf-whitespace would see).
std::vector<int64_t> chrf_segment_stats(const std::string& hypothesis,
                                        const std::vector<std::string>& references,
                                        const ChrfOptions& options);

// chrF in 0..100 of statistics summed over segments (3 * orders() counts).
double chrf_score(const std::vector<int64_t>& stats, const ChrfOptions& options);

// "chrF2", or "chrF2++" for word order 2: sacreBLEU's name of the metric.
std::string chrf_name(const ChrfOptions& options);

// sacreBLEU's signature fields for chrF, e.g. "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|
// version:2.x-attnlab"; `test_fields` ("bs:1000|seed:12345|") go after nrefs, as sacreBLEU puts
// them.
std::string chrf_signature(size_t references, const ChrfOptions& options,
                           const std::string& test_fields = "");

}  // namespace attnlab
