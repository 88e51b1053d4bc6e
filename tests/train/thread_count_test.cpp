// Training numerics across thread counts: a few Adam steps of Transformer<float> (dropout, label
// smoothing, padded batches) on one thread and on two. Two threads split the large products
// between them (blas.cpp) and run the parallel ops and reductions, so the losses may differ from
// one thread's by float round-off and no more; a fixed thread count repeats its run bit for bit
// (the parallel loops' guided schedules vary which thread runs an iteration, never its result).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/data/synthetic.h"
#include "core/model/transformer.h"
#include "core/optim/adam.h"
#include "core/tensor/blas.h"
#include "core/util/rng.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

struct TrainedRun {
  std::vector<double> losses;
  std::vector<float> params;
};

// Wide enough that the projections and the feed-forward products are split over two threads.
ModelConfig threaded_model_config() {
  ModelConfig c = test::tiny_model_config();
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  c.d_model = 128;
  c.d_ff = 512;
  c.heads = 4;
  c.d_k = 32;
  c.d_v = 32;
  c.dropout = 0.1;
  c.attention_dropout = 0.1;
  c.max_positions = 48;
  c.vocab_size = 13;  // the sort task's 10 symbols after pad, bos and eos
  return c;
}

constexpr int64_t kRowsPerBatch = 24;

TrainedRun train(int threads) {
  blas::set_threads(threads);
  const ModelConfig c = threaded_model_config();
  Transformer<float> model(c, 5);
  // Lengths 16..30: every batch is padded, and holds about 24 x 24 tokens per side.
  const SyntheticSplit split = make_synthetic_split(SyntheticTask::kSort, 10, 16, 30, 96, 0, 9);
  Adam adam(model.table().size(), {0.9, 0.98, 1e-9});
  TrainedRun run;
  for (int step = 0; step < 4; ++step) {
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < kRowsPerBatch; ++i) rows.push_back((step * kRowsPerBatch + i) % 96);
    const Batch batch = make_batch(split.train, rows, c.pad_id, c.bos_id, c.eos_id);
    model.zero_grads();
    const ops::LossSums sums = model.forward(batch, 0.1f, true, rng_key(17, step));
    model.backward();
    model.scale_grads(1.0f / static_cast<float>(sums.tokens));
    adam.step(model.params().data(), model.grads().data(), 1e-3);
    run.losses.push_back(sums.loss / static_cast<double>(sums.tokens));
  }
  run.params.assign(model.params().data(), model.params().data() + model.params().size());
  return run;
}

class ThreadCount : public ::testing::Test {
 protected:
  void TearDown() override { blas::set_threads(saved_); }

 private:
  int saved_ = blas::threads();
};

TEST_F(ThreadCount, TwoThreadsSplitTheProducts) {
  // The (tokens x d_model) by (d_model x d_ff) product of a 24-sentence batch of 16+ tokens each:
  // split at two threads, so the runs below exercise the split path.
  blas::set_threads(2);
  const ModelConfig c = threaded_model_config();
  EXPECT_EQ(blas::product_threads(kRowsPerBatch * 16, c.d_ff, c.d_model), 2);
}

TEST_F(ThreadCount, LossesOfTwoThreadsEqualOneThreadsToRoundOff) {
  const TrainedRun one = train(1), two = train(2);
  ASSERT_EQ(one.losses.size(), two.losses.size());
  for (size_t step = 0; step < one.losses.size(); ++step) {
    // Per-token loss near 2.5 after sums of ~600 terms: float round-off is about 1e-6 of it.
    EXPECT_NEAR(two.losses[step], one.losses[step], 2e-5 * std::abs(one.losses[step]))
        << "step " << step;
  }
  // Four Adam steps of size 1e-3 move a parameter by at most 4e-3; round-off in the gradients can
  // flip a step's sign only where the gradient is near zero, which moves it by at most that.
  ASSERT_EQ(one.params.size(), two.params.size());
  double max_difference = 0;
  for (size_t i = 0; i < one.params.size(); ++i) {
    max_difference = std::max(max_difference, std::abs(double(one.params[i]) - two.params[i]));
  }
  EXPECT_LT(max_difference, 4e-3);
  EXPECT_NE(one.losses.front(), 0.0);
}

TEST_F(ThreadCount, TwoThreadsRepeatTheirRunBitForBit) {
  const TrainedRun first = train(2), second = train(2);
  EXPECT_EQ(first.losses, second.losses);
  EXPECT_TRUE(first.params == second.params) << "parameters differ between two 2-thread runs";
}

// The same with bf16 products: the operands' rounding is split over the threads on a guided
// schedule (which thread rounds a block varies from run to run) and oneDNN threads the products.
TEST_F(ThreadCount, TwoThreadsRepeatTheirBf16RunBitForBit) {
  const std::string reason = blas::bf16_unsupported_reason();
  if (!reason.empty()) GTEST_SKIP() << "bf16 products cannot run here: " << reason;
  const blas::Precision saved = blas::precision();
  blas::set_precision(blas::Precision::kBf16);
  const TrainedRun first = train(2), second = train(2);
  blas::set_precision(saved);
  EXPECT_EQ(first.losses, second.losses);
  EXPECT_TRUE(first.params == second.params) << "parameters differ between two 2-thread bf16 runs";
}

}  // namespace
}  // namespace attnlab
