// Softmax over the last axis and its gradient dx = y * (dy - sum(dy * y)), and the row kernels
// that attention's masked rows share.
// Legend: M rows, N columns.
//
// Speed: every row pass is a branch-free `omp simd` loop; float rows take their exponentials
// from exp_poly (8 lanes in the AVX2 clone) instead of a scalar libm call, which took 8% of a
// table3-scale training step inside attention. Double rows (the gradient checks) keep libm's exp
// and the sequential order of the sums.
#include <algorithm>
#include <cmath>

#include "core/ops/exp_poly.h"
#include "core/ops/ops.h"

namespace attnlab::ops {

// row (N) <- softmax over its first `limit` logits, with padded keys (padding[s] != 0; padding
// may be null) and keys from `limit` on at exactly 0; a row with no visible key becomes zeros.
__attribute__((target_clones("arch=x86-64-v3", "default"))) void softmax_row(float* row,
                                                                             const uint8_t* padding,
                                                                             int64_t limit,
                                                                             int64_t n) {
  if (padding != nullptr) {
#pragma omp simd
    for (int64_t s = 0; s < limit; ++s) row[s] = padding[s] != 0 ? -INFINITY : row[s];
  }
  float max_logit = -INFINITY;
#pragma omp simd reduction(max : max_logit)
  for (int64_t s = 0; s < limit; ++s) max_logit = row[s] > max_logit ? row[s] : max_logit;
  for (int64_t s = limit; s < n; ++s) row[s] = 0.0f;
  if (max_logit == -INFINITY) {  // every key hidden: a well-defined zero row
    for (int64_t s = 0; s < limit; ++s) row[s] = 0.0f;
    return;
  }
  // exp_poly(-inf) = 0 exactly, so padded keys need no second select.
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t s = 0; s < limit; ++s) {
    const float e = exp_poly(row[s] - max_logit);
    row[s] = e;
    sum += e;
  }
  const float inv_sum = 1.0f / sum;
#pragma omp simd
  for (int64_t s = 0; s < limit; ++s) row[s] *= inv_sum;
}

void softmax_row(double* row, const uint8_t* padding, int64_t limit, int64_t n) {
  double max_logit = -INFINITY;
  for (int64_t s = 0; s < limit; ++s) {
    if ((padding == nullptr || padding[s] == 0) && row[s] > max_logit) max_logit = row[s];
  }
  for (int64_t s = limit; s < n; ++s) row[s] = 0.0;
  if (max_logit == -INFINITY) {
    for (int64_t s = 0; s < limit; ++s) row[s] = 0.0;
    return;
  }
  double sum = 0.0;
  for (int64_t s = 0; s < limit; ++s) {
    row[s] = padding == nullptr || padding[s] == 0 ? std::exp(row[s] - max_logit) : 0.0;
    sum += row[s];
  }
  const double inv_sum = 1.0 / sum;
  for (int64_t s = 0; s < limit; ++s) row[s] *= inv_sum;
}

// g (N) <- p * (g - sum(g * p)): the softmax's backward pass; hidden keys have p = 0 and get 0.
__attribute__((target_clones("arch=x86-64-v3", "default"))) void softmax_backward_row(
    float* g, const float* p, int64_t n) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (int64_t s = 0; s < n; ++s) dot += g[s] * p[s];
#pragma omp simd
  for (int64_t s = 0; s < n; ++s) g[s] = p[s] * (g[s] - dot);
}

void softmax_backward_row(double* g, const double* p, int64_t n) {
  double dot = 0.0;
  for (int64_t s = 0; s < n; ++s) dot += g[s] * p[s];
  for (int64_t s = 0; s < n; ++s) g[s] = p[s] * (g[s] - dot);
}

template <typename T>
void softmax_forward(TensorView<T> out, TensorView<const T> inp) {
  check_shape(out.shape(), inp.shape(), "softmax output");
  const int64_t columns = inp.dim(inp.shape().rank() - 1);
  const int64_t rows = inp.numel() / columns;
  for (int64_t m = 0; m < rows; ++m) {
    T* y = out.data() + m * columns;
    const T* x = inp.data() + m * columns;
    if (y != x) std::copy_n(x, columns, y);  // the row kernel works in place
    softmax_row(y, nullptr, columns, columns);
  }
}

template <typename T>
void softmax_backward(TensorView<T> dinp, TensorView<const T> dout, TensorView<const T> out) {
  check_shape(dinp.shape(), out.shape(), "softmax dinp");
  check_shape(dout.shape(), out.shape(), "softmax dout");
  const int64_t columns = out.dim(out.shape().rank() - 1);
  const int64_t rows = out.numel() / columns;
  for (int64_t m = 0; m < rows; ++m) {
    T* dx = dinp.data() + m * columns;
    const T* dy = dout.data() + m * columns;
    if (dx != dy) std::copy_n(dy, columns, dx);  // the row kernel works in place
    softmax_backward_row(dx, out.data() + m * columns, columns);
  }
}

template void softmax_forward<float>(TensorView<float>, TensorView<const float>);
template void softmax_forward<double>(TensorView<double>, TensorView<const double>);
template void softmax_backward<float>(TensorView<float>, TensorView<const float>,
                                      TensorView<const float>);
template void softmax_backward<double>(TensorView<double>, TensorView<const double>,
                                       TensorView<const double>);

}  // namespace attnlab::ops
