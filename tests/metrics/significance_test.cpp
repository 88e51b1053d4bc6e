// numpy's generator against values numpy 1.24 printed, and the paired tests on cases whose
// answers follow from their definitions (significance.h).
#include "core/metrics/significance.h"

#include <gtest/gtest.h>

#include "core/metrics/numpy_generator.h"
#include "core/util/check.h"

namespace attnlab {
namespace {

// Printed by numpy 1.24:
//   np.random.SeedSequence(12345).generate_state(4, np.uint64)
//   np.random.default_rng(12345).bit_generator.random_raw(2)
//   np.random.default_rng(2**40 + 5).bit_generator.random_raw(1)
TEST(NumpyGenerator, SeedSequenceAndPcg64MatchNumpy) {
  EXPECT_EQ(numpy_seed_state(numpy_seed_words(12345), 4),
            (std::vector<uint64_t>{13091511679009522556ull, 13538552136045918767ull,
                                   7269824232120749972ull, 4520223790601600371ull}));
  NumpyGenerator generator(12345);
  EXPECT_EQ(generator.next_uint64(), 4193609425186963869ull);
  EXPECT_EQ(generator.next_uint64(), 5843160025838961886ull);
  EXPECT_EQ(NumpyGenerator((uint64_t{1} << 40) + 5).next_uint64(), 87427594128977387ull);
  EXPECT_EQ(numpy_seed_words(0), std::vector<uint32_t>{0});
  EXPECT_EQ(numpy_seed_words((uint64_t{1} << 40) + 5), (std::vector<uint32_t>{5, 256}));
}

// np.random.default_rng(12345).choice(10, size=12) and .integers(2, size=40, dtype=bool).
TEST(NumpyGenerator, BoundedDrawsMatchNumpy) {
  NumpyGenerator choices(12345);
  std::vector<uint32_t> drawn;
  for (int i = 0; i < 12; ++i) drawn.push_back(choices.below(10));
  EXPECT_EQ(drawn, (std::vector<uint32_t>{6, 2, 7, 3, 2, 7, 6, 6, 9, 3, 8, 3}));
  NumpyGenerator booleans(12345);
  std::string bits;
  for (int i = 0; i < 40; ++i) bits += booleans.next_bool() ? '1' : '0';
  EXPECT_EQ(bits, "1011100110000011111111110100110110110001");
  EXPECT_EQ(NumpyGenerator(7).below(1), 0u);
}

// Accuracy over segments: counts (correct, total).
double accuracy(const std::vector<int64_t>& totals) {
  return 100.0 * static_cast<double>(totals[0]) / static_cast<double>(totals[1]);
}

SegmentStats segments(const std::vector<int64_t>& correct) {
  SegmentStats stats;
  stats.width = 2;
  for (const int64_t c : correct) stats.append({c, 1});
  return stats;
}

TEST(EstimateCi, SacrebleusIndices) {
  // 1..40 shuffled: n / 40 = 1, so the interval runs from the 2nd (2) to the 39th (39) sorted
  // score: ci = (39 - 2) / 2 = 18.5; mean 20.5.
  std::vector<double> scores;
  for (int i = 40; i >= 1; --i) scores.push_back((i * 7) % 41);
  const MeanAndInterval interval = estimate_ci(scores);
  EXPECT_DOUBLE_EQ(interval.mean, 20.5);
  EXPECT_DOUBLE_EQ(interval.ci, 18.5);
  // Under 40 scores the interval is the whole range: (9 - 1) / 2.
  EXPECT_DOUBLE_EQ(estimate_ci({5, 1, 9}).ci, 4.0);
}

TEST(PairedTest, ASystemAgainstItselfHasTheSmallestPValue) {
  // No resample or trial differs by more than 0 > 0, so the count is 0 and p = 1 / (n + 1): as
  // sacreBLEU says, a zero difference is not attributed to chance.
  const SegmentStats system = segments({1, 0, 1, 1, 0, 1, 0, 1});
  for (const PairedTest kind : {PairedTest::kBootstrap, PairedTest::kApproximateRandomization}) {
    PairedTestOptions options;
    options.test = kind;
    options.samples = 99;
    const std::vector<PairedResult> results = paired_test({system, system}, accuracy, options);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_DOUBLE_EQ(results[0].score, 62.5);
    EXPECT_DOUBLE_EQ(results[1].score, 62.5);
    EXPECT_FALSE(results[0].p_value.has_value());
    EXPECT_DOUBLE_EQ(*results[1].p_value, 0.01);
    EXPECT_EQ(results[1].mean.has_value(), kind == PairedTest::kBootstrap);
  }
}

TEST(PairedTest, RandomizationOfOneDifferingSegmentNeverExceedsTheDelta) {
  // Only segment 0 differs: a swap gives the pair (base, sys) or (sys, base), whose difference is
  // the actual one, never more: p = 1 / (T + 1).
  const SegmentStats base = segments({1, 1, 0, 1});
  const SegmentStats system = segments({0, 1, 0, 1});
  PairedTestOptions options;
  options.test = PairedTest::kApproximateRandomization;
  options.samples = 199;
  const std::vector<PairedResult> results = paired_test({base, system}, accuracy, options);
  EXPECT_DOUBLE_EQ(results[0].score, 75.0);
  EXPECT_DOUBLE_EQ(results[1].score, 50.0);
  EXPECT_DOUBLE_EQ(*results[1].p_value, 1.0 / 200.0);
}

TEST(PairedTest, RandomizationOfSymmetricSegmentsFindsNoDifference) {
  // Half the segments favour each system by the same amount: the actual delta is 0 and nearly
  // every trial's difference exceeds it (all but those whose swaps cancel), so p is near 1.
  std::vector<int64_t> base_correct;
  std::vector<int64_t> system_correct;
  for (int i = 0; i < 40; ++i) {
    base_correct.push_back(i % 2);
    system_correct.push_back(1 - i % 2);
  }
  PairedTestOptions options;
  options.test = PairedTest::kApproximateRandomization;
  options.samples = 1000;
  const std::vector<PairedResult> results =
      paired_test({segments(base_correct), segments(system_correct)}, accuracy, options);
  EXPECT_DOUBLE_EQ(results[1].score, results[0].score);
  EXPECT_GT(*results[1].p_value, 0.8);
}

TEST(PairedTest, TheSeedDecidesTheDraws) {
  std::vector<int64_t> base_correct;
  std::vector<int64_t> system_correct;
  for (int i = 0; i < 60; ++i) {
    base_correct.push_back(i % 3 == 0);
    system_correct.push_back(i % 2 == 0);
  }
  const std::vector<SegmentStats> systems = {segments(base_correct), segments(system_correct)};
  PairedTestOptions options;
  const double first = *paired_test(systems, accuracy, options)[1].mean;
  EXPECT_EQ(*paired_test(systems, accuracy, options)[1].mean, first);
  options.seed = 12346;
  EXPECT_NE(*paired_test(systems, accuracy, options)[1].mean, first);
  EXPECT_EQ(paired_test_fields(options), "bs:1000|seed:12346|");
  options.seed = std::nullopt;
  options.test = PairedTest::kApproximateRandomization;
  EXPECT_EQ(paired_test_fields(options), "ar:10000|seed:none|");
}

TEST(PairedTest, RefusesMismatchedSystems) {
  EXPECT_THROW(paired_test({segments({1, 0})}, accuracy, {}), Error);
  EXPECT_THROW(paired_test({segments({1, 0}), segments({1, 0, 1})}, accuracy, {}), Error);
}

}  // namespace
}  // namespace attnlab
