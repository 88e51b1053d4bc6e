// exp_poly against std::exp in double: ulp error over the whole float range it covers (dense and
// at the edges of its range reduction), subnormal and overflowing results, and special values.
#include "core/ops/exp_poly.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace attnlab::test {
namespace {

using ops::exp_poly;

// Distance in units in the last place between two finite, non-negative floats.
int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  return ia > ib ? static_cast<int64_t>(ia) - ib : static_cast<int64_t>(ib) - ia;
}

// The correctly rounded float exp (double's exp is accurate far beyond float's precision).
float reference_exp(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }

TEST(ExpPoly, WithinOneUlpOverTheNormalRange) {
  // Every 97th float step from -87.3 (exp = FLT_MIN) to 88.7 (just below FLT_MAX), about 3e5
  // points, plus exact multiples of ln 2 / 2 where the range reduction switches n.
  std::vector<float> points;
  for (float x = -87.3f; x < 88.7f; x += 5.8e-4f) points.push_back(x);
  for (int k = -250; k <= 255; ++k) {
    const float x = static_cast<float>(k * 0.34657359027997264);
    points.push_back(std::nextafter(x, -100.0f));
    points.push_back(x);
    points.push_back(std::nextafter(x, 100.0f));
  }
  int64_t worst = 0;
  float worst_x = 0.0f;
  for (float x : points) {
    const float expected = reference_exp(x);
    if (!(expected >= std::numeric_limits<float>::min()) || std::isinf(expected)) continue;
    const int64_t ulps = ulp_distance(exp_poly(x), expected);
    if (ulps > worst) {
      worst = ulps;
      worst_x = x;
    }
  }
  EXPECT_LE(worst, 1) << "at x = " << worst_x << ": exp_poly " << exp_poly(worst_x) << ", exp "
                      << reference_exp(worst_x);
}

TEST(ExpPoly, SmallArgumentsAndExactValues) {
  EXPECT_EQ(exp_poly(0.0f), 1.0f);
  EXPECT_EQ(exp_poly(-0.0f), 1.0f);
  for (float x : {1e-8f, -1e-8f, 1e-4f, -1e-4f, 0.5f, -0.5f, 1.0f, -1.0f, 10.0f, -10.0f}) {
    EXPECT_LE(ulp_distance(exp_poly(x), reference_exp(x)), 2) << x;
  }
}

TEST(ExpPoly, SubnormalResultsKeepTheirAbsoluteAccuracy) {
  // Below -87.34 exp is subnormal: its spacing is 2^-149, so the error must stay within a couple
  // of those (a flush to zero would be off by up to 2^-126 = 8.4e6 spacings).
  const double spacing = std::ldexp(1.0, -149);
  for (float x = -87.5f; x > -104.5f; x -= 1.3e-3f) {
    const double error = std::fabs(static_cast<double>(exp_poly(x)) - std::exp(double{x}));
    ASSERT_LE(error, 1.5 * spacing) << "at x = " << x;
  }
  EXPECT_GT(exp_poly(-100.0f), 0.0f);  // exp(-100) = 3.7e-44 = 26 * 2^-149
  EXPECT_EQ(exp_poly(-104.0f), 0.0f);  // 6.8e-46, below half the smallest subnormal
  EXPECT_EQ(exp_poly(-1000.0f), 0.0f);
  EXPECT_EQ(exp_poly(-std::numeric_limits<float>::infinity()), 0.0f);
}

TEST(ExpPoly, OverflowAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_poly(88.75f), inf);  // exp(88.75) = 3.4e38 > FLT_MAX rounds to +inf
  EXPECT_EQ(exp_poly(100.0f), inf);
  EXPECT_EQ(exp_poly(inf), inf);
  EXPECT_TRUE(std::isnan(exp_poly(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isfinite(exp_poly(88.7f)));
}

TEST(ExpPoly, AVectorisedLoopGivesTheScalarValues) {
  // The same expression inside an `omp simd` loop (the way the ops call it) and one at a time.
  std::vector<float> x(1037), vectorised(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = -90.0f + 0.17f * static_cast<float>(i);
  const float* in = x.data();
  float* out = vectorised.data();
  const int64_t n = static_cast<int64_t>(x.size());
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = exp_poly(in[i]);
  for (size_t i = 0; i < x.size(); ++i) {
    volatile float scalar_input = x[i];
    EXPECT_EQ(vectorised[i], exp_poly(scalar_input)) << x[i];
  }
}

}  // namespace
}  // namespace attnlab::test
