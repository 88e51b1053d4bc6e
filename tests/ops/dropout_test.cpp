// Dropout: the mask is a pure function of (key, index); p = 0 is the identity; the kept fraction
// and the mean match 1 - p and 1 statistically; backward applies the very same mask.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"
#include "core/util/rng.h"

namespace attnlab::test {
namespace {

using ops::dropout_backward;
using ops::dropout_forward;

TEST(Dropout, HandComputedFromTheMaskDefinition) {
  // p = 0.5: element i is kept iff uniform_at(key, i) >= 0.5, and then doubled (1 / (1 - 0.5)).
  const uint64_t key = rng_key(7);
  std::vector<double> inp = {1, 2, 3, 4, 5, 6, 7, 8}, out(8);
  dropout_forward<double>(view(out, {8}), const_view(inp, {8}), 0.5f, key);
  for (size_t i = 0; i < inp.size(); ++i) {
    const bool kept = uniform_at(key, i) >= 0.5f;
    EXPECT_EQ(out[i], kept ? 2.0 * inp[i] : 0.0) << i;
  }
}

TEST(Dropout, ZeroProbabilityIsTheIdentity) {
  std::vector<double> inp = random_uniform(1000, 91), out(1000), dinp(1000);
  dropout_forward<double>(view(out, {1000}), const_view(inp, {1000}), 0.0f, rng_key(1));
  EXPECT_TRUE(bitwise_equal(out, inp));
  dropout_backward<double>(view(dinp, {1000}), const_view(inp, {1000}), 0.0f, rng_key(1));
  EXPECT_TRUE(bitwise_equal(dinp, inp));
}

TEST(Dropout, SameKeySameMaskOtherKeyOtherMask) {
  const int64_t n = 1000;
  std::vector<double> inp(n, 1.0), first(n), again(n), other(n);
  dropout_forward<double>(view(first, {n}), const_view(inp, {n}), 0.5f, rng_key(3, 0, 1));
  dropout_forward<double>(view(again, {n}), const_view(inp, {n}), 0.5f, rng_key(3, 0, 1));
  dropout_forward<double>(view(other, {n}), const_view(inp, {n}), 0.5f, rng_key(3, 0, 2));
  EXPECT_TRUE(bitwise_equal(first, again));
  int64_t differing = 0;
  for (int64_t i = 0; i < n; ++i) differing += (first[i] == 0.0) != (other[i] == 0.0);
  // Two independent masks at p = 0.5 differ on about half the elements (std 16).
  EXPECT_GT(differing, 400);
  EXPECT_LT(differing, 600);
}

TEST(Dropout, KeptFractionAndMeanAtTenPercent) {
  // 1e5 ones at p = 0.1: kept fraction ~ 0.9 with std sqrt(0.09/1e5) = 0.00095; each output is
  // 0 or 1/0.9, so the mean is 1 in expectation with std sqrt((1/0.9 - 1)/1e5) = 0.00105.
  const int64_t n = 100000;
  const float p = 0.1f;
  std::vector<float> inp(n, 1.0f), out(n);
  dropout_forward<float>(view(out, {n}), const_view(inp, {n}), p, rng_key(2024));
  int64_t kept = 0;
  double sum = 0.0;
  for (float value : out) {
    kept += value != 0.0f;
    sum += value;
    ASSERT_TRUE(value == 0.0f || std::fabs(value - 1.0f / 0.9f) < 1e-6f) << value;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.9, 0.005);
  EXPECT_NEAR(sum / n, 1.0, 0.005);
}

TEST(Dropout, BackwardAppliesTheForwardMask) {
  const int64_t n = 5000;
  const float p = 0.3f;
  const uint64_t key = rng_key(11, 4);
  std::vector<double> inp = random_uniform(n, 92, 0.5, 1.5), out(n);  // nonzero inputs
  std::vector<double> dout = random_uniform(n, 93, 0.5, 1.5), dinp(n);
  dropout_forward<double>(view(out, {n}), const_view(inp, {n}), p, key);
  dropout_backward<double>(view(dinp, {n}), const_view(dout, {n}), p, key);
  const double keep_scale = 1.0 / (1.0 - static_cast<double>(p));
  for (int64_t i = 0; i < n; ++i) {
    if (out[i] == 0.0) {
      EXPECT_EQ(dinp[i], 0.0) << i;
    } else {
      EXPECT_NEAR(dinp[i], dout[i] * keep_scale, 1e-15) << i;
    }
  }
}

TEST(Dropout, ProbabilityOutsideRangeIsAnError) {
  std::vector<double> x(4), y(4);
  EXPECT_THROW(dropout_forward<double>(view(y, {4}), const_view(x, {4}), 1.0f, 1), Error);
  EXPECT_THROW(dropout_forward<double>(view(y, {4}), const_view(x, {4}), -0.1f, 1), Error);
}

struct DropoutCase {
  int64_t n;
  float p;
};

class DropoutTest : public ::testing::TestWithParam<DropoutCase> {};

TEST_P(DropoutTest, GradientMatchesCentralDifferencesWithAFixedKey) {
  const auto [n, p] = GetParam();
  const uint64_t key = rng_key(5, static_cast<uint64_t>(n));
  std::vector<double> inp = random_uniform(n, 94), dout = random_uniform(n, 95), out(n), dinp(n);
  auto objective = [&] {
    dropout_forward<double>(view(out, {n}), const_view(inp, {n}), p, key);
    return weighted_sum(out.data(), dout);
  };
  dropout_backward<double>(view(dinp, {n}), const_view(dout, {n}), p, key);
  GradCheckResult result = check_gradients(objective, {{"inp", inp.data(), dinp.data(), n}});
  EXPECT_TRUE(result.passed) << result.report;
}

INSTANTIATE_TEST_SUITE_P(Cases, DropoutTest,
                         ::testing::Values(DropoutCase{1, 0.0f}, DropoutCase{3, 0.5f},
                                           DropoutCase{7, 0.1f}, DropoutCase{64, 0.3f},
                                           DropoutCase{33, 0.9f}));

}  // namespace
}  // namespace attnlab::test
