// Shape, TensorView (non-owning, contiguous) and Tensor (owning) over float or double.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/util/check.h"

namespace attnlab {

// Up to four dimensions, row-major, contiguous.
class Shape {
 public:
  static constexpr int kMaxRank = 4;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  int rank() const { return rank_; }
  int64_t operator[](int axis) const { return dims_[static_cast<size_t>(axis)]; }
  int64_t numel() const;
  std::vector<int64_t> dims() const { return {dims_.begin(), dims_.begin() + rank_}; }
  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }
  // "(2,3,4)"
  std::string str() const;

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// A view over contiguous memory owned elsewhere (a Tensor, a flat parameter buffer, a workspace).
template <typename T>
class TensorView {
 public:
  TensorView() = default;
  TensorView(T* data, Shape shape) : data_(data), shape_(shape) {}

  T* data() const { return data_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  int64_t dim(int axis) const { return shape_[axis]; }
  bool empty() const { return data_ == nullptr; }
  T& operator[](int64_t i) const { return data_[i]; }

  // The same memory seen with another shape of equal size.
  TensorView reshape(Shape shape) const {
    CHECK(shape.numel() == numel()) << "cannot reshape " << shape_.str() << " to " << shape.str();
    return TensorView(data_, shape);
  }
  // Rows [begin, begin+count) along axis 0.
  TensorView slice_rows(int64_t begin, int64_t count) const;
  operator TensorView<const T>() const { return TensorView<const T>(data_, shape_); }

 private:
  T* data_ = nullptr;
  Shape shape_;
};

template <typename T>
TensorView<T> TensorView<T>::slice_rows(int64_t begin, int64_t count) const {
  CHECK(shape_.rank() >= 1 && begin >= 0 && begin + count <= shape_[0])
      << "row slice [" << begin << "," << begin + count << ") out of range for " << shape_.str();
  std::vector<int64_t> dims = shape_.dims();
  dims[0] = count;
  int64_t row = shape_[0] == 0 ? 0 : numel() / shape_[0];
  return TensorView(data_ + begin * row, Shape(dims));
}

// Owning, zero-initialised storage with a shape.
template <typename T>
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape) : storage_(static_cast<size_t>(shape.numel())), shape_(shape) {}
  Tensor(Shape shape, std::vector<T> values) : storage_(std::move(values)), shape_(shape) {
    CHECK(static_cast<int64_t>(storage_.size()) == shape.numel())
        << "tensor of shape " << shape.str() << " needs " << shape.numel() << " values, got "
        << storage_.size();
  }

  T* data() { return storage_.data(); }
  const T* data() const { return storage_.data(); }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  T& operator[](int64_t i) { return storage_[static_cast<size_t>(i)]; }
  const T& operator[](int64_t i) const { return storage_[static_cast<size_t>(i)]; }
  TensorView<T> view() { return TensorView<T>(storage_.data(), shape_); }
  TensorView<const T> view() const { return TensorView<const T>(storage_.data(), shape_); }
  std::vector<T>& values() { return storage_; }
  const std::vector<T>& values() const { return storage_; }

 private:
  std::vector<T> storage_;
  Shape shape_;
};

// Throws an Error naming both shapes when they differ: "<what>: expected (2,3), got (2,4)".
void check_shape(const Shape& actual, const Shape& expected, const char* what);

}  // namespace attnlab
