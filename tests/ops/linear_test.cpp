// linear: a hand-computed case, the gradient rule (accumulate flag) and the central-difference
// check over shapes with odd sizes, with and without bias, in float and double.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/bf16_precision.h"
#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"
#include "core/tensor/blas.h"

namespace attnlab::test {
namespace {

using ops::linear_backward;
using ops::linear_forward;

TEST(Linear, HandComputed) {
  // inp (1,2) = [1 2], W (3,2) = [[1 0] [0 1] [1 1]], b = [0.5 -1 0]
  //   out = inp W^T + b = [1+0.5, 2-1, 3+0] = [1.5 1 3]
  std::vector<double> inp = {1, 2}, weight = {1, 0, 0, 1, 1, 1}, bias = {0.5, -1, 0};
  std::vector<double> out(3);
  linear_forward<double>(view(out, {1, 3}), const_view(inp, {1, 2}), const_view(weight, {3, 2}),
                         const_view(bias, {3}));
  EXPECT_EQ(out, (std::vector<double>{1.5, 1, 3}));
  // dout = [1 2 3]: dinp = dout W = [1+3, 2+3] = [4 5]; dW = dout^T inp = [[1 2] [2 4] [3 6]];
  // db = dout.
  std::vector<double> dout = {1, 2, 3}, dinp(2), dweight(6), dbias(3);
  linear_backward<double>(view(dinp, {1, 2}), view(dweight, {3, 2}), view(dbias, {3}),
                          const_view(dout, {1, 3}), const_view(inp, {1, 2}),
                          const_view(weight, {3, 2}));
  EXPECT_EQ(dinp, (std::vector<double>{4, 5}));
  EXPECT_EQ(dweight, (std::vector<double>{1, 2, 2, 4, 3, 6}));
  EXPECT_EQ(dbias, (std::vector<double>{1, 2, 3}));
}

// In bf16 linear_backward rounds its output gradient once for both products
// (blas::Bf16OperandReuse): its gradients are bit for bit those of the two products called one by
// one, and the elements it rounds are dout's once, W's and inp's.
TEST(Linear, Bf16BackwardRoundsTheOutputGradientOnce) {
  const std::string reason = blas::bf16_unsupported_reason();
  if (!reason.empty()) GTEST_SKIP() << "bf16 products cannot run here: " << reason;
  const int64_t rows = 37, in = 29, out = 41;
  const std::vector<float> inp = convert<float>(random_uniform(rows * in, 3)),
                           weight = convert<float>(random_uniform(out * in, 4)),
                           dout = convert<float>(random_uniform(rows * out, 5));
  std::vector<float> dinp(static_cast<size_t>(rows * in)), dweight(static_cast<size_t>(out * in)),
      dbias(static_cast<size_t>(out));
  std::vector<float> dinp_alone(dinp.size()), dweight_alone(dweight.size());
  const Bf16PrecisionScope bf16_precision;
  const int64_t before = blas::Bf16OperandReuse::rounded_elements();
  linear_backward<float>(view(dinp, {rows, in}), view(dweight, {out, in}), view(dbias, {out}),
                         const_view(dout, {rows, out}), const_view(inp, {rows, in}),
                         const_view(weight, {out, in}));
  const int64_t rounded = blas::Bf16OperandReuse::rounded_elements() - before;
  blas::gemm<float>(false, false, rows, in, out, 1.0f, dout.data(), out, weight.data(), in, 0.0f,
                    dinp_alone.data(), in);
  blas::gemm<float>(true, false, out, in, rows, 1.0f, dout.data(), out, inp.data(), in, 1.0f,
                    dweight_alone.data(), in);
  EXPECT_EQ(rounded, rows * out + out * in + rows * in);
  EXPECT_EQ(dinp, dinp_alone);
  EXPECT_EQ(dweight, dweight_alone);
}

TEST(Linear, ShapeMismatchNamesBothShapes) {
  std::vector<double> inp(6), weight(12), out(6);
  // W (4,3) expects inp (M,3); inp is (2,3) but out is given as (2,3) instead of (2,4).
  try {
    linear_forward<double>(view(out, {2, 3}), const_view(inp, {2, 3}), const_view(weight, {4, 3}),
                           {});
    FAIL() << "no error for a (2,3) output of a (4,3) weight";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("(2,3)"), std::string::npos) << message;
    EXPECT_NE(message.find("(2,4)"), std::string::npos) << message;
  }
}

struct LinearShape {
  int64_t rows, in_features, out_features;
  bool bias;
};

std::string linear_name(const ::testing::TestParamInfo<LinearShape>& info) {
  const LinearShape& s = info.param;
  return "M" + std::to_string(s.rows) + "_I" + std::to_string(s.in_features) + "_O" +
         std::to_string(s.out_features) + (s.bias ? "_bias" : "_nobias");
}

// One linear layer with fixed random inputs, run in T, every result returned in double.
struct LinearRun {
  std::vector<double> out, dinp, dweight, dbias;
};

template <typename T>
LinearRun run_linear(const LinearShape& s, const std::vector<double>& inp,
                     const std::vector<double>& weight, const std::vector<double>& bias,
                     const std::vector<double>& dout) {
  const int64_t m = s.rows, i = s.in_features, o = s.out_features;
  std::vector<T> inp_t = convert<T>(inp), weight_t = convert<T>(weight), bias_t = convert<T>(bias),
                 dout_t = convert<T>(dout);
  std::vector<T> out(static_cast<size_t>(m * o)), dinp(static_cast<size_t>(m * i)),
      dweight(static_cast<size_t>(o * i)), dbias(static_cast<size_t>(o));
  TensorView<const T> bias_view = s.bias ? const_view(bias_t, {o}) : TensorView<const T>();
  TensorView<T> dbias_view = s.bias ? view(dbias, {o}) : TensorView<T>();
  linear_forward<T>(view(out, {m, o}), const_view(inp_t, {m, i}), const_view(weight_t, {o, i}),
                    bias_view);
  linear_backward<T>(view(dinp, {m, i}), view(dweight, {o, i}), dbias_view,
                     const_view(dout_t, {m, o}), const_view(inp_t, {m, i}),
                     const_view(weight_t, {o, i}));
  return {convert<double>(out), convert<double>(dinp), convert<double>(dweight),
          convert<double>(dbias)};
}

class LinearTest : public ::testing::TestWithParam<LinearShape> {
 protected:
  void SetUp() override {
    const LinearShape& s = GetParam();
    inp = random_uniform(s.rows * s.in_features, 11);
    weight = random_uniform(s.out_features * s.in_features, 12);
    bias = s.bias ? random_uniform(s.out_features, 13) : std::vector<double>();
    dout = random_uniform(s.rows * s.out_features, 14);
  }
  std::vector<double> inp, weight, bias, dout;
};

TEST_P(LinearTest, GradientMatchesCentralDifferences) {
  const LinearShape& s = GetParam();
  const int64_t m = s.rows, i = s.in_features, o = s.out_features;
  std::vector<double> out(static_cast<size_t>(m * o));
  auto objective = [&] {
    linear_forward<double>(view(out, {m, o}), const_view(inp, {m, i}), const_view(weight, {o, i}),
                           s.bias ? const_view(bias, {o}) : TensorView<const double>());
    return weighted_sum(out.data(), dout);
  };
  LinearRun run = run_linear<double>(s, inp, weight, bias, dout);
  std::vector<GradTensor> tensors = {{"inp", inp.data(), run.dinp.data(), m * i},
                                     {"weight", weight.data(), run.dweight.data(), o * i}};
  if (s.bias) tensors.push_back({"bias", bias.data(), run.dbias.data(), o});
  GradCheckResult result = check_gradients(objective, tensors);
  EXPECT_TRUE(result.passed) << result.report;
}

TEST_P(LinearTest, GradientRule) {
  // dweight and dbias accumulate; dinp is assigned, or accumulated when `accumulate` is set.
  const LinearShape& s = GetParam();
  const int64_t m = s.rows, i = s.in_features, o = s.out_features;
  LinearRun fresh = run_linear<double>(s, inp, weight, bias, dout);
  for (bool accumulate : {false, true}) {
    std::vector<double> dinp(static_cast<size_t>(m * i), 0.25),
        dweight(static_cast<size_t>(o * i), 0.5), dbias(static_cast<size_t>(o), -0.75);
    linear_backward<double>(
        view(dinp, {m, i}), view(dweight, {o, i}), s.bias ? view(dbias, {o}) : TensorView<double>(),
        const_view(dout, {m, o}), const_view(inp, {m, i}), const_view(weight, {o, i}), accumulate);
    for (size_t j = 0; j < dinp.size(); ++j) {
      EXPECT_NEAR(dinp[j], fresh.dinp[j] + (accumulate ? 0.25 : 0.0), 1e-12) << j;
    }
    for (size_t j = 0; j < dweight.size(); ++j) {
      EXPECT_NEAR(dweight[j], fresh.dweight[j] + 0.5, 1e-12) << j;
    }
    for (size_t j = 0; j < dbias.size(); ++j) {
      EXPECT_NEAR(dbias[j], s.bias ? fresh.dbias[j] - 0.75 : -0.75, 1e-12) << j;
    }
  }
}

TEST_P(LinearTest, FloatMatchesDouble) {
  const LinearShape& s = GetParam();
  LinearRun reference = run_linear<double>(s, inp, weight, bias, dout);
  LinearRun single = run_linear<float>(s, inp, weight, bias, dout);
  EXPECT_LT(max_scaled_difference(single.out, reference.out), 1e-5);
  EXPECT_LT(max_scaled_difference(single.dinp, reference.dinp), 1e-5);
  EXPECT_LT(max_scaled_difference(single.dweight, reference.dweight), 1e-5);
  EXPECT_LT(max_scaled_difference(single.dbias, reference.dbias), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearTest,
                         ::testing::Values(LinearShape{1, 1, 1, true}, LinearShape{1, 1, 1, false},
                                           LinearShape{3, 7, 5, true}, LinearShape{7, 3, 1, false},
                                           LinearShape{7, 1, 3, true}, LinearShape{4, 16, 8, true},
                                           LinearShape{5, 9, 7, false}),
                         linear_name);

}  // namespace
}  // namespace attnlab::test
