// Arena: one buffer carved into activation views. A layout is carved twice: first counting
// (no memory touched) to learn the size, then for real; the buffer grows only when a batch
// shape needs more than any before, so steady-state steps allocate nothing.
#pragma once

#include <vector>

#include "core/tensor/tensor.h"

namespace attnlab {

namespace workspace {

// A pool viewed with the shape of one use; the pool must be large enough.
template <typename T>
TensorView<T> shaped(TensorView<T> pool, Shape shape) {
  CHECK(shape.numel() <= pool.numel())
      << "workspace pool of " << pool.numel() << " elements cannot hold " << shape.str();
  return TensorView<T>(pool.data(), shape);
}

// The read-only view an op takes as input.
template <typename T>
TensorView<const T> in(TensorView<T> view) {
  return view;
}

}  // namespace workspace

template <typename T>
class Arena {
 public:
  // Starts a carving pass; with counting = true views have no memory yet.
  void begin(bool counting) {
    counting_ = counting;
    used_ = 0;
  }
  TensorView<T> take(Shape shape) {
    T* data = counting_ ? nullptr : storage_.data() + used_;
    used_ += (shape.numel() + 15) / 16 * 16;  // 64-byte aligned views
    return TensorView<T>(data, shape);
  }
  int64_t used() const { return used_; }
  // Makes room for `elements`; returns true when the buffer moved (views must be carved again).
  bool reserve(int64_t elements) {
    if (elements <= static_cast<int64_t>(storage_.size())) return false;
    storage_.assign(static_cast<size_t>(elements), T(0));
    return true;
  }
  int64_t capacity() const { return static_cast<int64_t>(storage_.size()); }

 private:
  std::vector<T> storage_;
  int64_t used_ = 0;
  bool counting_ = true;
};

}  // namespace attnlab
