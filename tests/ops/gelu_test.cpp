// GELU (exact erf form): values and slopes from the standard normal's Phi and phi, in-place use,
// and the central-difference check over every sign of the input.
#include <gtest/gtest.h>

#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::gelu_backward;
using ops::gelu_forward;

TEST(Gelu, MatchesTheNormalDistribution) {
  // gelu(x) = x Phi(x), gelu'(x) = Phi(x) + x phi(x), with the tabulated Phi(1) =
  // 0.8413447460685429, Phi(2) = 0.9772498680518208, phi(1) = 0.24197072451914337, phi(2) =
  // 0.05399096651318806.
  const std::vector<double> inp = {-2, -1, 0, 1, 2};
  std::vector<double> out(5);
  gelu_forward<double>(view(out, {5}), const_view(inp, {5}));
  const std::vector<double> expected = {-2 * (1 - 0.9772498680518208), -(1 - 0.8413447460685429), 0,
                                        0.8413447460685429, 2 * 0.9772498680518208};
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(out[i], expected[i], 1e-15) << i;
  std::vector<double> dout = {1, 2, 3, 4, 5}, dinp(5, 100.0);
  gelu_backward<double>(view(dinp, {5}), const_view(dout, {5}), const_view(inp, {5}));
  const std::vector<double> slope = {(1 - 0.9772498680518208) - 2 * 0.05399096651318806,
                                     (1 - 0.8413447460685429) - 0.24197072451914337, 0.5,
                                     0.8413447460685429 + 0.24197072451914337,
                                     0.9772498680518208 + 2 * 0.05399096651318806};
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(dinp[i], dout[i] * slope[i], 1e-15) << i;
}

TEST(Gelu, InPlaceAndAliasedGradient) {
  // out may alias inp, and dinp may alias dout (backward reads the input, kept here in x0).
  const std::vector<double> x0 = {-0.5, 0.25, 3};
  std::vector<double> x = x0, y(3), g = {1, 2, 3}, expected_g(3);
  gelu_forward<double>(view(y, {3}), const_view(x0, {3}));
  gelu_forward<double>(view(x, {3}), const_view(x, {3}));
  EXPECT_EQ(x, y);
  gelu_backward<double>(view(expected_g, {3}), const_view(g, {3}), const_view(x0, {3}));
  gelu_backward<double>(view(g, {3}), const_view(g, {3}), const_view(x0, {3}));
  EXPECT_EQ(g, expected_g);
}

class GeluTest : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(GeluTest, GradientMatchesCentralDifferences) {
  const Shape shape(GetParam());
  const int64_t n = shape.numel();
  std::vector<double> inp = random_uniform(n, 61, -3.0, 3.0);
  std::vector<double> dout = random_uniform(n, 62), out(static_cast<size_t>(n));
  auto objective = [&] {
    gelu_forward<double>(view(out, shape), const_view(inp, shape));
    return weighted_sum(out.data(), dout);
  };
  objective();
  std::vector<double> dinp(static_cast<size_t>(n));
  gelu_backward<double>(view(dinp, shape), const_view(dout, shape), const_view(inp, shape));
  GradCheckResult result = check_gradients(objective, {{"inp", inp.data(), dinp.data(), n}});
  EXPECT_TRUE(result.passed) << result.report;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GeluTest,
                         ::testing::Values(std::vector<int64_t>{1}, std::vector<int64_t>{3, 7},
                                           std::vector<int64_t>{7, 3, 5}));

}  // namespace
}  // namespace attnlab::test
