// Label-smoothed cross entropy: a hand-computed loss with eps, eps = 0 as plain cross entropy
// (loss = nll), pad rows ignored with zero gradient, errors, the central-difference check, and
// one buffer used in place for logits, log-probabilities and gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::cross_entropy_backward;
using ops::cross_entropy_forward;
using ops::LossSums;

TEST(CrossEntropy, HandComputedWithSmoothing) {
  // logits [0, ln 2, ln 3]: p = [1/6 1/3 1/2]; target 2, eps = 0.2 over N = 3 classes:
  //   q = [0.1 0.1 0.8]; nll = ln 2;
  //   loss = -(0.1 ln(1/6) + 0.1 ln(1/3) + 0.8 ln(1/2)) = 0.1 ln 6 + 0.1 ln 3 + 0.8 ln 2
  //        = 0.17917595 + 0.10986123 + 0.55451774 = 0.84355492
  //   dlogits = dloss * (p - q) = 2 * [1/6 - 0.1, 1/3 - 0.1, 1/2 - 0.8] = [2/15, 7/15, -0.6]
  std::vector<double> logits = {0, std::log(2.0), std::log(3.0)}, log_probs(3), dlogits(3, 9.0);
  std::vector<int32_t> targets = {2};
  LossSums sums = cross_entropy_forward<double>(view(log_probs, {1, 3}), const_view(logits, {1, 3}),
                                                targets.data(), 0.2f, -1);
  // eps is a float: 0.2f = 0.2 + 2.98e-9, which moves the loss by about 3e-9.
  EXPECT_NEAR(sums.loss, 0.1 * std::log(6.0) + 0.1 * std::log(3.0) + 0.8 * std::log(2.0), 1e-8);
  EXPECT_NEAR(sums.loss, 0.84355492, 1e-8);
  EXPECT_NEAR(sums.nll, std::log(2.0), 1e-15);
  EXPECT_EQ(sums.tokens, 1);
  EXPECT_NEAR(log_probs[0], -std::log(6.0), 1e-15);
  cross_entropy_backward<double>(view(dlogits, {1, 3}), 2.0, const_view(log_probs, {1, 3}),
                                 targets.data(), 0.2f, -1);
  EXPECT_NEAR(dlogits[0], 2.0 / 15, 1e-8);
  EXPECT_NEAR(dlogits[1], 7.0 / 15, 1e-8);
  EXPECT_NEAR(dlogits[2], -0.6, 1e-8);
}

TEST(CrossEntropy, NoSmoothingIsPlainCrossEntropy) {
  // eps = 0: loss = nll = -sum_m log p(target_m); here rows [0 0] -> ln 2 and [ln 3, 0] with
  // target 1 -> -ln(1/4) = ln 4.
  std::vector<double> logits = {0, 0, std::log(3.0), 0}, log_probs(4);
  std::vector<int32_t> targets = {0, 1};
  LossSums sums = cross_entropy_forward<double>(view(log_probs, {2, 2}), const_view(logits, {2, 2}),
                                                targets.data(), 0.0f, -1);
  EXPECT_NEAR(sums.nll, std::log(2.0) + std::log(4.0), 1e-15);
  EXPECT_EQ(sums.loss, sums.nll);
  EXPECT_EQ(sums.tokens, 2);
}

TEST(CrossEntropy, PadRowsAreIgnored) {
  // Rows 1 and 3 target the pad id 0: changing their logits changes neither the sums nor the
  // other rows' gradients, and their own gradient is exactly zero.
  const int64_t m = 4, n = 5;
  std::vector<double> logits = random_uniform(m * n, 111, -2, 2), log_probs(m * n), dlogits(m * n);
  std::vector<int32_t> targets = {3, 0, 4, 0};
  LossSums sums = cross_entropy_forward<double>(view(log_probs, {m, n}), const_view(logits, {m, n}),
                                                targets.data(), 0.1f, 0);
  EXPECT_EQ(sums.tokens, 2);
  cross_entropy_backward<double>(view(dlogits, {m, n}), 1.0, const_view(log_probs, {m, n}),
                                 targets.data(), 0.1f, 0);
  for (int64_t j = 0; j < n; ++j) {
    EXPECT_EQ(dlogits[static_cast<size_t>(1 * n + j)], 0.0);
    EXPECT_EQ(dlogits[static_cast<size_t>(3 * n + j)], 0.0);
  }
  std::vector<double> changed = logits, changed_log_probs(m * n), changed_dlogits(m * n);
  for (int64_t j = 0; j < n; ++j) {
    changed[static_cast<size_t>(1 * n + j)] += 3.0 * static_cast<double>(j);
    changed[static_cast<size_t>(3 * n + j)] = -50.0;
  }
  LossSums changed_sums = cross_entropy_forward<double>(
      view(changed_log_probs, {m, n}), const_view(changed, {m, n}), targets.data(), 0.1f, 0);
  cross_entropy_backward<double>(view(changed_dlogits, {m, n}), 1.0,
                                 const_view(changed_log_probs, {m, n}), targets.data(), 0.1f, 0);
  EXPECT_EQ(changed_sums.loss, sums.loss);
  EXPECT_EQ(changed_sums.nll, sums.nll);
  EXPECT_TRUE(bitwise_equal(changed_dlogits, dlogits));
  // The sums equal those of the two non-pad rows alone.
  std::vector<double> kept = {}, kept_log_probs(2 * n);
  kept.insert(kept.end(), logits.begin(), logits.begin() + n);
  kept.insert(kept.end(), logits.begin() + 2 * n, logits.begin() + 3 * n);
  std::vector<int32_t> kept_targets = {3, 4};
  LossSums kept_sums = cross_entropy_forward<double>(
      view(kept_log_probs, {2, n}), const_view(kept, {2, n}), kept_targets.data(), 0.1f, 0);
  EXPECT_NEAR(kept_sums.loss, sums.loss, 1e-15);
  EXPECT_NEAR(kept_sums.nll, sums.nll, 1e-15);
}

// log_sum_exp against log sum exp summed in long double, over rows of one value, of fewer values
// than a SIMD block, of several blocks with a partial last one, and of a vocabulary's width;
// values from -40 to 60 (so exp(x) alone would overflow float's sums without the max) and a
// row where one value dominates.
TEST(CrossEntropy, LogSumExpEqualsTheSumInLongDouble) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> value(-40.0, 60.0);
  for (const int64_t n : {1, 7, 1300, 37000}) {
    for (const bool dominated : {false, true}) {
      std::vector<double> row(static_cast<size_t>(n));
      for (double& x : row) x = value(rng);
      if (dominated) row[static_cast<size_t>(n / 2)] = 90.0;
      std::vector<float> row_float(row.begin(), row.end());
      long double max_value = *std::max_element(row.begin(), row.end()), sum = 0;
      for (const double x : row) sum += std::exp(static_cast<long double>(x) - max_value);
      const double expected = static_cast<double>(max_value + std::log(sum));
      // The float row is the double row rounded: its own exact value is the reference, and the
      // float sums leave about 1e-7 of it (relative), 1e-7 of its logarithm (absolute).
      long double max_float = *std::max_element(row_float.begin(), row_float.end()), sum_float = 0;
      for (const float x : row_float)
        sum_float += std::exp(static_cast<long double>(x) - max_float);
      const double expected_float = static_cast<double>(max_float + std::log(sum_float));
      EXPECT_NEAR(ops::log_sum_exp(row.data(), n), expected, 1e-13 * std::abs(expected))
          << n << " values";
      EXPECT_NEAR(ops::log_sum_exp(row_float.data(), n), expected_float, 1e-6) << n << " values";
    }
  }
}

TEST(CrossEntropy, TargetOutsideVocabularyIsAnError) {
  std::vector<double> logits(6), log_probs(6);
  std::vector<int32_t> targets = {1, 3};
  try {
    cross_entropy_forward<double>(view(log_probs, {2, 3}), const_view(logits, {2, 3}),
                                  targets.data(), 0.1f, -1);
    FAIL() << "target 3 of a 3-word vocabulary accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("target id 3"), std::string::npos) << error.what();
  }
}

struct CrossEntropyCase {
  int64_t rows, vocab;
  float eps;
};

class CrossEntropyTest : public ::testing::TestWithParam<CrossEntropyCase> {};

TEST_P(CrossEntropyTest, GradientMatchesCentralDifferences) {
  // Objective dloss * summed loss, with every third target the pad id 1.
  const auto [m, n, eps] = GetParam();
  const int32_t pad_id = n > 2 ? 1 : -1;
  std::vector<double> logits = random_uniform(m * n, 121, -3, 3), log_probs(m * n), dlogits(m * n);
  std::vector<int32_t> targets(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    targets[static_cast<size_t>(r)] = r % 3 == 2 ? pad_id : static_cast<int32_t>((r * 7 + 2) % n);
  }
  const double dloss = 0.7;
  auto objective = [&] {
    return dloss * cross_entropy_forward<double>(view(log_probs, {m, n}),
                                                 const_view(logits, {m, n}), targets.data(), eps,
                                                 pad_id)
                       .loss;
  };
  objective();
  cross_entropy_backward<double>(view(dlogits, {m, n}), dloss, const_view(log_probs, {m, n}),
                                 targets.data(), eps, pad_id);
  GradCheckResult result =
      check_gradients(objective, {{"logits", logits.data(), dlogits.data(), m * n}});
  EXPECT_TRUE(result.passed) << result.report;
}

TEST_P(CrossEntropyTest, FloatMatchesDouble) {
  const auto [m, n, eps] = GetParam();
  std::vector<double> logits = random_uniform(m * n, 122, -3, 3), log_probs(m * n);
  std::vector<float> logits_f = convert<float>(logits), log_probs_f(m * n);
  std::vector<int32_t> targets(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) targets[static_cast<size_t>(r)] = static_cast<int32_t>(r % n);
  LossSums sums = cross_entropy_forward<double>(view(log_probs, {m, n}), const_view(logits, {m, n}),
                                                targets.data(), eps, -1);
  LossSums sums_f = cross_entropy_forward<float>(
      view(log_probs_f, {m, n}), const_view(logits_f, {m, n}), targets.data(), eps, -1);
  EXPECT_NEAR(sums_f.loss, sums.loss, 1e-5 * std::max(1.0, sums.loss));
  EXPECT_NEAR(sums_f.nll, sums.nll, 1e-5 * std::max(1.0, sums.nll));
  EXPECT_LT(max_scaled_difference(log_probs_f, log_probs), 1e-5);
}

TEST_P(CrossEntropyTest, OneBufferInPlaceGivesTheSeparateBuffersResults) {
  // The model keeps one (M,N) buffer: logits, then log-probabilities written over them, then
  // the gradient written over those. Bit for bit what three buffers give, in float (the SIMD
  // rows) and with pad rows.
  const auto [m, n, eps] = GetParam();
  const int32_t pad_id = n > 2 ? 1 : -1;
  std::vector<int32_t> targets(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    targets[static_cast<size_t>(r)] = r % 3 == 2 ? pad_id : static_cast<int32_t>((r * 5 + 1) % n);
  }
  const std::vector<float> logits = convert<float>(random_uniform(m * n, 123, -3, 3));
  std::vector<float> log_probs(m * n), dlogits(m * n), shared = logits;
  const LossSums apart = cross_entropy_forward<float>(
      view(log_probs, {m, n}), const_view(logits, {m, n}), targets.data(), eps, pad_id);
  cross_entropy_backward<float>(view(dlogits, {m, n}), 0.7f, const_view(log_probs, {m, n}),
                                targets.data(), eps, pad_id);
  const LossSums together = cross_entropy_forward<float>(
      view(shared, {m, n}), const_view(shared, {m, n}), targets.data(), eps, pad_id);
  EXPECT_EQ(shared, log_probs);
  cross_entropy_backward<float>(view(shared, {m, n}), 0.7f, const_view(shared, {m, n}),
                                targets.data(), eps, pad_id);
  EXPECT_EQ(shared, dlogits);
  EXPECT_EQ(together.loss, apart.loss);
  EXPECT_EQ(together.nll, apart.nll);
  EXPECT_EQ(together.tokens, apart.tokens);
}

INSTANTIATE_TEST_SUITE_P(Cases, CrossEntropyTest,
                         ::testing::Values(CrossEntropyCase{1, 1, 0.0f},
                                           CrossEntropyCase{1, 2, 0.1f},
                                           CrossEntropyCase{3, 7, 0.0f},
                                           CrossEntropyCase{7, 3, 0.1f},
                                           CrossEntropyCase{5, 33, 0.3f}));

}  // namespace
}  // namespace attnlab::test
