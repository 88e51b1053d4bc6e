// Residual add: out = a + b; its gradient reaches both summands unchanged.
#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
void residual_forward(TensorView<T> out, TensorView<const T> a, TensorView<const T> b) {
  check_shape(b.shape(), a.shape(), "residual second summand");
  check_shape(out.shape(), a.shape(), "residual output");
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void residual_backward(TensorView<T> da, TensorView<const T> dout) {
  check_shape(da.shape(), dout.shape(), "residual gradient");
  const int64_t n = dout.numel();
  for (int64_t i = 0; i < n; ++i) da[i] += dout[i];
}

template void residual_forward<float>(TensorView<float>, TensorView<const float>,
                                      TensorView<const float>);
template void residual_forward<double>(TensorView<double>, TensorView<const double>,
                                       TensorView<const double>);
template void residual_backward<float>(TensorView<float>, TensorView<const float>);
template void residual_backward<double>(TensorView<double>, TensorView<const double>);

}  // namespace attnlab::ops
