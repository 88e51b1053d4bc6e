// The loss a block of rows at a time (Transformer::forward): blocks of any size give the loss and
// the gradients of one block over all rows, the gradient of small blocks matches central
// differences, and the passes refuse what they cannot serve (backward without a training
// forward, log-probabilities that were not kept).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/gradcheck.h"
#include "core/model/transformer.h"
#include "io/expect_error.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

using test::tiny_batch;

// Rows per block given as bytes of logits: the tiny model's 11 logits per row in double.
int64_t block_of_rows(int64_t rows) {
  return rows * test::tiny_model_config().vocab_size * static_cast<int64_t>(sizeof(double));
}

struct TrainingPass {
  ops::LossSums sums;
  std::vector<double> grads;
};

// One training forward and backward with dropout, the loss in blocks of `rows` rows (0: one
// block over every row).
TrainingPass train_in_blocks(int64_t rows) {
  ModelConfig config = test::tiny_model_config();
  config.dropout = config.attention_dropout = 0.2;
  Transformer<double> model(config, 7);
  if (rows > 0) model.set_loss_block_bytes(block_of_rows(rows));
  model.zero_grads();
  TrainingPass pass;
  pass.sums = model.forward(tiny_batch(), 0.1f, true, 99);
  model.backward();
  pass.grads = model.grads();
  return pass;
}

double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double largest = 0.0;
  for (size_t i = 0; i < a.size(); ++i) largest = std::max(largest, std::abs(a[i] - b[i]));
  return largest;
}

TEST(LossBlocks, AnyBlockSizeGivesTheLossAndGradientsOfOneBlock) {
  // tiny_batch has 2 x 4 = 8 target rows (2 of them padding): blocks of 1, of 3 (3 + 3 + 2: a
  // partial last block) and of 8 against one block over everything.
  const TrainingPass whole = train_in_blocks(0);
  ASSERT_EQ(whole.sums.tokens, 6);
  for (const int64_t rows : {1, 3, 8}) {
    const TrainingPass blocked = train_in_blocks(rows);
    EXPECT_EQ(blocked.sums.tokens, whole.sums.tokens) << rows;
    EXPECT_NEAR(blocked.sums.loss, whole.sums.loss, 1e-12) << rows;
    EXPECT_NEAR(blocked.sums.nll, whole.sums.nll, 1e-12) << rows;
    EXPECT_LT(largest_difference(blocked.grads, whole.grads), 1e-12) << rows;
  }
}

TEST(LossBlocks, GradientOfSmallBlocksMatchesCentralDifferences) {
  Transformer<double> model(test::tiny_model_config(), 5);
  model.set_loss_block_bytes(block_of_rows(3));
  const Batch batch = tiny_batch();
  model.zero_grads();
  model.forward(batch, 0.1f, true, 0);
  model.backward();
  const std::vector<double> analytic = model.grads();
  const std::vector<test::GradTensor> tensors = test::parameter_tensors(model, analytic);
  auto objective = [&] { return model.forward(batch, 0.1f, false, 0).loss; };
  test::GradCheckOptions options;
  options.max_per_tensor = 8;
  const test::GradCheckResult result = test::check_gradients(objective, tensors, options);
  EXPECT_TRUE(result.passed) << result.report;
  EXPECT_GT(result.checked, 500);
}

TEST(LossBlocks, TheWorkspaceHoldsOneBlockOfLogits) {
  const ModelConfig config = test::tiny_model_config();
  Transformer<double> model(config, 5);
  const int64_t all_rows = model.workspace_parts(2, 5, 4).logits;
  model.set_loss_block_bytes(block_of_rows(3));
  const int64_t three_rows = model.workspace_parts(2, 5, 4).logits;
  // The arena rounds each buffer up to its alignment: compare against the rounded counts.
  EXPECT_GE(all_rows, 8 * config.vocab_size);
  EXPECT_GE(three_rows, 3 * config.vocab_size);
  EXPECT_LT(three_rows, 8 * config.vocab_size);
  model.keep_log_probs(true);  // kept log-probabilities need every row again
  EXPECT_EQ(model.workspace_parts(2, 5, 4).logits, all_rows);
}

TEST(LossBlocks, BackwardNeedsATrainingForwardOfItsOwn) {
  Transformer<double> model(test::tiny_model_config(), 5);
  const Batch batch = tiny_batch();
  model.forward(batch, 0.1f, false, 0);
  test::expect_error([&] { model.backward(); }, {"needs a training forward()"});
  model.forward(batch, 0.1f, true, 0);
  model.backward();
  test::expect_error([&] { model.backward(); }, {"one forward serves one backward"});
}

TEST(LossBlocks, LogProbsAreKeptOnlyWhenAskedAndNeverInTraining) {
  Transformer<double> model(test::tiny_model_config(), 5);
  const Batch batch = tiny_batch();
  model.forward(batch, 0.1f, false, 0);
  test::expect_error([&] { model.log_probs(); }, {"keep_log_probs(true)"});
  model.keep_log_probs(true);
  const ops::LossSums sums = model.forward(batch, 0.0f, false, 0);
  // The kept rows are log-probabilities: each non-pad row's target entry sums to the nll.
  const TensorView<const double> log_probs = model.log_probs();
  double nll = 0.0;
  for (size_t row = 0; row < batch.tgt_out.size(); ++row) {
    if (batch.tgt_out[row] == 0) continue;
    nll -= log_probs.data()[row * 11 + static_cast<size_t>(batch.tgt_out[row])];
  }
  EXPECT_NEAR(nll, sums.nll, 1e-12);
  test::expect_error([&] { model.forward(batch, 0.1f, true, 0); }, {"evaluation forwards"});
}

}  // namespace
}  // namespace attnlab
