// Shape arithmetic and shape-mismatch errors.
#include "core/tensor/tensor.h"

namespace attnlab {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

Shape::Shape(const std::vector<int64_t>& dims) {
  CHECK(dims.size() <= static_cast<size_t>(kMaxRank))
      << "shape rank " << dims.size() << " exceeds " << kMaxRank;
  rank_ = static_cast<int>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    CHECK(dims[i] >= 0) << "negative dimension " << dims[i] << " in shape";
    dims_[i] = dims[i];
  }
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[static_cast<size_t>(i)] != other.dims_[static_cast<size_t>(i)]) return false;
  }
  return true;
}

std::string Shape::str() const {
  std::string text = "(";
  for (int i = 0; i < rank_; ++i) {
    if (i > 0) text += ",";
    text += std::to_string(dims_[static_cast<size_t>(i)]);
  }
  return text + ")";
}

void check_shape(const Shape& actual, const Shape& expected, const char* what) {
  CHECK(actual == expected) << what << ": expected shape " << expected.str() << ", got "
                            << actual.str();
}

}  // namespace attnlab
