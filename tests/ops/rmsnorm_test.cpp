// RMS norm: hand-computed rows (forward and backward), the scale invariance its gradient must
// respect when eps = 0, the gradient rule and the central-difference check over shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::rmsnorm_backward;
using ops::rmsnorm_forward;

TEST(RmsNorm, HandComputed) {
  // eps = 0. Row 0: x = [1 1 1 1 1 1 1 5]: mean(x^2) = (7 + 25) / 8 = 4, r = 1/2, so
  //   y = x * r * w = [0.5 ... 0.5 2.5] * w; w = [1 ... 1 2] -> [0.5 ... 0.5 5]. (LayerNorm would
  //   centre on the mean 1.5 first.)
  // Row 1: x = [0 0 0 0 0 0 0 -4]: mean(x^2) = 2, r = 1/sqrt(2).
  std::vector<double> inp = {1, 1, 1, 1, 1, 1, 1, 5, 0, 0, 0, 0, 0, 0, 0, -4};
  std::vector<double> weight = {1, 1, 1, 1, 1, 1, 1, 2};
  std::vector<double> out(16), rstd(2);
  rmsnorm_forward<double>(view(out, {2, 8}), view(rstd, {2}), const_view(inp, {2, 8}),
                          const_view(weight, {8}), 0.0);
  EXPECT_EQ(std::vector<double>(out.begin(), out.begin() + 8),
            (std::vector<double>{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 5}));
  EXPECT_EQ(rstd[0], 0.5);
  EXPECT_DOUBLE_EQ(rstd[1], 1.0 / std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(out[15], -8.0 / std::sqrt(2.0));
  // Row 0 with dy = [0 ... 0 1]: g = dy * w = [0 ... 0 2], mean(g x) = 2 * 5 / 8 = 5/4,
  //   dx = r g - r^3 x mean(g x) = [0 ... 0 1] - x * 5/32 = [-5/32 (7 times), 1 - 25/32 = 7/32];
  //   dweight += dy * x * r = [0 ... 0 2.5]. Row 1 has dy = 0: dx = 0 and nothing added to dweight,
  //   which starts at 1.
  std::vector<double> dout(16, 0.0), dinp(16, 9.0), dweight(8, 1.0);
  dout[7] = 1;
  rmsnorm_backward<double>(view(dinp, {2, 8}), view(dweight, {8}), const_view(dout, {2, 8}),
                           const_view(inp, {2, 8}), const_view(weight, {8}), const_view(rstd, {2}));
  const double a = -5.0 / 32;
  EXPECT_EQ(std::vector<double>(dinp.begin(), dinp.begin() + 8),
            (std::vector<double>{a, a, a, a, a, a, a, 7.0 / 32}));
  EXPECT_EQ(std::vector<double>(dinp.begin() + 8, dinp.end()), std::vector<double>(8, 0.0));
  EXPECT_EQ(dweight, (std::vector<double>{1, 1, 1, 1, 1, 1, 1, 3.5}));
}

struct RmsNormShape {
  int64_t rows, width;
};

class RmsNormTest : public ::testing::TestWithParam<RmsNormShape> {
 protected:
  void SetUp() override {
    const auto [m, d] = GetParam();
    inp = random_uniform(m * d, 51, -2.0, 3.0);
    weight = random_uniform(d, 52, 0.5, 1.5);
    dout = random_uniform(m * d, 53);
  }
  // Runs forward then backward (dinp assigned, dweight from zero) in double.
  void run(double eps, std::vector<double>* dinp, std::vector<double>* dweight) {
    const auto [m, d] = GetParam();
    std::vector<double> out(inp.size()), rstd(static_cast<size_t>(m));
    rmsnorm_forward<double>(view(out, {m, d}), view(rstd, {m}), const_view(inp, {m, d}),
                            const_view(weight, {d}), eps);
    dinp->assign(inp.size(), 0.0);
    dweight->assign(weight.size(), 0.0);
    rmsnorm_backward<double>(view(*dinp, {m, d}), view(*dweight, {d}), const_view(dout, {m, d}),
                             const_view(inp, {m, d}), const_view(weight, {d}),
                             const_view(rstd, {m}));
  }
  std::vector<double> inp, weight, dout;
};

TEST_P(RmsNormTest, GradientMatchesCentralDifferences) {
  const int64_t m = GetParam().rows, d = GetParam().width;  // captured below, so not a binding
  std::vector<double> out(inp.size()), rstd(static_cast<size_t>(m));
  auto objective = [&] {
    rmsnorm_forward<double>(view(out, {m, d}), view(rstd, {m}), const_view(inp, {m, d}),
                            const_view(weight, {d}));
    return weighted_sum(out.data(), dout);
  };
  std::vector<double> dinp, dweight;
  run(1e-5, &dinp, &dweight);
  GradCheckResult result = check_gradients(
      objective,
      {{"inp", inp.data(), dinp.data(), m * d}, {"weight", weight.data(), dweight.data(), d}});
  EXPECT_TRUE(result.passed) << result.report;
}

TEST_P(RmsNormTest, InputGradientIsScaleInvariant) {
  // With eps = 0, rmsnorm(a x) = rmsnorm(x) for a > 0, which gives sum_d dx * x = 0 per row. There
  // is no shift invariance: unlike layer norm, sum_d dx is not 0.
  const auto [m, d] = GetParam();
  std::vector<double> dinp, dweight;
  run(0.0, &dinp, &dweight);
  double largest_sum = 0.0;
  for (int64_t r = 0; r < m; ++r) {
    double sum = 0.0, dot = 0.0;
    for (int64_t j = 0; j < d; ++j) {
      sum += dinp[static_cast<size_t>(r * d + j)];
      dot += dinp[static_cast<size_t>(r * d + j)] * inp[static_cast<size_t>(r * d + j)];
    }
    EXPECT_NEAR(dot, 0.0, 1e-12) << "row " << r;
    largest_sum = std::max(largest_sum, std::fabs(sum));
  }
  if (d > 1) {
    EXPECT_GT(largest_sum, 1e-6);  // rows of width 1 are +-weight: no gradient at all
  }
}

TEST_P(RmsNormTest, GradientRule) {
  // dweight accumulates; dinp is assigned, or accumulated when `accumulate` is set.
  const auto [m, d] = GetParam();
  std::vector<double> fresh_dinp, fresh_dweight;
  run(1e-5, &fresh_dinp, &fresh_dweight);
  std::vector<double> out(inp.size()), rstd(static_cast<size_t>(m));
  rmsnorm_forward<double>(view(out, {m, d}), view(rstd, {m}), const_view(inp, {m, d}),
                          const_view(weight, {d}));
  for (bool accumulate : {false, true}) {
    std::vector<double> dinp(inp.size(), 0.25), dweight(weight.size(), 0.5);
    rmsnorm_backward<double>(view(dinp, {m, d}), view(dweight, {d}), const_view(dout, {m, d}),
                             const_view(inp, {m, d}), const_view(weight, {d}),
                             const_view(rstd, {m}), accumulate);
    for (size_t j = 0; j < dinp.size(); ++j) {
      EXPECT_NEAR(dinp[j], fresh_dinp[j] + (accumulate ? 0.25 : 0.0), 1e-12) << j;
    }
    for (size_t j = 0; j < dweight.size(); ++j) {
      EXPECT_NEAR(dweight[j], fresh_dweight[j] + 0.5, 1e-12) << j;
    }
  }
}

TEST_P(RmsNormTest, FloatMatchesDouble) {
  const auto [m, d] = GetParam();
  std::vector<double> out(inp.size()), rstd(static_cast<size_t>(m));
  rmsnorm_forward<double>(view(out, {m, d}), view(rstd, {m}), const_view(inp, {m, d}),
                          const_view(weight, {d}));
  std::vector<float> inp_f = convert<float>(inp), weight_f = convert<float>(weight),
                     out_f(inp.size()), rstd_f(rstd.size());
  rmsnorm_forward<float>(view(out_f, {m, d}), view(rstd_f, {m}), const_view(inp_f, {m, d}),
                         const_view(weight_f, {d}));
  EXPECT_LT(max_scaled_difference(out_f, out), 1e-5);
  std::vector<double> dinp, dweight;
  run(1e-5, &dinp, &dweight);
  std::vector<float> dout_f = convert<float>(dout), dinp_f(inp.size()), dweight_f(weight.size());
  rmsnorm_backward<float>(view(dinp_f, {m, d}), view(dweight_f, {d}), const_view(dout_f, {m, d}),
                          const_view(inp_f, {m, d}), const_view(weight_f, {d}),
                          const_view(rstd_f, {m}));
  EXPECT_LT(max_scaled_difference(dinp_f, dinp), 1e-5);
  EXPECT_LT(max_scaled_difference(dweight_f, dweight), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RmsNormTest,
                         ::testing::Values(RmsNormShape{1, 2}, RmsNormShape{3, 7},
                                           RmsNormShape{7, 3}, RmsNormShape{1, 1},
                                           RmsNormShape{4, 16}, RmsNormShape{5, 33}));

}  // namespace
}  // namespace attnlab::test
