// The gradient checker itself: it accepts exact gradients, rejects wrong ones and names them,
// restores the values it perturbs, and samples evenly when asked to.
#include "common/gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/tensor_testing.h"

namespace attnlab::test {
namespace {

// f(x, y) = sum_i x_i^3 + sin(x_0) * y_0 * y_1: df/dx_i = 3 x_i^2 (+ cos(x_0) y_0 y_1 for i = 0),
// df/dy_0 = sin(x_0) y_1, df/dy_1 = sin(x_0) y_0.
struct CubicProblem {
  std::vector<double> x = random_uniform(7, 1);
  std::vector<double> y = random_uniform(2, 2);
  double objective() const {
    double sum = std::sin(x[0]) * y[0] * y[1];
    for (double value : x) sum += value * value * value;
    return sum;
  }
  std::vector<double> dx() const {
    std::vector<double> grad(x.size());
    for (size_t i = 0; i < x.size(); ++i) grad[i] = 3.0 * x[i] * x[i];
    grad[0] += std::cos(x[0]) * y[0] * y[1];
    return grad;
  }
  std::vector<double> dy() const { return {std::sin(x[0]) * y[1], std::sin(x[0]) * y[0]}; }
};

TEST(GradCheck, AcceptsExactGradients) {
  CubicProblem problem;
  std::vector<double> dx = problem.dx(), dy = problem.dy();
  GradCheckResult result = check_gradients(
      [&] { return problem.objective(); },
      {{"x", problem.x.data(), dx.data(), 7}, {"y", problem.y.data(), dy.data(), 2}});
  EXPECT_TRUE(result.passed) << result.report;
  EXPECT_LT(result.max_error, 1e-8) << result.worst;
  EXPECT_EQ(result.checked, 9);
}

TEST(GradCheck, RejectsAndNamesAWrongElement) {
  CubicProblem problem;
  std::vector<double> dx = problem.dx(), dy = problem.dy();
  dy[1] *= 1.001;  // a 0.1% error gives an element error of about 5e-4
  GradCheckResult result = check_gradients(
      [&] { return problem.objective(); },
      {{"x", problem.x.data(), dx.data(), 7}, {"y", problem.y.data(), dy.data(), 2}});
  EXPECT_FALSE(result.passed);
  EXPECT_GT(result.max_error, 1e-4);
  EXPECT_NE(result.worst.find("y[1]"), std::string::npos) << result.worst;
  EXPECT_NE(result.report.find("FAILED 1"), std::string::npos) << result.report;
}

TEST(GradCheck, RejectsNaNGradients) {
  CubicProblem problem;
  std::vector<double> dx = problem.dx();
  dx[3] = NAN;
  GradCheckResult result =
      check_gradients([&] { return problem.objective(); }, {{"x", problem.x.data(), dx.data(), 7}});
  EXPECT_FALSE(result.passed);
  EXPECT_NE(result.worst.find("x[3]"), std::string::npos) << result.worst;
}

TEST(GradCheck, RestoresValuesBitForBit) {
  CubicProblem problem;
  const std::vector<double> before = problem.x;
  std::vector<double> dx = problem.dx();
  check_gradients([&] { return problem.objective(); }, {{"x", problem.x.data(), dx.data(), 7}});
  EXPECT_TRUE(bitwise_equal(problem.x, before));
}

TEST(GradCheck, SamplesEvenlyIncludingBothEnds) {
  // Only the checked elements carry a wrong gradient when the last one is sampled.
  CubicProblem problem;
  std::vector<double> dx = problem.dx();
  dx[6] += 1.0;
  GradCheckOptions options;
  options.max_per_tensor = 3;  // indices 0, 3, 6
  GradCheckResult result = check_gradients([&] { return problem.objective(); },
                                           {{"x", problem.x.data(), dx.data(), 7}}, options);
  EXPECT_EQ(result.checked, 3);
  EXPECT_FALSE(result.passed);
  EXPECT_NE(result.worst.find("x[6]"), std::string::npos) << result.worst;
}

TEST(GradCheck, FloorTurnsTinyDifferencesIntoAbsoluteErrors) {
  EXPECT_DOUBLE_EQ(gradient_error(2e-9, 1e-9, 1e-3), 1e-9 / 1e-3);
  EXPECT_DOUBLE_EQ(gradient_error(3.0, 1.0, 1e-3), 0.5);
  EXPECT_EQ(gradient_error(0.0, 0.0, 1e-3), 0.0);
}

}  // namespace
}  // namespace attnlab::test
