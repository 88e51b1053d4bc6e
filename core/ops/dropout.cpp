// Inverted dropout with a counter-based mask: element i survives iff uniform_at(key, i) >= p.
//
// Speed (issue 10): the keep test is done on the integer the uniform is made from,
//   uniform_at(key, i) >= p  <=>  mix64(key ^ mix64(i)) >> 40 >= ceil(p 2^24)
// (the uniform is that 24-bit integer times 2^-24, and p 2^24 is exact in float), so the loop is
// branch-free integer arithmetic that GCC vectorises (4 lanes of 64 bits in the AVX2 clone), and
// it runs in parallel over index ranges above kParallelMinElements: the mask is a pure function of
// the index, so the result does not depend on the thread count.
#include <cmath>

#include "core/ops/keep_or_zero.h"
#include "core/ops/ops.h"
#include "core/util/rng.h"

namespace attnlab::ops {
namespace {

// out[i] = inp[i] * keep_scale where the hash of i reaches threshold, else 0, for i in
// [begin, end). Inlined into one non-template clone per type below: clang (and so clang-tidy)
// refuses target_clones on a function template.
template <typename T>
inline __attribute__((always_inline)) void dropout_range_body(T* out, const T* inp, int64_t begin,
                                                              int64_t end, uint32_t threshold,
                                                              T keep_scale, uint64_t key) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    // 24 bits: compared as 32-bit lanes, which vectorise where a 64-bit compare would not.
    const uint32_t bits = static_cast<uint32_t>(mix64(key ^ mix64(static_cast<uint64_t>(i))) >> 40);
    out[i] = keep_or_zero(inp[i] * keep_scale, bits >= threshold);
  }
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void dropout_range(
    float* out, const float* inp, int64_t begin, int64_t end, uint32_t threshold, float keep_scale,
    uint64_t key) {
  dropout_range_body(out, inp, begin, end, threshold, keep_scale, key);
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void dropout_range(
    double* out, const double* inp, int64_t begin, int64_t end, uint32_t threshold,
    double keep_scale, uint64_t key) {
  dropout_range_body(out, inp, begin, end, threshold, keep_scale, key);
}

// The range each call handles: large enough to amortise the call, small enough to balance.
constexpr int64_t kDropoutChunk = 1 << 14;

}  // namespace

template <typename T>
void dropout_forward(TensorView<T> out, TensorView<const T> inp, float p, uint64_t key) {
  check_shape(out.shape(), inp.shape(), "dropout output");
  CHECK(p >= 0.0f && p < 1.0f) << "dropout probability must be in [0, 1), got " << p;
  const int64_t n = inp.numel();
  if (p == 0.0f) {
    if (out.data() != inp.data()) {
      for (int64_t i = 0; i < n; ++i) out[i] = inp[i];
    }
    return;
  }
  const T keep_scale = T(1) / (T(1) - static_cast<T>(p));
  // p < 1, so the threshold is at most 2^24.
  const uint32_t threshold = static_cast<uint32_t>(std::ceil(static_cast<double>(p) * 16777216.0));
  T* out_data = out.data();
  const T* inp_data = inp.data();
  const int64_t chunks = (n + kDropoutChunk - 1) / kDropoutChunk;
#pragma omp parallel for schedule(guided) if (n >= kParallelMinElements)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kDropoutChunk;
    const int64_t end = begin + kDropoutChunk < n ? begin + kDropoutChunk : n;
    dropout_range(out_data, inp_data, begin, end, threshold, keep_scale, key);
  }
}

template <typename T>
void dropout_backward(TensorView<T> dinp, TensorView<const T> dout, float p, uint64_t key) {
  // The same mask and scale: dropout is linear in its input.
  dropout_forward<T>(dinp, dout, p, key);
}

template void dropout_forward<float>(TensorView<float>, TensorView<const float>, float, uint64_t);
template void dropout_forward<double>(TensorView<double>, TensorView<const double>, float,
                                      uint64_t);
template void dropout_backward<float>(TensorView<float>, TensorView<const float>, float, uint64_t);
template void dropout_backward<double>(TensorView<double>, TensorView<const double>, float,
                                       uint64_t);

}  // namespace attnlab::ops
