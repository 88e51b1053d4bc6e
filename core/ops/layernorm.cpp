// Layer norm over the last axis: y = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + eps).
// Legend: M rows, D width.
#include <cmath>

#include "core/ops/ops.h"

namespace attnlab::ops {
namespace {

// One row forward: two passes in double, the mean first, then the centred variance (stable for
// large means). The sums are `omp simd` reductions: double partial sums per lane, so the order of
// the additions (not their precision) depends on the vector width.
template <typename T>
inline __attribute__((always_inline)) void forward_row_body(T* y, T& mean, T& rstd, const T* x,
                                                            const T* weight, const T* bias,
                                                            int64_t width, double eps) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t d = 0; d < width; ++d) sum += x[d];
  const double mu = sum / static_cast<double>(width);
  double squares = 0.0;
#pragma omp simd reduction(+ : squares)
  for (int64_t d = 0; d < width; ++d) squares += (x[d] - mu) * (x[d] - mu);
  const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(width) + eps);
#pragma omp simd
  for (int64_t d = 0; d < width; ++d) {
    y[d] = static_cast<T>((x[d] - mu) * inv_std) * weight[d] + bias[d];
  }
  mean = static_cast<T>(mu);
  rstd = static_cast<T>(inv_std);
}

// One row backward (dx only): with xhat = (x - mean) rstd and g = dy weight,
//   dx = rstd (g - mean(g) - xhat mean(g xhat)), added to dx when accumulating.
template <typename T>
inline __attribute__((always_inline)) void backward_row_body(T* dx, const T* dy, const T* x,
                                                             const T* weight, T mu, T inv_std,
                                                             int64_t width, bool accumulate) {
  double mean_g = 0.0;
  double mean_g_xhat = 0.0;
#pragma omp simd reduction(+ : mean_g, mean_g_xhat)
  for (int64_t d = 0; d < width; ++d) {
    const double g = static_cast<double>(dy[d]) * weight[d];
    mean_g += g;
    mean_g_xhat += g * (x[d] - mu) * inv_std;
  }
  mean_g /= static_cast<double>(width);
  mean_g_xhat /= static_cast<double>(width);
#pragma omp simd
  for (int64_t d = 0; d < width; ++d) {
    const double xhat = (x[d] - mu) * inv_std;
    const double g = static_cast<double>(dy[d]) * weight[d];
    const T value = static_cast<T>(inv_std * (g - mean_g - xhat * mean_g_xhat));
    // A select, not 0 * dx: dx may hold anything (NaN) when not accumulating.
    dx[d] = accumulate ? dx[d] + value : value;
  }
}

// Non-template clones per type (clang, and so clang-tidy, refuses target_clones on a template).
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void forward_row(
    float* y, float& mean, float& rstd, const float* x, const float* weight, const float* bias,
    int64_t width, double eps) {
  forward_row_body(y, mean, rstd, x, weight, bias, width, eps);
}

void forward_row(double* y, double& mean, double& rstd, const double* x, const double* weight,
                 const double* bias, int64_t width, double eps) {
  forward_row_body(y, mean, rstd, x, weight, bias, width, eps);
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void backward_row(
    float* dx, const float* dy, const float* x, const float* weight, float mu, float inv_std,
    int64_t width, bool accumulate) {
  backward_row_body(dx, dy, x, weight, mu, inv_std, width, accumulate);
}

void backward_row(double* dx, const double* dy, const double* x, const double* weight, double mu,
                  double inv_std, int64_t width, bool accumulate) {
  backward_row_body(dx, dy, x, weight, mu, inv_std, width, accumulate);
}

}  // namespace

template <typename T>
void layernorm_forward(TensorView<T> out, TensorView<T> mean, TensorView<T> rstd,
                       TensorView<const T> inp, TensorView<const T> weight,
                       TensorView<const T> bias, T eps) {
  const int64_t width = weight.numel();
  const int64_t rows = inp.numel() / width;
  check_shape(inp.shape(), Shape({rows, width}), "layernorm input");
  check_shape(out.shape(), Shape({rows, width}), "layernorm output");
  check_shape(bias.shape(), weight.shape(), "layernorm bias");
  check_shape(mean.shape(), Shape({rows}), "layernorm mean");
  check_shape(rstd.shape(), Shape({rows}), "layernorm rstd");
#pragma omp parallel for schedule(guided) if (rows * width >= kParallelMinElements)
  for (int64_t m = 0; m < rows; ++m) {
    forward_row(out.data() + m * width, mean[m], rstd[m], inp.data() + m * width, weight.data(),
                bias.data(), width, static_cast<double>(eps));
  }
}

// With xhat = (x - mean) * rstd and g = dy * weight:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dweight += sum_m dy * xhat,  dbias += sum_m
//   dy.
template <typename T>
void layernorm_backward(TensorView<T> dinp, TensorView<T> dweight, TensorView<T> dbias,
                        TensorView<const T> dout, TensorView<const T> inp,
                        TensorView<const T> weight, TensorView<const T> mean,
                        TensorView<const T> rstd, bool accumulate) {
  const int64_t width = weight.numel();
  const int64_t rows = inp.numel() / width;
  check_shape(dout.shape(), Shape({rows, width}), "layernorm dout");
  check_shape(dinp.shape(), Shape({rows, width}), "layernorm dinp");
  check_shape(dweight.shape(), weight.shape(), "layernorm dweight");
  check_shape(dbias.shape(), weight.shape(), "layernorm dbias");
#pragma omp parallel for schedule(guided) if (rows * width >= kParallelMinElements)
  for (int64_t m = 0; m < rows; ++m) {
    backward_row(dinp.data() + m * width, dout.data() + m * width, inp.data() + m * width,
                 weight.data(), mean[m], rstd[m], width, accumulate);
  }
  // Parameter gradients: column sums, sequential over rows for a deterministic order.
  for (int64_t m = 0; m < rows; ++m) {
    const T* x = inp.data() + m * width;
    const T* dy = dout.data() + m * width;
    for (int64_t d = 0; d < width; ++d) {
      dweight[d] += dy[d] * (x[d] - mean[m]) * rstd[m];
      dbias[d] += dy[d];
    }
  }
}

template void layernorm_forward<float>(TensorView<float>, TensorView<float>, TensorView<float>,
                                       TensorView<const float>, TensorView<const float>,
                                       TensorView<const float>, float);
template void layernorm_forward<double>(TensorView<double>, TensorView<double>, TensorView<double>,
                                        TensorView<const double>, TensorView<const double>,
                                        TensorView<const double>, double);
template void layernorm_backward<float>(TensorView<float>, TensorView<float>, TensorView<float>,
                                        TensorView<const float>, TensorView<const float>,
                                        TensorView<const float>, TensorView<const float>,
                                        TensorView<const float>, bool);
template void layernorm_backward<double>(TensorView<double>, TensorView<double>, TensorView<double>,
                                         TensorView<const double>, TensorView<const double>,
                                         TensorView<const double>, TensorView<const double>,
                                         TensorView<const double>, bool);

}  // namespace attnlab::ops
