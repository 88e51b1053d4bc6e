// Softmax over the last axis and its gradient dx = y * (dy - sum(dy * y)).
// Legend: M rows, N columns.
#include <cmath>

#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
void softmax_forward(TensorView<T> out, TensorView<const T> inp) {
  check_shape(out.shape(), inp.shape(), "softmax output");
  const int64_t columns = inp.dim(inp.shape().rank() - 1);
  const int64_t rows = inp.numel() / columns;
  for (int64_t m = 0; m < rows; ++m) {
    const T* x = inp.data() + m * columns;
    T* y = out.data() + m * columns;
    T max_value = x[0];
    for (int64_t j = 1; j < columns; ++j) max_value = x[j] > max_value ? x[j] : max_value;
    T sum = T(0);
    for (int64_t j = 0; j < columns; ++j) {
      y[j] = std::exp(x[j] - max_value);
      sum += y[j];
    }
    for (int64_t j = 0; j < columns; ++j) y[j] /= sum;
  }
}

template <typename T>
void softmax_backward(TensorView<T> dinp, TensorView<const T> dout, TensorView<const T> out) {
  check_shape(dinp.shape(), out.shape(), "softmax dinp");
  check_shape(dout.shape(), out.shape(), "softmax dout");
  const int64_t columns = out.dim(out.shape().rank() - 1);
  const int64_t rows = out.numel() / columns;
  for (int64_t m = 0; m < rows; ++m) {
    const T* y = out.data() + m * columns;
    const T* dy = dout.data() + m * columns;
    T* dx = dinp.data() + m * columns;
    T dot = T(0);
    for (int64_t j = 0; j < columns; ++j) dot += dy[j] * y[j];
    for (int64_t j = 0; j < columns; ++j) dx[j] = y[j] * (dy[j] - dot);
  }
}

template void softmax_forward<float>(TensorView<float>, TensorView<const float>);
template void softmax_forward<double>(TensorView<double>, TensorView<const double>);
template void softmax_backward<float>(TensorView<float>, TensorView<const float>,
                                      TensorView<const float>);
template void softmax_backward<double>(TensorView<double>, TensorView<const double>,
                                       TensorView<const double>);

}  // namespace attnlab::ops
