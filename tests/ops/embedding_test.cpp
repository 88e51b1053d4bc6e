// Token embedding: a hand-computed lookup with repeated tokens and a scale, out-of-vocabulary
// errors, and the central-difference check of the table gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::embedding_backward;
using ops::embedding_forward;

TEST(Embedding, HandComputedWithRepeatedTokens) {
  // table (3,2) = [[1 2] [3 4] [5 6]], tokens [2 0 2], scale 2
  //   out = 2 * [table[2]; table[0]; table[2]] = [[10 12] [2 4] [10 12]]
  std::vector<double> table = {1, 2, 3, 4, 5, 6}, out(6);
  std::vector<int32_t> tokens = {2, 0, 2};
  embedding_forward<double>(view(out, {3, 2}), tokens.data(), const_view(table, {3, 2}), 2.0);
  EXPECT_EQ(out, (std::vector<double>{10, 12, 2, 4, 10, 12}));
  // dout = [[1 1] [1 0] [0 1]], dtable starts at 0.5 (it accumulates):
  //   dtable[0] = 0.5 + 2*[1 0] = [2.5 0.5]; dtable[1] untouched = [0.5 0.5];
  //   dtable[2] = 0.5 + 2*([1 1] + [0 1]) = [2.5 4.5]  (both rows of token 2 add up)
  std::vector<double> dout = {1, 1, 1, 0, 0, 1}, dtable(6, 0.5);
  embedding_backward<double>(view(dtable, {3, 2}), const_view(dout, {3, 2}), tokens.data(), 2.0);
  EXPECT_EQ(dtable, (std::vector<double>{2.5, 0.5, 0.5, 0.5, 2.5, 4.5}));
}

TEST(Embedding, TokenOutsideVocabularyIsAnError) {
  std::vector<double> table(6), out(2);
  std::vector<int32_t> tokens = {3};
  try {
    embedding_forward<double>(view(out, {1, 2}), tokens.data(), const_view(table, {3, 2}), 1.0);
    FAIL() << "token 3 of a 3-word vocabulary accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("token id 3"), std::string::npos) << error.what();
  }
}

struct EmbeddingShape {
  int64_t rows, vocab, width;
};

class EmbeddingTest : public ::testing::TestWithParam<EmbeddingShape> {};

TEST_P(EmbeddingTest, TableGradientMatchesCentralDifferences) {
  const auto [m, n, d] = GetParam();
  std::vector<double> table = random_uniform(n * d, 21), dout = random_uniform(m * d, 22);
  std::vector<int32_t> tokens(static_cast<size_t>(m));
  Rng rng(23);
  for (int32_t& token : tokens) token = static_cast<int32_t>(rng.below(static_cast<uint64_t>(n)));
  const double scale = std::sqrt(static_cast<double>(d));
  std::vector<double> out(static_cast<size_t>(m * d));
  auto objective = [&] {
    embedding_forward<double>(view(out, {m, d}), tokens.data(), const_view(table, {n, d}), scale);
    return weighted_sum(out.data(), dout);
  };
  std::vector<double> dtable(static_cast<size_t>(n * d));
  embedding_backward<double>(view(dtable, {n, d}), const_view(dout, {m, d}), tokens.data(), scale);
  GradCheckResult result =
      check_gradients(objective, {{"table", table.data(), dtable.data(), n * d}});
  EXPECT_TRUE(result.passed) << result.report;
}

TEST_P(EmbeddingTest, FloatMatchesDouble) {
  const auto [m, n, d] = GetParam();
  std::vector<double> table = random_uniform(n * d, 24);
  std::vector<int32_t> tokens(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) tokens[static_cast<size_t>(i)] = static_cast<int32_t>(i % n);
  std::vector<float> table_f = convert<float>(table), out_f(static_cast<size_t>(m * d));
  std::vector<double> out(static_cast<size_t>(m * d));
  embedding_forward<double>(view(out, {m, d}), tokens.data(), const_view(table, {n, d}), 3.0);
  embedding_forward<float>(view(out_f, {m, d}), tokens.data(), const_view(table_f, {n, d}), 3.0f);
  EXPECT_LT(max_scaled_difference(out_f, out), 1e-6);
}

// Rows exceed the vocabulary in most shapes, so tokens repeat.
INSTANTIATE_TEST_SUITE_P(Shapes, EmbeddingTest,
                         ::testing::Values(EmbeddingShape{1, 1, 1}, EmbeddingShape{3, 2, 7},
                                           EmbeddingShape{7, 3, 4}, EmbeddingShape{16, 5, 3},
                                           EmbeddingShape{4, 9, 8}));

}  // namespace
}  // namespace attnlab::test
