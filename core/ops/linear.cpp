// linear: out = inp W^T + b with W stored (out_features, in_features), and its gradient; the
// forward product from a transposed weight, and the transpose that makes one.
// Legend: M rows, I in_features, O out_features. The bias loops run in parallel above
// kParallelMinElements: the broadcast by rows, the bias gradient by blocks of columns, each column
// still summed over the rows in order (bit for bit the serial sum).
#include <omp.h>

#include <algorithm>

#include "core/ops/ops.h"
#include "core/tensor/blas.h"

namespace attnlab::ops {

namespace {

// out = inp W^T + b from W (out_features, in_features) or, `transposed`, from W^T stored
// (in_features, out_features): the bias (if any) is broadcast into out and GEMM adds the product.
template <typename T>
void forward_product(TensorView<T> out, TensorView<const T> inp, TensorView<const T> weight,
                     TensorView<const T> bias, bool transposed) {
  const int64_t in_features = weight.dim(transposed ? 0 : 1);
  const int64_t out_features = weight.dim(transposed ? 1 : 0);
  const int64_t rows = inp.numel() / in_features;
  check_shape(inp.shape(), Shape({rows, in_features}), "linear input");
  check_shape(out.shape(), Shape({rows, out_features}), "linear output");
  T beta = T(0);
  if (!bias.empty()) {
    check_shape(bias.shape(), Shape({out_features}), "linear bias");
#pragma omp parallel for schedule(static) if (rows * out_features >= kParallelMinElements)
    for (int64_t m = 0; m < rows; ++m) {
      T* row = out.data() + m * out_features;
      for (int64_t o = 0; o < out_features; ++o) row[o] = bias[o];
    }
    beta = T(1);
  }
  blas::gemm<T>(false, !transposed, rows, out_features, in_features, T(1), inp.data(), in_features,
                weight.data(), transposed ? out_features : in_features, beta, out.data(),
                out_features);
}

}  // namespace

template <typename T>
void linear_forward(TensorView<T> out, TensorView<const T> inp, TensorView<const T> weight,
                    TensorView<const T> bias) {
  forward_product(out, inp, weight, bias, false);
}

template <typename T>
void linear_forward_transposed(TensorView<T> out, TensorView<const T> inp,
                               TensorView<const T> weight_t, TensorView<const T> bias) {
  forward_product(out, inp, weight_t, bias, true);
}

// Tiles of kTransposeTile x kTransposeTile: a tile's rows and columns both stay in L1, so every
// cache line read or written is used whole.
constexpr int64_t kTransposeTile = 32;

template <typename T>
void transpose(TensorView<T> dst, TensorView<const T> src) {
  const int64_t rows = src.dim(0), cols = src.dim(1);
  check_shape(dst.shape(), Shape({cols, rows}), "transpose output");
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMinElements)
  for (int64_t r0 = 0; r0 < rows; r0 += kTransposeTile) {
    const int64_t r1 = std::min(r0 + kTransposeTile, rows);
    for (int64_t c0 = 0; c0 < cols; c0 += kTransposeTile) {
      const int64_t c1 = std::min(c0 + kTransposeTile, cols);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) dst.data()[c * rows + r] = src.data()[r * cols + c];
      }
    }
  }
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
template void linear_forward_transposed<float>(TensorView<float>, TensorView<const float>,
                                               TensorView<const float>, TensorView<const float>);
template void linear_forward_transposed<double>(TensorView<double>, TensorView<const double>,
                                                TensorView<const double>, TensorView<const double>);
template void transpose<float>(TensorView<float>, TensorView<const float>);
template void transpose<double>(TensorView<double>, TensorView<const double>);

}  // namespace attnlab::ops
