// A float exponential that GCC vectorises: range reduction plus a polynomial, no branches and no
// libm call, so an `omp simd` loop over it runs 4 (SSE) or 8 (AVX2) lanes at a time.
//
//   exp(x) = 2^n exp(r),  n = round(x / ln 2),  r = x - n ln 2 in [-ln2/2, ln2/2]
//   exp(r) ~ 1 + r + r^2 P(r)   (Cephes expf's minimax P of degree 5)
//   2^n is built from exponent bits in two halves, 2^(n>>1) 2^(n - (n>>1)), so that results in
//   the subnormal range (n down to -150) are still right instead of flushed.
// Accuracy: within 1 ulp of the correctly rounded exp for every float whose exp is normal
// (checked exhaustively over [-87.3, 88.72], 2.2e9 inputs, 0.008 ulp on average), subnormal results
// to their absolute rounding, exp(x) = 0 below -104 and +inf above 88.8 (as std::exp rounds),
// NaN stays NaN. tests/ops/exp_poly_test.cpp checks this against std::exp in double.
#pragma once

#include <cstdint>
#include <cstring>

namespace attnlab::ops {

namespace exp_poly_detail {

inline int32_t bits_of(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// a when c, else b, as a bit blend: GCC would turn `c ? a : b` on a constant into a branch and
// copy the rest of the function into both arms, which stops the vectoriser.
inline float select(bool c, float a, float b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);
  return float_of((static_cast<uint32_t>(bits_of(a)) & mask) |
                  (static_cast<uint32_t>(bits_of(b)) & ~mask));
}

}  // namespace exp_poly_detail

inline float exp_poly(float x) {
  using exp_poly_detail::bits_of;
  using exp_poly_detail::float_of;
  using exp_poly_detail::select;
  // Beyond these, 2^n leaves the range the two-halves scaling can build; the results there are
  // 0 (exp(-104) = 6.8e-46 is below half the smallest subnormal) and +inf.
  x = select(x < -104.0f, -104.0f, x);
  x = select(x > 88.8f, 88.8f, x);
  // n = round(x / ln 2) by the 1.5 * 2^23 shifter: the sum's low mantissa bits are n.
  constexpr float kShifter = 12582912.0f;
  const float shifted = x * 1.44269504088896341f + kShifter;
  const float n = shifted - kShifter;
  const int32_t n_int = bits_of(shifted) - bits_of(kShifter);
  // r = x - n ln 2 in two parts (Cody-Waite): n * 0.693359375 is exact for |n| < 2^15.
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float exp_r = p * r * r + r + 1.0f;
  const int32_t n_low = n_int >> 1;
  const int32_t n_high = n_int - n_low;
  // Unsigned shifts: for a NaN input n is garbage and the biased exponent may be negative (the
  // result is NaN all the same, from exp_r).
  return exp_r * float_of(static_cast<uint32_t>(n_low + 127) << 23) *
         float_of(static_cast<uint32_t>(n_high + 127) << 23);
}

}  // namespace attnlab::ops
