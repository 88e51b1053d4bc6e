// Residual add: hand-computed values, aliasing, the accumulating gradient and the shape error.
#include <gtest/gtest.h>

#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::residual_backward;
using ops::residual_forward;

TEST(Residual, HandComputedAndAliased) {
  // [1 2 3] + [10 20 30] = [11 22 33]; then in place a = a + b = [21 42 63]
  std::vector<double> a = {1, 2, 3}, b = {10, 20, 30}, out(3);
  residual_forward<double>(view(out, {3}), const_view(a, {3}), const_view(b, {3}));
  EXPECT_EQ(out, (std::vector<double>{11, 22, 33}));
  residual_forward<double>(view(out, {3}), const_view(out, {3}), const_view(b, {3}));
  EXPECT_EQ(out, (std::vector<double>{21, 42, 63}));
}

TEST(Residual, GradientAccumulates) {
  // da starts at [1 1 1] (the other path's gradient), dout = [2 3 4] -> da = [3 4 5]
  std::vector<double> da = {1, 1, 1}, dout = {2, 3, 4};
  residual_backward<double>(view(da, {3}), const_view(dout, {3}));
  EXPECT_EQ(da, (std::vector<double>{3, 4, 5}));
}

TEST(Residual, ShapeMismatchNamesBothShapes) {
  std::vector<double> a(6), b(8), out(6);
  try {
    residual_forward<double>(view(out, {2, 3}), const_view(a, {2, 3}), const_view(b, {2, 4}));
    FAIL() << "(2,3) + (2,4) accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("(2,3)"), std::string::npos) << message;
    EXPECT_NE(message.find("(2,4)"), std::string::npos) << message;
  }
}

class ResidualTest : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(ResidualTest, GradientMatchesCentralDifferences) {
  // Both summands receive dout: backward run once into zeroed da and once into zeroed db.
  const Shape shape(GetParam());
  const int64_t n = shape.numel();
  std::vector<double> a = random_uniform(n, 61), b = random_uniform(n, 62),
                      dout = random_uniform(n, 63), out(static_cast<size_t>(n));
  auto objective = [&] {
    residual_forward<double>(view(out, shape), const_view(a, shape), const_view(b, shape));
    return weighted_sum(out.data(), dout);
  };
  std::vector<double> da(static_cast<size_t>(n)), db(static_cast<size_t>(n));
  residual_backward<double>(view(da, shape), const_view(dout, shape));
  residual_backward<double>(view(db, shape), const_view(dout, shape));
  GradCheckResult result =
      check_gradients(objective, {{"a", a.data(), da.data(), n}, {"b", b.data(), db.data(), n}});
  EXPECT_TRUE(result.passed) << result.report;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ResidualTest,
                         ::testing::Values(std::vector<int64_t>{1}, std::vector<int64_t>{3, 7},
                                           std::vector<int64_t>{7, 1, 3}));

}  // namespace
}  // namespace attnlab::test
