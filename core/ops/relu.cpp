// ReLU: out = max(0, x); dinp = dout * (out > 0).
#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
void relu_forward(TensorView<T> out, TensorView<const T> inp) {
  check_shape(out.shape(), inp.shape(), "relu output");
  const int64_t n = inp.numel();
  for (int64_t i = 0; i < n; ++i) out[i] = inp[i] > T(0) ? inp[i] : T(0);
}

template <typename T>
void relu_backward(TensorView<T> dinp, TensorView<const T> dout, TensorView<const T> out) {
  check_shape(dinp.shape(), out.shape(), "relu dinp");
  check_shape(dout.shape(), out.shape(), "relu dout");
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) dinp[i] = out[i] > T(0) ? dout[i] : T(0);
}

template void relu_forward<float>(TensorView<float>, TensorView<const float>);
template void relu_forward<double>(TensorView<double>, TensorView<const double>);
template void relu_backward<float>(TensorView<float>, TensorView<const float>,
                                   TensorView<const float>);
template void relu_backward<double>(TensorView<double>, TensorView<const double>,
                                    TensorView<const double>);

}  // namespace attnlab::ops
