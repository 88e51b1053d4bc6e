// Residual add: out = a + b; its gradient reaches both summands unchanged.
// Vectorised loops over the flat tensor, in parallel above kParallelMinElements (elementwise, so
// the result does not depend on the thread count). out may alias a or b: each element is read
// before it is written, by the same iteration.
#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
void residual_forward(TensorView<T> out, TensorView<const T> a, TensorView<const T> b) {
  check_shape(b.shape(), a.shape(), "residual second summand");
  check_shape(out.shape(), a.shape(), "residual output");
  const int64_t n = a.numel();
  T* y = out.data();
  const T* x1 = a.data();
  const T* x2 = b.data();
#pragma omp parallel for simd schedule(guided) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) y[i] = x1[i] + x2[i];
}

template <typename T>
void residual_backward(TensorView<T> da, TensorView<const T> dout) {
  check_shape(da.shape(), dout.shape(), "residual gradient");
  const int64_t n = dout.numel();
  T* dx = da.data();
  const T* dy = dout.data();
#pragma omp parallel for simd schedule(guided) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) dx[i] += dy[i];
}

template void residual_forward<float>(TensorView<float>, TensorView<const float>,
                                      TensorView<const float>);
template void residual_forward<double>(TensorView<double>, TensorView<const double>,
                                       TensorView<const double>);
template void residual_backward<float>(TensorView<float>, TensorView<const float>);
template void residual_backward<double>(TensorView<double>, TensorView<const double>);

}  // namespace attnlab::ops
