// ReLU: hand-computed values, in-place use, and the central-difference check away from the kink.
#include <gtest/gtest.h>

#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::relu_backward;
using ops::relu_forward;

TEST(Relu, HandComputed) {
  // max(0, [-1 0 2 -0.5 3]) = [0 0 2 0 3]; dinp = dout where out > 0: [0 0 7 0 9]
  std::vector<double> inp = {-1, 0, 2, -0.5, 3}, out(5);
  relu_forward<double>(view(out, {5}), const_view(inp, {5}));
  EXPECT_EQ(out, (std::vector<double>{0, 0, 2, 0, 3}));
  std::vector<double> dout = {5, 6, 7, 8, 9}, dinp(5, 100.0);
  relu_backward<double>(view(dinp, {5}), const_view(dout, {5}), const_view(out, {5}));
  EXPECT_EQ(dinp, (std::vector<double>{0, 0, 7, 0, 9}));
}

TEST(Relu, InPlaceAndAliasedGradient) {
  // out may alias inp, and dinp may alias dout.
  std::vector<double> x = {-2, 4, 0.5}, g = {1, 2, 3};
  relu_forward<double>(view(x, {3}), const_view(x, {3}));
  EXPECT_EQ(x, (std::vector<double>{0, 4, 0.5}));
  relu_backward<double>(view(g, {3}), const_view(g, {3}), const_view(x, {3}));
  EXPECT_EQ(g, (std::vector<double>{0, 2, 3}));
}

class ReluTest : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(ReluTest, GradientMatchesCentralDifferences) {
  const Shape shape(GetParam());
  const int64_t n = shape.numel();
  // Values at least 0.01 away from the kink, so x +- h never crosses it.
  std::vector<double> inp = random_uniform(n, 51);
  for (double& x : inp) x += x >= 0 ? 0.01 : -0.01;
  std::vector<double> dout = random_uniform(n, 52), out(static_cast<size_t>(n));
  auto objective = [&] {
    relu_forward<double>(view(out, shape), const_view(inp, shape));
    return weighted_sum(out.data(), dout);
  };
  objective();
  std::vector<double> dinp(static_cast<size_t>(n));
  relu_backward<double>(view(dinp, shape), const_view(dout, shape), const_view(out, shape));
  GradCheckResult result = check_gradients(objective, {{"inp", inp.data(), dinp.data(), n}});
  EXPECT_TRUE(result.passed) << result.report;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReluTest,
                         ::testing::Values(std::vector<int64_t>{1}, std::vector<int64_t>{3, 7},
                                           std::vector<int64_t>{7, 3, 5},
                                           std::vector<int64_t>{2, 3, 1, 4}));

}  // namespace
}  // namespace attnlab::test
