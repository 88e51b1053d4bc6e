// Softmax: hand-computed probabilities and gradient, shift invariance, large logits, and the
// central-difference check over shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::softmax_backward;
using ops::softmax_forward;

TEST(Softmax, HandComputed) {
  // x = [0, ln 2, ln 3]: exp = [1 2 3], sum 6 -> y = [1/6 1/3 1/2]
  std::vector<double> inp = {0, std::log(2.0), std::log(3.0)}, out(3);
  softmax_forward<double>(view(out, {1, 3}), const_view(inp, {1, 3}));
  EXPECT_NEAR(out[0], 1.0 / 6, 1e-15);
  EXPECT_NEAR(out[1], 1.0 / 3, 1e-15);
  EXPECT_NEAR(out[2], 1.0 / 2, 1e-15);
  // dy = [1 0 0]: sum(dy y) = 1/6, dx = y (dy - 1/6) = [5/36, -1/18, -1/12]
  std::vector<double> dout = {1, 0, 0}, dinp(3);
  softmax_backward<double>(view(dinp, {1, 3}), const_view(dout, {1, 3}), const_view(out, {1, 3}));
  EXPECT_NEAR(dinp[0], 5.0 / 36, 1e-15);
  EXPECT_NEAR(dinp[1], -1.0 / 18, 1e-15);
  EXPECT_NEAR(dinp[2], -1.0 / 12, 1e-15);
}

TEST(Softmax, LargeLogitsDoNotOverflow) {
  // [1000 1000 -1000]: exp(1000) overflows unless the row maximum is subtracted first.
  std::vector<double> inp = {1000, 1000, -1000}, out(3);
  softmax_forward<double>(view(out, {1, 3}), const_view(inp, {1, 3}));
  EXPECT_EQ(out, (std::vector<double>{0.5, 0.5, 0.0}));
  std::vector<float> inp_f = {100, 100, 100, 100}, out_f(4);
  softmax_forward<float>(view(out_f, {1, 4}), const_view(inp_f, {1, 4}));
  EXPECT_EQ(out_f, (std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f}));
}

struct SoftmaxShape {
  int64_t rows, columns;
};

class SoftmaxTest : public ::testing::TestWithParam<SoftmaxShape> {};

TEST_P(SoftmaxTest, ShiftInvariantAndNormalised) {
  const auto [m, n] = GetParam();
  std::vector<double> inp = random_uniform(m * n, 71, -3, 3), shifted = inp;
  for (double& x : shifted) x += 5.0;
  std::vector<double> out(inp.size()), out_shifted(inp.size());
  softmax_forward<double>(view(out, {m, n}), const_view(inp, {m, n}));
  softmax_forward<double>(view(out_shifted, {m, n}), const_view(shifted, {m, n}));
  EXPECT_LT(max_scaled_difference(out_shifted, out), 1e-14);
  for (int64_t r = 0; r < m; ++r) {
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) sum += out[static_cast<size_t>(r * n + j)];
    EXPECT_NEAR(sum, 1.0, 1e-14);
  }
}

TEST_P(SoftmaxTest, GradientMatchesCentralDifferences) {
  const auto [m, n] = GetParam();
  std::vector<double> inp = random_uniform(m * n, 72, -3, 3), dout = random_uniform(m * n, 73);
  std::vector<double> out(inp.size()), dinp(inp.size());
  auto objective = [&] {
    softmax_forward<double>(view(out, {m, n}), const_view(inp, {m, n}));
    return weighted_sum(out.data(), dout);
  };
  objective();
  softmax_backward<double>(view(dinp, {m, n}), const_view(dout, {m, n}), const_view(out, {m, n}));
  GradCheckResult result = check_gradients(objective, {{"inp", inp.data(), dinp.data(), m * n}});
  EXPECT_TRUE(result.passed) << result.report;
}

TEST_P(SoftmaxTest, FloatMatchesDouble) {
  const auto [m, n] = GetParam();
  std::vector<double> inp = random_uniform(m * n, 74, -3, 3), out(inp.size());
  std::vector<float> inp_f = convert<float>(inp), out_f(inp.size());
  softmax_forward<double>(view(out, {m, n}), const_view(inp, {m, n}));
  softmax_forward<float>(view(out_f, {m, n}), const_view(inp_f, {m, n}));
  EXPECT_LT(max_scaled_difference(out_f, out), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxTest,
                         ::testing::Values(SoftmaxShape{1, 1}, SoftmaxShape{3, 7},
                                           SoftmaxShape{7, 3}, SoftmaxShape{1, 33},
                                           SoftmaxShape{4, 16}));

}  // namespace
}  // namespace attnlab::test
