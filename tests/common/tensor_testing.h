// Small tensor utilities shared by test suites: checked views, seeded random values, the
// weighted-sum objective sum(out * R) of gradient checks, float copies and element comparisons.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/util/rng.h"

namespace attnlab::test {

// Views over test vectors, checked against the shape they are given.
template <typename T>
TensorView<T> view(std::vector<T>& values, Shape shape) {
  CHECK(static_cast<int64_t>(values.size()) == shape.numel())
      << "test vector of " << values.size() << " values viewed as " << shape.str();
  return TensorView<T>(values.data(), shape);
}
template <typename T>
TensorView<const T> const_view(const std::vector<T>& values, Shape shape) {
  CHECK(static_cast<int64_t>(values.size()) == shape.numel())
      << "test vector of " << values.size() << " values viewed as " << shape.str();
  return TensorView<const T>(values.data(), shape);
}

// n values uniform in [low, high) from a fixed seed.
inline std::vector<double> random_uniform(int64_t n, uint64_t seed, double low = -1.0,
                                          double high = 1.0) {
  Rng rng(seed);
  std::vector<double> values(static_cast<size_t>(n));
  for (double& value : values) value = rng.uniform(low, high);
  return values;
}

// n standard normal values from a fixed seed.
inline std::vector<double> random_normal(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<double> values(static_cast<size_t>(n));
  for (double& value : values) value = rng.normal();
  return values;
}

// sum_i out[i] * weights[i]: an objective whose gradient with respect to out is `weights`.
inline double weighted_sum(const double* out, const std::vector<double>& weights) {
  double sum = 0.0;
  for (size_t i = 0; i < weights.size(); ++i) sum += out[i] * weights[i];
  return sum;
}

template <typename To, typename From>
std::vector<To> convert(const std::vector<From>& values) {
  return std::vector<To>(values.begin(), values.end());
}

// max_i |a[i] - b[i]| / max(1, |b[i]|): relative for large values, absolute near zero.
template <typename A, typename B>
double max_scaled_difference(const std::vector<A>& a, const std::vector<B>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double difference = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    const double scaled = difference / std::max(1.0, std::fabs(static_cast<double>(b[i])));
    if (std::isnan(scaled) || scaled > worst) worst = scaled;
  }
  return worst;
}

// Bit-for-bit equality (distinguishes -0 from +0 and compares NaN payloads).
template <typename T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace attnlab::test
