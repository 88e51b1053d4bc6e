// ReLU: out = max(0, x); dinp = dout * (out > 0).
// Branch-free loops (vectorised) over the flat tensor, in parallel above kParallelMinElements:
// every element is independent, so the result does not depend on the thread count.
#include "core/ops/keep_or_zero.h"
#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
void relu_forward(TensorView<T> out, TensorView<const T> inp) {
  check_shape(out.shape(), inp.shape(), "relu output");
  const int64_t n = inp.numel();
  T* y = out.data();
  const T* x = inp.data();
#pragma omp parallel for simd schedule(guided) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) y[i] = keep_or_zero(x[i], x[i] > T(0));
}

template <typename T>
void relu_backward(TensorView<T> dinp, TensorView<const T> dout, TensorView<const T> out) {
  check_shape(dinp.shape(), out.shape(), "relu dinp");
  check_shape(dout.shape(), out.shape(), "relu dout");
  const int64_t n = out.numel();
  T* dx = dinp.data();
  const T* dy = dout.data();
  const T* y = out.data();
#pragma omp parallel for simd schedule(guided) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) dx[i] = keep_or_zero(dy[i], y[i] > T(0));
}

template void relu_forward<float>(TensorView<float>, TensorView<const float>);
template void relu_forward<double>(TensorView<double>, TensorView<const double>);
template void relu_backward<float>(TensorView<float>, TensorView<const float>,
                                   TensorView<const float>);
template void relu_backward<double>(TensorView<double>, TensorView<const double>,
                                    TensorView<const double>);

}  // namespace attnlab::ops
