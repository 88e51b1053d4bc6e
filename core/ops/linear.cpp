// linear: out = inp W^T + b with W stored (out_features, in_features), and its gradient.
// Legend: M rows, I in_features, O out_features. The bias loops run in parallel above
// kParallelMinElements: the broadcast by rows, the bias gradient by blocks of columns, each column
// still summed over the rows in order (bit for bit the serial sum).
#include <omp.h>

#include <algorithm>

#include "core/ops/ops.h"
#include "core/tensor/blas.h"

namespace attnlab::ops {

template <typename T>
void linear_forward(TensorView<T> out, TensorView<const T> inp, TensorView<const T> weight,
                    TensorView<const T> bias) {
  const int64_t in_features = weight.dim(1);
  const int64_t out_features = weight.dim(0);
  const int64_t rows = inp.numel() / in_features;
  check_shape(inp.shape(), Shape({rows, in_features}), "linear input");
  check_shape(out.shape(), Shape({rows, out_features}), "linear output");
  // The bias (if any) is broadcast into out and GEMM adds the product.
  T beta = T(0);
  if (!bias.empty()) {
    check_shape(bias.shape(), Shape({out_features}), "linear bias");
#pragma omp parallel for schedule(guided) if (rows * out_features >= kParallelMinElements)
    for (int64_t m = 0; m < rows; ++m) {
      T* row = out.data() + m * out_features;
      for (int64_t o = 0; o < out_features; ++o) row[o] = bias[o];
    }
    beta = T(1);
  }
  blas::gemm<T>(false, true, rows, out_features, in_features, T(1), inp.data(), in_features,
                weight.data(), in_features, beta, out.data(), out_features);
}

template <typename T>
void linear_backward(TensorView<T> dinp, TensorView<T> dweight, TensorView<T> dbias,
                     TensorView<const T> dout, TensorView<const T> inp, TensorView<const T> weight,
                     bool accumulate) {
  const int64_t in_features = weight.dim(1);
  const int64_t out_features = weight.dim(0);
  const int64_t rows = inp.numel() / in_features;
  check_shape(dout.shape(), Shape({rows, out_features}), "linear dout");
  check_shape(dweight.shape(), weight.shape(), "linear dweight");
  // In bf16 both products read dout: it is rounded once.
  const blas::Bf16OperandReuseIfBf16<T> round_dout_once(dout.data(), rows, out_features,
                                                        out_features);
  // dinp (M,I) = dout (M,O) W (O,I)
  if (!dinp.empty()) {
    check_shape(dinp.shape(), Shape({rows, in_features}), "linear dinp");
    blas::gemm<T>(false, false, rows, in_features, out_features, T(1), dout.data(), out_features,
                  weight.data(), in_features, accumulate ? T(1) : T(0), dinp.data(), in_features);
  }
  // dW (O,I) += dout^T (O,M) inp (M,I)
  blas::gemm<T>(true, false, out_features, in_features, rows, T(1), dout.data(), out_features,
                inp.data(), in_features, T(1), dweight.data(), in_features);
  if (!dbias.empty()) {
    check_shape(dbias.shape(), Shape({out_features}), "linear dbias");
#pragma omp parallel if (rows * out_features >= kParallelMinElements)
    {
      const int64_t workers = omp_get_num_threads(), worker = omp_get_thread_num();
      const int64_t first = out_features * worker / workers;
      const int64_t last = out_features * (worker + 1) / workers;
      for (int64_t m = 0; m < rows; ++m) {
        const T* row = dout.data() + m * out_features;
        for (int64_t o = first; o < last; ++o) dbias[o] += row[o];
      }
    }
  }
}

template void linear_forward<float>(TensorView<float>, TensorView<const float>,
                                    TensorView<const float>, TensorView<const float>);
template void linear_forward<double>(TensorView<double>, TensorView<const double>,
                                     TensorView<const double>, TensorView<const double>);
template void linear_backward<float>(TensorView<float>, TensorView<float>, TensorView<float>,
                                     TensorView<const float>, TensorView<const float>,
                                     TensorView<const float>, bool);
template void linear_backward<double>(TensorView<double>, TensorView<double>, TensorView<double>,
                                      TensorView<const double>, TensorView<const double>,
                                      TensorView<const double>, bool);

}  // namespace attnlab::ops
