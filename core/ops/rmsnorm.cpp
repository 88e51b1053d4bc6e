// RMS norm over the last axis: y = x * r * weight, r = 1/sqrt(mean(x^2) + eps) (Zhang & Sennrich
// 2019): layer norm without the mean subtraction and the bias.
// Legend: M rows, D width.
#include <cmath>

#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
void rmsnorm_forward(TensorView<T> out, TensorView<T> rstd, TensorView<const T> inp,
                     TensorView<const T> weight, T eps) {
  const int64_t width = weight.numel();
  const int64_t rows = inp.numel() / width;
  check_shape(inp.shape(), Shape({rows, width}), "rmsnorm input");
  check_shape(out.shape(), Shape({rows, width}), "rmsnorm output");
  check_shape(rstd.shape(), Shape({rows}), "rmsnorm rstd");
#pragma omp parallel for schedule(guided) if (rows * width >= kParallelMinElements)
  for (int64_t m = 0; m < rows; ++m) {
    const T* x = inp.data() + m * width;
    T* y = out.data() + m * width;
    // The mean square in double, as layer norm's variance.
    double squares = 0.0;
    for (int64_t d = 0; d < width; ++d) squares += static_cast<double>(x[d]) * x[d];
    const double inv_rms = 1.0 / std::sqrt(squares / static_cast<double>(width) + eps);
    for (int64_t d = 0; d < width; ++d) y[d] = static_cast<T>(x[d] * inv_rms) * weight[d];
    rstd[m] = static_cast<T>(inv_rms);
  }
}

// With g = dy * weight, r = rstd and y_i = r x_i w_i, dr/dx_i = -r^3 x_i / D:
//   dx_i = r g_i - r^3 x_i mean_j(g_j x_j),  dweight_i += sum_m dy_i x_i r.
template <typename T>
void rmsnorm_backward(TensorView<T> dinp, TensorView<T> dweight, TensorView<const T> dout,
                      TensorView<const T> inp, TensorView<const T> weight, TensorView<const T> rstd,
                      bool accumulate) {
  const int64_t width = weight.numel();
  const int64_t rows = inp.numel() / width;
  check_shape(dout.shape(), Shape({rows, width}), "rmsnorm dout");
  check_shape(dinp.shape(), Shape({rows, width}), "rmsnorm dinp");
  check_shape(dweight.shape(), weight.shape(), "rmsnorm dweight");
  check_shape(rstd.shape(), Shape({rows}), "rmsnorm rstd");
#pragma omp parallel for schedule(guided) if (rows * width >= kParallelMinElements)
  for (int64_t m = 0; m < rows; ++m) {
    const T* x = inp.data() + m * width;
    const T* dy = dout.data() + m * width;
    T* dx = dinp.data() + m * width;
    const double r = rstd[m];
    double mean_g_x = 0.0;
    for (int64_t d = 0; d < width; ++d) mean_g_x += static_cast<double>(dy[d]) * weight[d] * x[d];
    mean_g_x /= static_cast<double>(width);
    const double r_cubed = r * r * r;
    for (int64_t d = 0; d < width; ++d) {
      const double g = static_cast<double>(dy[d]) * weight[d];
      const T value = static_cast<T>(r * g - r_cubed * x[d] * mean_g_x);
      dx[d] = accumulate ? dx[d] + value : value;
    }
  }
  // The weight gradient: column sums, sequential over rows for a deterministic order.
  for (int64_t m = 0; m < rows; ++m) {
    const T* x = inp.data() + m * width;
    const T* dy = dout.data() + m * width;
    for (int64_t d = 0; d < width; ++d) dweight[d] += dy[d] * x[d] * rstd[m];
  }
}

template void rmsnorm_forward<float>(TensorView<float>, TensorView<float>, TensorView<const float>,
                                     TensorView<const float>, float);
template void rmsnorm_forward<double>(TensorView<double>, TensorView<double>,
                                      TensorView<const double>, TensorView<const double>, double);
template void rmsnorm_backward<float>(TensorView<float>, TensorView<float>, TensorView<const float>,
                                      TensorView<const float>, TensorView<const float>,
                                      TensorView<const float>, bool);
template void rmsnorm_backward<double>(TensorView<double>, TensorView<double>,
                                       TensorView<const double>, TensorView<const double>,
                                       TensorView<const double>, TensorView<const double>, bool);

}  // namespace attnlab::ops
