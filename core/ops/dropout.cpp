// Inverted dropout with a counter-based mask: element i survives iff uniform_at(key, i) >= p.
#include "core/ops/ops.h"
#include "core/util/rng.h"

namespace attnlab::ops {

template <typename T>
void dropout_forward(TensorView<T> out, TensorView<const T> inp, float p, uint64_t key) {
  check_shape(out.shape(), inp.shape(), "dropout output");
  CHECK(p >= 0.0f && p < 1.0f) << "dropout probability must be in [0, 1), got " << p;
  const int64_t n = inp.numel();
  if (p == 0.0f) {
    if (out.data() != inp.data()) {
      for (int64_t i = 0; i < n; ++i) out[i] = inp[i];
    }
    return;
  }
  const T keep_scale = T(1) / (T(1) - static_cast<T>(p));
  for (int64_t i = 0; i < n; ++i) {
    out[i] = uniform_at(key, static_cast<uint64_t>(i)) >= p ? inp[i] * keep_scale : T(0);
  }
}

template <typename T>
void dropout_backward(TensorView<T> dinp, TensorView<const T> dout, float p, uint64_t key) {
  // The same mask and scale: dropout is linear in its input.
  dropout_forward<T>(dinp, dout, p, key);
}

template void dropout_forward<float>(TensorView<float>, TensorView<const float>, float, uint64_t);
template void dropout_forward<double>(TensorView<double>, TensorView<const double>, float,
                                      uint64_t);
template void dropout_backward<float>(TensorView<float>, TensorView<const float>, float, uint64_t);
template void dropout_backward<double>(TensorView<double>, TensorView<const double>, float,
                                       uint64_t);

}  // namespace attnlab::ops
