// split_heads / combine_heads: a hand-computed permutation, each the inverse of the other, and the
// gradient of split_heads is combine_heads (checked by central differences).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::combine_heads;
using ops::split_heads;

TEST(Heads, HandComputed) {
  // B=1, T=2, H=2, K=2: inp (1,2,4) rows t0 = [0 1 | 2 3], t1 = [4 5 | 6 7]
  //   head 0 = [[0 1] [4 5]], head 1 = [[2 3] [6 7]] -> (1,2,2,2) = [0 1 4 5 2 3 6 7]
  std::vector<double> inp(8), out(8), back(8);
  std::iota(inp.begin(), inp.end(), 0.0);
  split_heads<double>(view(out, {1, 2, 2, 2}), const_view(inp, {1, 2, 4}));
  EXPECT_EQ(out, (std::vector<double>{0, 1, 4, 5, 2, 3, 6, 7}));
  combine_heads<double>(view(back, {1, 2, 4}), const_view(out, {1, 2, 2, 2}));
  EXPECT_EQ(back, inp);
}

TEST(Heads, WidthMismatchNamesBothShapes) {
  std::vector<double> inp(6), out(8);
  try {
    split_heads<double>(view(out, {1, 2, 2, 2}), const_view(inp, {1, 2, 3}));
    FAIL() << "(1,2,3) split into 2 heads of 2";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("(1,2,3)"), std::string::npos) << message;
    EXPECT_NE(message.find("(1,2,4)"), std::string::npos) << message;
  }
}

struct HeadsShape {
  int64_t batch, length, heads, width;
};

class HeadsTest : public ::testing::TestWithParam<HeadsShape> {};

TEST_P(HeadsTest, CombineInvertsSplitAndSplitInvertsCombine) {
  const auto [b, t, h, k] = GetParam();
  const Shape merged({b, t, h * k}), split({b, h, t, k});
  std::vector<double> x = random_uniform(b * t * h * k, 81), y(x.size()), z(x.size());
  split_heads<double>(view(y, split), const_view(x, merged));
  combine_heads<double>(view(z, merged), const_view(y, split));
  EXPECT_TRUE(bitwise_equal(z, x));
  combine_heads<double>(view(y, merged), const_view(x, split));
  split_heads<double>(view(z, split), const_view(y, merged));
  EXPECT_TRUE(bitwise_equal(z, x));
}

TEST_P(HeadsTest, GradientOfSplitIsCombine) {
  // f(x) = sum(split(x) * R) is linear, so df/dx = split^T R = combine(R).
  const auto [b, t, h, k] = GetParam();
  const Shape merged({b, t, h * k}), split({b, h, t, k});
  const int64_t n = merged.numel();
  std::vector<double> x = random_uniform(n, 82), weights = random_uniform(n, 83),
                      out(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
  auto objective = [&] {
    split_heads<double>(view(out, split), const_view(x, merged));
    return weighted_sum(out.data(), weights);
  };
  combine_heads<double>(view(dx, merged), const_view(weights, split));
  GradCheckResult result = check_gradients(objective, {{"inp", x.data(), dx.data(), n}});
  EXPECT_TRUE(result.passed) << result.report;
}

INSTANTIATE_TEST_SUITE_P(Shapes, HeadsTest,
                         ::testing::Values(HeadsShape{1, 1, 1, 1}, HeadsShape{2, 3, 7, 1},
                                           HeadsShape{3, 7, 1, 3}, HeadsShape{2, 5, 3, 4}));

}  // namespace
}  // namespace attnlab::test
