// GELU, the exact erf form (Hendrycks & Gimpel 2016; PyTorch's GELU(approximate='none')):
//   out  = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
//   dinp = dout * (Phi(x) + x phi(x)),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
// Backward reads the input, not the output. Every element is independent, so the result does not
// depend on the thread count.
#include <cmath>

#include "core/ops/ops.h"

namespace attnlab::ops {
namespace {

constexpr double kRsqrt2 = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kRsqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)

}  // namespace

template <typename T>
void gelu_forward(TensorView<T> out, TensorView<const T> inp) {
  check_shape(out.shape(), inp.shape(), "gelu output");
  const int64_t n = inp.numel();
  T* y = out.data();
  const T* x = inp.data();
#pragma omp parallel for schedule(guided) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) {
    y[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] * T(kRsqrt2)));
  }
}

template <typename T>
void gelu_backward(TensorView<T> dinp, TensorView<const T> dout, TensorView<const T> inp) {
  check_shape(dinp.shape(), inp.shape(), "gelu dinp");
  check_shape(dout.shape(), inp.shape(), "gelu dout");
  const int64_t n = inp.numel();
  T* dx = dinp.data();
  const T* dy = dout.data();
  const T* x = inp.data();
#pragma omp parallel for schedule(guided) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) {
    const T cdf = T(0.5) * (T(1) + std::erf(x[i] * T(kRsqrt2)));
    const T pdf = T(kRsqrt2Pi) * std::exp(T(-0.5) * x[i] * x[i]);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}

template void gelu_forward<float>(TensorView<float>, TensorView<const float>);
template void gelu_forward<double>(TensorView<double>, TensorView<const double>);
template void gelu_backward<float>(TensorView<float>, TensorView<const float>,
                                   TensorView<const float>);
template void gelu_backward<double>(TensorView<double>, TensorView<const double>,
                                    TensorView<const double>);

}  // namespace attnlab::ops
