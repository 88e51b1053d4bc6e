// split_heads (B,T,H*K) -> (B,H,T,K) and combine_heads (B,H,T,K) -> (B,T,H*K): pure permutations,
// each the other's inverse and the other's gradient; (batch, head) blocks are copied in parallel
// above kParallelMinElements.
#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
void split_heads(TensorView<T> out, TensorView<const T> inp) {
  CHECK(out.shape().rank() == 4) << "split_heads output must be (B,H,T,K), got "
                                 << out.shape().str();
  const int64_t batch = out.dim(0), heads = out.dim(1), length = out.dim(2), width = out.dim(3);
  check_shape(inp.shape(), Shape({batch, length, heads * width}), "split_heads input");
#pragma omp parallel for collapse(2) schedule(guided) if (out.numel() >= kParallelMinElements)
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t t = 0; t < length; ++t) {
        const T* source = inp.data() + (b * length + t) * heads * width + h * width;
        T* target = out.data() + ((b * heads + h) * length + t) * width;
        for (int64_t k = 0; k < width; ++k) target[k] = source[k];
      }
    }
  }
}

template <typename T>
void combine_heads(TensorView<T> out, TensorView<const T> inp) {
  CHECK(inp.shape().rank() == 4) << "combine_heads input must be (B,H,T,K), got "
                                 << inp.shape().str();
  const int64_t batch = inp.dim(0), heads = inp.dim(1), length = inp.dim(2), width = inp.dim(3);
  check_shape(out.shape(), Shape({batch, length, heads * width}), "combine_heads output");
#pragma omp parallel for collapse(2) schedule(guided) if (out.numel() >= kParallelMinElements)
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t t = 0; t < length; ++t) {
        const T* source = inp.data() + ((b * heads + h) * length + t) * width;
        T* target = out.data() + (b * length + t) * heads * width + h * width;
        for (int64_t k = 0; k < width; ++k) target[k] = source[k];
      }
    }
  }
}

template void split_heads<float>(TensorView<float>, TensorView<const float>);
template void split_heads<double>(TensorView<double>, TensorView<const double>);
template void combine_heads<float>(TensorView<float>, TensorView<const float>);
template void combine_heads<double>(TensorView<double>, TensorView<const double>);

}  // namespace attnlab::ops
