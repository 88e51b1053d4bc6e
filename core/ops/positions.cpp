// Positions: the paper's interleaved sinusoids and the table add shared by sinusoidal and learned
// positions. Legend: B batch, T length, D d_model, P max positions.
#include <cmath>

#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
void sinusoidal_table(TensorView<T> table) {
  const int64_t positions = table.dim(0);
  const int64_t width = table.dim(1);
  CHECK(width % 2 == 0) << "sinusoidal positions need an even width, got table "
                        << table.shape().str();
  for (int64_t pos = 0; pos < positions; ++pos) {
    for (int64_t i = 0; i < width / 2; ++i) {
      // angle = pos / 10000^(2i/D), computed in double for every T.
      double angle = static_cast<double>(pos) /
                     std::pow(10000.0, static_cast<double>(2 * i) / static_cast<double>(width));
      table[pos * width + 2 * i] = static_cast<T>(std::sin(angle));
      table[pos * width + 2 * i + 1] = static_cast<T>(std::cos(angle));
    }
  }
}

template <typename T>
void add_positions_forward(TensorView<T> x, TensorView<const T> table, int64_t offset) {
  const int64_t width = table.dim(1);
  CHECK(x.shape().rank() == 3 && x.dim(2) == width)
      << "positions: input " << x.shape().str() << " does not match table " << table.shape().str();
  const int64_t batch = x.dim(0);
  const int64_t length = x.dim(1);
  CHECK(offset >= 0) << "position offset must be non-negative, got " << offset;
  CHECK(offset + length <= table.dim(0))
      << "position " << offset + length - 1 << " exceeds max_positions " << table.dim(0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < length; ++t) {
      T* row = x.data() + (b * length + t) * width;
      const T* pe = table.data() + (offset + t) * width;
      for (int64_t d = 0; d < width; ++d) row[d] += pe[d];
    }
  }
}

template <typename T>
void add_positions_backward(TensorView<T> dtable, TensorView<const T> dout, int64_t offset) {
  const int64_t width = dtable.dim(1);
  CHECK(dout.shape().rank() == 3 && dout.dim(2) == width)
      << "positions: dout " << dout.shape().str() << " does not match table "
      << dtable.shape().str();
  const int64_t batch = dout.dim(0);
  const int64_t length = dout.dim(1);
  CHECK(offset >= 0) << "position offset must be non-negative, got " << offset;
  CHECK(offset + length <= dtable.dim(0))
      << "position " << offset + length - 1 << " exceeds max_positions " << dtable.dim(0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < length; ++t) {
      const T* row = dout.data() + (b * length + t) * width;
      T* dpe = dtable.data() + (offset + t) * width;
      for (int64_t d = 0; d < width; ++d) dpe[d] += row[d];
    }
  }
}

template void sinusoidal_table<float>(TensorView<float>);
template void sinusoidal_table<double>(TensorView<double>);
template void add_positions_forward<float>(TensorView<float>, TensorView<const float>, int64_t);
template void add_positions_forward<double>(TensorView<double>, TensorView<const double>, int64_t);
template void add_positions_backward<float>(TensorView<float>, TensorView<const float>, int64_t);
template void add_positions_backward<double>(TensorView<double>, TensorView<const double>, int64_t);

}  // namespace attnlab::ops
