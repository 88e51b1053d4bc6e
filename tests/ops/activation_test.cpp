// The FFN activations' table (core/ops/activation.h): every activation it lists passes the
// central-difference gradient check through the table's own forward, backward and choice of what
// backward reads, so a new row is checked without a test of its own.
#include "core/ops/activation.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"

namespace attnlab::test {
namespace {

TEST(Activation, EveryActivationOfTheTableMatchesCentralDifferences) {
  const Shape shape({5, 7});
  const int64_t n = shape.numel();
  // Away from relu's kink at 0, where its derivative is undefined: |x| >= 0.05.
  std::vector<double> inp = random_uniform(n, 71, -3.0, 3.0);
  for (double& x : inp) x += x < 0 ? -0.05 : 0.05;
  const std::vector<double> dout = random_uniform(n, 72);
  for (FfnActivation activation : activation_names().values()) {
    SCOPED_TRACE(activation_names().name(activation));
    std::vector<double> out(static_cast<size_t>(n));
    auto objective = [&] {
      ops::activation_forward<double>(activation, view(out, shape), const_view(inp, shape));
      return weighted_sum(out.data(), dout);
    };
    objective();
    // What the model keeps for backward: the input, or the output it computed in place.
    const std::vector<double> saved = ops::activation_backward_reads_input(activation) ? inp : out;
    std::vector<double> dinp = dout;  // dinp aliases dout, as in the model
    ops::activation_backward<double>(activation, view(dinp, shape), const_view(dinp, shape),
                                     const_view(saved, shape));
    GradCheckResult result = check_gradients(objective, {{"inp", inp.data(), dinp.data(), n}});
    EXPECT_TRUE(result.passed) << result.report;
  }
}

TEST(Activation, ReluIsThePapersAndRunsInPlace) {
  EXPECT_EQ(activation_names().parse("relu"), FfnActivation::kRelu);
  EXPECT_EQ(activation_names().parse("gelu"), FfnActivation::kGelu);
  EXPECT_EQ(activation_names().values().front(), FfnActivation::kRelu);
  EXPECT_FALSE(ops::activation_backward_reads_input(FfnActivation::kRelu));  // runs in place
}

}  // namespace
}  // namespace attnlab::test
