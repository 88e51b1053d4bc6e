// Shape, TensorView and Tensor: sizes, text, views, and errors that name both shapes.
#include "core/tensor/tensor.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

namespace attnlab {
namespace {

// The text of the Error `body` throws ("" if it throws none).
template <typename Body>
std::string error_text(Body body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Shape, SizesAndText) {
  const Shape shape({2, 3, 4});
  EXPECT_EQ(shape.rank(), 3);
  EXPECT_EQ(shape[1], 3);
  EXPECT_EQ(shape.numel(), 24);
  EXPECT_EQ(shape.str(), "(2,3,4)");
  EXPECT_EQ(shape.dims(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Shape({7}).str(), "(7)");
  EXPECT_EQ(Shape().numel(), 1);  // a scalar
  EXPECT_EQ(Shape().str(), "()");
  EXPECT_EQ(Shape({3, 0}).numel(), 0);
}

TEST(Shape, EqualityNeedsSameRankAndDims) {
  EXPECT_EQ(Shape({2, 3}), Shape(std::vector<int64_t>{2, 3}));
  EXPECT_NE(Shape({2, 3}), Shape({3, 2}));
  EXPECT_NE(Shape({6}), Shape({6, 1}));
  EXPECT_NE(Shape({2, 3}), Shape({2, 3, 1}));
}

TEST(Shape, InvalidShapesAreErrors) {
  EXPECT_NE(error_text([] { Shape({1, 2, 3, 4, 5}); }).find("rank 5"), std::string::npos);
  EXPECT_NE(error_text([] { Shape({2, -1}); }).find("-1"), std::string::npos);
}

TEST(CheckShape, MessageNamesWhatAndBothShapes) {
  EXPECT_NO_THROW(check_shape(Shape({2, 3}), Shape({2, 3}), "x"));
  const std::string message = error_text([] { check_shape(Shape({2, 3}), Shape({2, 4}), "bias"); });
  EXPECT_NE(message.find("bias"), std::string::npos) << message;
  EXPECT_NE(message.find("expected shape (2,4), got (2,3)"), std::string::npos) << message;
}

TEST(TensorView, ReshapeKeepsMemory) {
  std::vector<double> values(12);
  std::iota(values.begin(), values.end(), 0.0);
  TensorView<double> matrix(values.data(), Shape({3, 4}));
  TensorView<double> cube = matrix.reshape(Shape({2, 3, 2}));
  EXPECT_EQ(cube.data(), values.data());
  EXPECT_EQ(cube.shape(), Shape({2, 3, 2}));
  EXPECT_EQ(cube[7], 7.0);
  cube[7] = -1.0;
  EXPECT_EQ(matrix[7], -1.0);
}

TEST(TensorView, ReshapeErrorNamesBothShapes) {
  std::vector<double> values(6);
  TensorView<double> matrix(values.data(), Shape({2, 3}));
  const std::string message = error_text([&] { matrix.reshape(Shape({2, 4})); });
  EXPECT_NE(message.find("(2,3)"), std::string::npos) << message;
  EXPECT_NE(message.find("(2,4)"), std::string::npos) << message;
}

TEST(TensorView, SliceRows) {
  // (4,2,3) = 0..23; rows [1,3) start at element 6 and have shape (2,2,3).
  std::vector<double> values(24);
  std::iota(values.begin(), values.end(), 0.0);
  TensorView<double> view(values.data(), Shape({4, 2, 3}));
  TensorView<double> rows = view.slice_rows(1, 2);
  EXPECT_EQ(rows.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(rows.data(), values.data() + 6);
  EXPECT_EQ(rows[0], 6.0);
  EXPECT_EQ(rows[11], 17.0);
  EXPECT_EQ(view.slice_rows(4, 0).numel(), 0);
  const std::string message = error_text([&] { view.slice_rows(3, 2); });
  EXPECT_NE(message.find("[3,5)"), std::string::npos) << message;
  EXPECT_NE(message.find("(4,2,3)"), std::string::npos) << message;
  EXPECT_THROW(view.slice_rows(-1, 1), Error);
}

TEST(TensorView, ConstConversionAndEmpty) {
  std::vector<float> values = {1, 2};
  TensorView<float> mutable_view(values.data(), Shape({2}));
  TensorView<const float> read_only = mutable_view;
  EXPECT_EQ(read_only.data(), values.data());
  EXPECT_EQ(read_only.shape(), Shape({2}));
  EXPECT_FALSE(read_only.empty());
  EXPECT_TRUE(TensorView<const float>().empty());
}

TEST(Tensor, ZeroInitialisedAndChecked) {
  Tensor<double> zeros(Shape({2, 3}));
  EXPECT_EQ(zeros.numel(), 6);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(zeros[i], 0.0);
  Tensor<double> given(Shape({2}), {1.5, 2.5});
  EXPECT_EQ(given.view()[1], 2.5);
  const std::string message = error_text([] { Tensor<double>(Shape({2, 2}), {1, 2, 3}); });
  EXPECT_NE(message.find("(2,2)"), std::string::npos) << message;
  EXPECT_NE(message.find("got 3"), std::string::npos) << message;
}

}  // namespace
}  // namespace attnlab
