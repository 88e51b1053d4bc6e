// Token embedding: out[m] = scale * table[tokens[m]] (scale = sqrt(d_model) in the paper).
// Legend: M rows (B*T), N vocabulary, D d_model.
#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
void embedding_forward(TensorView<T> out, const int32_t* tokens, TensorView<const T> table,
                       T scale) {
  const int64_t vocab = table.dim(0);
  const int64_t width = table.dim(1);
  const int64_t rows = out.numel() / width;
  check_shape(out.shape(), Shape({rows, width}), "embedding output");
  for (int64_t m = 0; m < rows; ++m) {
    const int32_t token = tokens[m];
    CHECK(token >= 0 && token < vocab) << "token id " << token << " at row " << m
                                       << " outside the vocabulary [0, " << vocab << ")";
    const T* source = table.data() + token * width;
    T* target = out.data() + m * width;
    for (int64_t d = 0; d < width; ++d) target[d] = scale * source[d];
  }
}

template <typename T>
void embedding_backward(TensorView<T> dtable, TensorView<const T> dout, const int32_t* tokens,
                        T scale) {
  const int64_t width = dtable.dim(1);
  const int64_t rows = dout.numel() / width;
  check_shape(dout.shape(), Shape({rows, width}), "embedding dout");
  // Rows sharing a token add into the same table row: sequential to stay deterministic.
  for (int64_t m = 0; m < rows; ++m) {
    T* target = dtable.data() + tokens[m] * width;
    const T* source = dout.data() + m * width;
    for (int64_t d = 0; d < width; ++d) target[d] += scale * source[d];
  }
}

template void embedding_forward<float>(TensorView<float>, const int32_t*, TensorView<const float>,
                                       float);
template void embedding_forward<double>(TensorView<double>, const int32_t*,
                                        TensorView<const double>, double);
template void embedding_backward<float>(TensorView<float>, TensorView<const float>, const int32_t*,
                                        float);
template void embedding_backward<double>(TensorView<double>, TensorView<const double>,
                                         const int32_t*, double);

}  // namespace attnlab::ops
