// Layer norm: hand-computed rows, the invariances its gradient must respect (shift, and scale when
// eps = 0), the gradient rule and the central-difference check over shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::layernorm_backward;
using ops::layernorm_forward;

TEST(LayerNorm, HandComputed) {
  // eps = 0. Row 0: x = [1 3]: mean 2, var 1, xhat = [-1 1];
  //   weight [2 3], bias [0.5 -0.5] -> out = [-2+0.5, 3-0.5] = [-1.5 2.5].
  // Row 1: x = [5 5]... has zero variance, so row 1 is x = [0 4]: mean 2, var 4, rstd 0.5,
  //   xhat = [-1 1] -> out = [-1.5 2.5] as well.
  std::vector<double> inp = {1, 3, 0, 4}, weight = {2, 3}, bias = {0.5, -0.5};
  std::vector<double> out(4), mean(2), rstd(2);
  layernorm_forward<double>(view(out, {2, 2}), view(mean, {2}), view(rstd, {2}),
                            const_view(inp, {2, 2}), const_view(weight, {2}), const_view(bias, {2}),
                            0.0);
  EXPECT_EQ(out, (std::vector<double>{-1.5, 2.5, -1.5, 2.5}));
  EXPECT_EQ(mean, (std::vector<double>{2, 2}));
  EXPECT_EQ(rstd, (std::vector<double>{1, 0.5}));
  // dout = [[1 0] [1 0]]: g = dout * weight = [2 0]; mean(g) = 1; mean(g xhat) = -1;
  //   dx = rstd * (g - 1 - xhat * (-1)) = rstd * ([2 0] - 1 + [-1 1]) = rstd * [0 0] = 0
  // (the output of a two-element row is +-weight whatever x is, so no gradient reaches x).
  //   dweight += sum_m dout * xhat = [-1-1, 0] = [-2 0]; dbias += [2 0]; both start at 1.
  std::vector<double> dout = {1, 0, 1, 0}, dinp(4, 9.0), dweight(2, 1.0), dbias(2, 1.0);
  layernorm_backward<double>(view(dinp, {2, 2}), view(dweight, {2}), view(dbias, {2}),
                             const_view(dout, {2, 2}), const_view(inp, {2, 2}),
                             const_view(weight, {2}), const_view(mean, {2}), const_view(rstd, {2}));
  EXPECT_EQ(dinp, (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(dweight, (std::vector<double>{-1, 1}));
  EXPECT_EQ(dbias, (std::vector<double>{3, 1}));
}

TEST(LayerNorm, HandComputedFourWide) {
  // x = [0 0 4 4], eps = 0: mean 2, var 4, rstd 0.5, xhat = [-1 -1 1 1]; unit weight, zero bias.
  // dout = [1 0 0 0]: g = [1 0 0 0], mean(g) = 1/4, mean(g xhat) = -1/4,
  //   dx = 0.5 * ([1 0 0 0] - 1/4 + xhat/4) = 0.5 * [1/2, -1/2, 0, 0] = [0.25 -0.25 0 0].
  std::vector<double> inp = {0, 0, 4, 4}, weight(4, 1.0), bias(4, 0.0);
  std::vector<double> out(4), mean(1), rstd(1);
  layernorm_forward<double>(view(out, {1, 4}), view(mean, {1}), view(rstd, {1}),
                            const_view(inp, {1, 4}), const_view(weight, {4}), const_view(bias, {4}),
                            0.0);
  EXPECT_EQ(out, (std::vector<double>{-1, -1, 1, 1}));
  std::vector<double> dout = {1, 0, 0, 0}, dinp(4), dweight(4), dbias(4);
  layernorm_backward<double>(view(dinp, {1, 4}), view(dweight, {4}), view(dbias, {4}),
                             const_view(dout, {1, 4}), const_view(inp, {1, 4}),
                             const_view(weight, {4}), const_view(mean, {1}), const_view(rstd, {1}));
  EXPECT_EQ(dinp, (std::vector<double>{0.25, -0.25, 0, 0}));
}

struct LayerNormShape {
  int64_t rows, width;
};

class LayerNormTest : public ::testing::TestWithParam<LayerNormShape> {
 protected:
  void SetUp() override {
    const auto [m, d] = GetParam();
    inp = random_uniform(m * d, 41, -2.0, 3.0);
    weight = random_uniform(d, 42, 0.5, 1.5);
    bias = random_uniform(d, 43);
    dout = random_uniform(m * d, 44);
  }
  // Runs forward then backward (dinp assigned, parameter gradients from zero) in double.
  void run(double eps, std::vector<double>* dinp, std::vector<double>* dweight,
           std::vector<double>* dbias) {
    const auto [m, d] = GetParam();
    std::vector<double> out(inp.size()), mean(static_cast<size_t>(m)), rstd(mean.size());
    layernorm_forward<double>(view(out, {m, d}), view(mean, {m}), view(rstd, {m}),
                              const_view(inp, {m, d}), const_view(weight, {d}),
                              const_view(bias, {d}), eps);
    dinp->assign(inp.size(), 0.0);
    dweight->assign(weight.size(), 0.0);
    dbias->assign(bias.size(), 0.0);
    layernorm_backward<double>(view(*dinp, {m, d}), view(*dweight, {d}), view(*dbias, {d}),
                               const_view(dout, {m, d}), const_view(inp, {m, d}),
                               const_view(weight, {d}), const_view(mean, {m}),
                               const_view(rstd, {m}));
  }
  std::vector<double> inp, weight, bias, dout;
};

TEST_P(LayerNormTest, GradientMatchesCentralDifferences) {
  const auto [m, d] = GetParam();
  std::vector<double> out(inp.size()), mean(static_cast<size_t>(m)), rstd(mean.size());
  auto objective = [&] {
    layernorm_forward<double>(view(out, {m, d}), view(mean, {m}), view(rstd, {m}),
                              const_view(inp, {m, d}), const_view(weight, {d}),
                              const_view(bias, {d}));
    return weighted_sum(out.data(), dout);
  };
  std::vector<double> dinp, dweight, dbias;
  run(1e-5, &dinp, &dweight, &dbias);
  GradCheckResult result = check_gradients(objective, {{"inp", inp.data(), dinp.data(), m * d},
                                                       {"weight", weight.data(), dweight.data(), d},
                                                       {"bias", bias.data(), dbias.data(), d}});
  EXPECT_TRUE(result.passed) << result.report;
}

TEST_P(LayerNormTest, InputGradientIsShiftAndScaleInvariant) {
  // layernorm(x + c) = layernorm(x) gives sum_d dx = 0 per row; with eps = 0 also
  // layernorm(a x) = layernorm(x), which gives sum_d dx * x = 0 per row (rows of width 1 have no
  // variance to normalise by, so they keep eps).
  const auto [m, d] = GetParam();
  std::vector<double> dinp, dweight, dbias;
  run(d > 1 ? 0.0 : 1e-5, &dinp, &dweight, &dbias);
  for (int64_t r = 0; r < m; ++r) {
    double sum = 0.0, dot = 0.0;
    for (int64_t j = 0; j < d; ++j) {
      sum += dinp[static_cast<size_t>(r * d + j)];
      dot += dinp[static_cast<size_t>(r * d + j)] * inp[static_cast<size_t>(r * d + j)];
    }
    EXPECT_NEAR(sum, 0.0, 1e-12) << "row " << r;
    if (d > 1) {
      EXPECT_NEAR(dot, 0.0, 1e-12) << "row " << r;
    }
  }
}

TEST_P(LayerNormTest, GradientRule) {
  // dweight and dbias accumulate; dinp is assigned, or accumulated when `accumulate` is set.
  const auto [m, d] = GetParam();
  std::vector<double> fresh_dinp, fresh_dweight, fresh_dbias;
  run(1e-5, &fresh_dinp, &fresh_dweight, &fresh_dbias);
  std::vector<double> out(inp.size()), mean(static_cast<size_t>(m)), rstd(mean.size());
  layernorm_forward<double>(view(out, {m, d}), view(mean, {m}), view(rstd, {m}),
                            const_view(inp, {m, d}), const_view(weight, {d}),
                            const_view(bias, {d}));
  for (bool accumulate : {false, true}) {
    std::vector<double> dinp(inp.size(), 0.25), dweight(weight.size(), 0.5), dbias(bias.size(), 2);
    layernorm_backward<double>(view(dinp, {m, d}), view(dweight, {d}), view(dbias, {d}),
                               const_view(dout, {m, d}), const_view(inp, {m, d}),
                               const_view(weight, {d}), const_view(mean, {m}),
                               const_view(rstd, {m}), accumulate);
    for (size_t j = 0; j < dinp.size(); ++j) {
      EXPECT_NEAR(dinp[j], fresh_dinp[j] + (accumulate ? 0.25 : 0.0), 1e-12) << j;
    }
    for (size_t j = 0; j < dweight.size(); ++j) {
      EXPECT_NEAR(dweight[j], fresh_dweight[j] + 0.5, 1e-12) << j;
      EXPECT_NEAR(dbias[j], fresh_dbias[j] + 2.0, 1e-12) << j;
    }
  }
}

TEST_P(LayerNormTest, FloatMatchesDouble) {
  const auto [m, d] = GetParam();
  std::vector<double> out(inp.size()), mean(static_cast<size_t>(m)), rstd(mean.size());
  layernorm_forward<double>(view(out, {m, d}), view(mean, {m}), view(rstd, {m}),
                            const_view(inp, {m, d}), const_view(weight, {d}),
                            const_view(bias, {d}));
  std::vector<float> inp_f = convert<float>(inp), weight_f = convert<float>(weight),
                     bias_f = convert<float>(bias), out_f(inp.size()), mean_f(mean.size()),
                     rstd_f(mean.size());
  layernorm_forward<float>(view(out_f, {m, d}), view(mean_f, {m}), view(rstd_f, {m}),
                           const_view(inp_f, {m, d}), const_view(weight_f, {d}),
                           const_view(bias_f, {d}));
  EXPECT_LT(max_scaled_difference(out_f, out), 1e-5);
}

TEST_P(LayerNormTest, FloatBackwardMatchesDoubleWhateverDinpHeld) {
  // The float rows run as vector loops (16 or 8 lanes and a tail); an assigned dinp must not
  // depend on what the buffer held, NaN included, and an accumulated one adds to it.
  const auto [m, d] = GetParam();
  std::vector<double> dinp, dweight, dbias;
  run(1e-5, &dinp, &dweight, &dbias);
  std::vector<float> inp_f = convert<float>(inp), weight_f = convert<float>(weight),
                     bias_f = convert<float>(bias), dout_f = convert<float>(dout),
                     out_f(inp.size()), mean_f(static_cast<size_t>(m)), rstd_f(mean_f.size());
  layernorm_forward<float>(view(out_f, {m, d}), view(mean_f, {m}), view(rstd_f, {m}),
                           const_view(inp_f, {m, d}), const_view(weight_f, {d}),
                           const_view(bias_f, {d}));
  for (bool accumulate : {false, true}) {
    std::vector<float> dinp_f(inp.size(), accumulate ? 0.25f : std::nanf("")),
        dweight_f(weight.size(), 0.0f), dbias_f(bias.size(), 0.0f);
    layernorm_backward<float>(view(dinp_f, {m, d}), view(dweight_f, {d}), view(dbias_f, {d}),
                              const_view(dout_f, {m, d}), const_view(inp_f, {m, d}),
                              const_view(weight_f, {d}), const_view(mean_f, {m}),
                              const_view(rstd_f, {m}), accumulate);
    std::vector<double> expected = dinp;
    if (accumulate) {
      for (double& value : expected) value += 0.25;
    }
    EXPECT_LT(max_scaled_difference(dinp_f, expected), 1e-5) << "accumulate " << accumulate;
    EXPECT_LT(max_scaled_difference(dweight_f, dweight), 1e-5);
    EXPECT_LT(max_scaled_difference(dbias_f, dbias), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LayerNormTest,
                         ::testing::Values(LayerNormShape{1, 2}, LayerNormShape{3, 7},
                                           LayerNormShape{7, 3}, LayerNormShape{1, 1},
                                           LayerNormShape{4, 16}, LayerNormShape{5, 33},
                                           LayerNormShape{3, 64}, LayerNormShape{2, 67}));

}  // namespace
}  // namespace attnlab::test
