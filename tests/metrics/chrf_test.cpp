// chrF and chrF++ against values worked out by hand from sacreBLEU's rules (chrf.h).
#include "core/metrics/chrf.h"

#include <gtest/gtest.h>

#include "core/metrics/bleu.h"

namespace attnlab {
namespace {

double chrf(const std::string& hypothesis, const std::vector<std::string>& references,
            const ChrfOptions& options = {}) {
  return chrf_score(chrf_segment_stats(hypothesis, references, options), options);
}

TEST(Chrf, EffectiveOrderAveragesOnlyOrdersBothSidesHave) {
  // "ab" against "abc": 1-grams P = 2/2, R = 2/3; 2-grams P = 1/1, R = 1/2; orders 3..6 have no
  // hypothesis n-gram and do not count. Mean P = 1, mean R = 7/12, and
  // F2 = 5 P R / (4 P + R) = (35/12) / (55/12) = 7/11.
  EXPECT_NEAR(chrf("ab", {"abc"}), 700.0 / 11.0, 1e-12);
  const std::vector<int64_t> stats = chrf_segment_stats("ab", {"abc"}, {});
  ASSERT_EQ(stats.size(), 18u);
  EXPECT_EQ(std::vector<int64_t>(stats.begin(), stats.begin() + 9),
            (std::vector<int64_t>{2, 3, 2, 1, 2, 1, 0, 1, 0}));
  EXPECT_DOUBLE_EQ(chrf("same text", {"same text"}), 100.0);
  EXPECT_DOUBLE_EQ(chrf("xyz", {"abc"}), 0.0);
  EXPECT_DOUBLE_EQ(chrf("", {"abc"}), 0.0);
}

TEST(Chrf, EpsSmoothingAveragesPerOrderF) {
  // Per order F: 5/7 (n = 1), 5/9 (n = 2), 0 (n = 3: P = eps, R = 0), and 1e-16 for n = 4..6
  // (P = R = eps). chrF = 100 (5/7 + 5/9 + 3e-16) / 6.
  ChrfOptions options;
  options.eps_smoothing = true;
  EXPECT_NEAR(chrf("ab", {"abc"}, options), 100.0 * (5.0 / 7.0 + 5.0 / 9.0) / 6.0, 1e-12);
}

TEST(Chrf, WhitespaceIsDroppedUnlessKept) {
  EXPECT_DOUBLE_EQ(chrf("ab", {"a b"}), 100.0);
  // Kept: 1-grams P = 2/2, R = 2/3 ("a", " ", "b"); 2-grams P = 0/1, R = 0/2; 3-grams only in the
  // reference. Mean P = 1/2, R = 1/3: F2 = (5/6) / (7/3) = 5/14.
  ChrfOptions options;
  options.whitespace = true;
  EXPECT_NEAR(chrf("ab", {"a b"}, options), 500.0 / 14.0, 1e-12);
}

TEST(Chrf, CharactersAreCodePointsAndLowercaseIsPythons) {
  // "éa" against "éab": the same shape as "ab" against "abc", by code point.
  EXPECT_NEAR(chrf("\xC3\xA9"
                   "a",
                   {"\xC3\xA9"
                    "ab"}),
              700.0 / 11.0, 1e-12);
  ChrfOptions options;
  options.lowercase = true;
  EXPECT_NEAR(chrf("AB", {"abc"}, options), 700.0 / 11.0, 1e-12);
  EXPECT_LT(chrf("AB", {"abc"}), 1.0);
}

TEST(Chrf, WordNgramsOfChrfPlusPlus) {
  // "the cat." -> the, cat, .   "the cat sat." -> the, cat, sat, .
  // Word 1-grams: 3 hypothesis, 4 reference, 3 matches; 2-grams: 2, 3, 1 ("the cat").
  ChrfOptions options;
  options.word_order = 2;
  const std::vector<int64_t> stats = chrf_segment_stats("the cat.", {"the cat sat."}, options);
  ASSERT_EQ(stats.size(), 24u);
  EXPECT_EQ(std::vector<int64_t>(stats.begin() + 18, stats.end()),
            (std::vector<int64_t>{3, 4, 3, 2, 3, 1}));
  EXPECT_EQ(chrf_name(options), "chrF2++");
  // One punctuation mark comes off the end, else off the start: "(hi)" -> "(hi", ")", while
  // "( hi )" is three words; only ")" matches.
  options.char_order = 0;
  options.word_order = 1;
  EXPECT_EQ(chrf_segment_stats("(hi)", {"( hi )"}, options), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(chrf_segment_stats("(hi", {"( hi"}, options), (std::vector<int64_t>{2, 2, 2}));
}

TEST(Chrf, TheBestReferenceCounts) {
  EXPECT_EQ(chrf_segment_stats("ab", {"xyz", "abc"}, {}), chrf_segment_stats("ab", {"abc"}, {}));
  EXPECT_EQ(chrf_segment_stats("ab", {"abc d", "abc"}, {}), chrf_segment_stats("ab", {"abc"}, {}));
}

TEST(Chrf, Signature) {
  EXPECT_EQ(chrf_signature(1, {}), "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:" +
                                       std::string(kSignatureVersion));
}

}  // namespace
}  // namespace attnlab
