// Layer norm over the last axis: y = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + eps).
// Legend: M rows, D width.
#include <cmath>

#include "core/ops/ops.h"

namespace attnlab::ops {

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
#pragma omp parallel for schedule(static) if (rows * width >= kParallelMinElements)
  for (int64_t m = 0; m < rows; ++m) {
    const T* x = inp.data() + m * width;
    T* y = out.data() + m * width;
    // Two passes in double: the mean first, then the centred variance (stable for large means).
    double sum = 0.0;
    for (int64_t d = 0; d < width; ++d) sum += x[d];
    const double mu = sum / static_cast<double>(width);
    double squares = 0.0;
    for (int64_t d = 0; d < width; ++d) squares += (x[d] - mu) * (x[d] - mu);
    const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(width) + eps);
    for (int64_t d = 0; d < width; ++d) {
      y[d] = static_cast<T>((x[d] - mu) * inv_std) * weight[d] + bias[d];
    }
    mean[m] = static_cast<T>(mu);
    rstd[m] = static_cast<T>(inv_std);
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
#pragma omp parallel for schedule(static) if (rows * width >= kParallelMinElements)
  for (int64_t m = 0; m < rows; ++m) {
    const T* x = inp.data() + m * width;
    const T* dy = dout.data() + m * width;
    T* dx = dinp.data() + m * width;
    const T mu = mean[m];
    const T inv_std = rstd[m];
    double mean_g = 0.0;
    double mean_g_xhat = 0.0;
    for (int64_t d = 0; d < width; ++d) {
      const double g = static_cast<double>(dy[d]) * weight[d];
      mean_g += g;
      mean_g_xhat += g * (x[d] - mu) * inv_std;
    }
    mean_g /= static_cast<double>(width);
    mean_g_xhat /= static_cast<double>(width);
    for (int64_t d = 0; d < width; ++d) {
      const double xhat = (x[d] - mu) * inv_std;
      const double g = static_cast<double>(dy[d]) * weight[d];
      const T value = static_cast<T>(inv_std * (g - mean_g - xhat * mean_g_xhat));
      dx[d] = accumulate ? dx[d] + value : value;
    }
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
