// Whole-model central-difference gradient check in double precision, for every architecture
// variant (tests/common/model_variants.h) with and without dropout, with padding in source and
// target.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/gradcheck.h"
#include "core/model/transformer.h"
#include "tests/common/model_variants.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

using test::tiny_batch;

class ModelGradCheck : public ::testing::TestWithParam<test::VariantAndDropout> {};

TEST_P(ModelGradCheck, EveryParameterMatchesCentralDifferences) {
  const auto& [variant, dropout] = GetParam();
  ModelConfig config = variant.applied_to(test::tiny_model_config());
  config.dropout = dropout;
  config.attention_dropout = dropout;
  Transformer<double> model(config, 7);
  const Batch batch = tiny_batch();
  constexpr float kSmoothing = 0.1f;
  constexpr uint64_t kDropoutSeed = 99;  // fixed masks make the objective a smooth function
  model.zero_grads();
  model.forward(batch, kSmoothing, true, kDropoutSeed);
  model.backward();
  const std::vector<double> analytic = model.grads();

  const std::vector<test::GradTensor> tensors = test::parameter_tensors(model, analytic);
  auto objective = [&] { return model.forward(batch, kSmoothing, true, kDropoutSeed).loss; };
  test::GradCheckOptions options;
  options.max_per_tensor = 8;
  const test::GradCheckResult result = test::check_gradients(objective, tensors, options);
  EXPECT_TRUE(result.passed) << result.report;
  EXPECT_GT(result.checked, 500);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, ModelGradCheck, test::variants_with_dropout(0.2),
                         test::variant_and_dropout_name);

// Padding and the causal mask, exactly: changing a padded source token or a future target token
// changes no loss term of the positions that must not see it.
TEST(ModelMasks, FutureAndPaddedTokensDoNotLeak) {
  const ModelConfig config = test::tiny_model_config();  // heads * d_k != d_model, d_k != d_v
  Transformer<double> model(config, 5);
  model.keep_log_probs(true);
  Batch batch = tiny_batch();
  model.forward(batch, 0.0f, false, 0);
  const std::vector<double> before(model.log_probs().data(),
                                   model.log_probs().data() + model.log_probs().numel());
  // The last decoder input of sentence 0 influences only its own (last) row.
  Batch changed = batch;
  changed.tgt_in[3] = 7;
  model.forward(changed, 0.0f, false, 0);
  const int64_t vocab = config.vocab_size;
  for (int64_t i = 0; i < 3 * vocab; ++i) ASSERT_EQ(model.log_probs()[i], before[i]) << i;
  EXPECT_NE(model.log_probs()[3 * vocab], before[3 * vocab]);
  // The padding of sentence 1's source is invisible: replacing pad ids at padded slots with a
  // masked token would change embeddings, so instead compare a batch where sentence 1 is alone.
  Batch alone;
  alone.size = 1;
  alone.src_length = 3;
  alone.tgt_length = 2;
  alone.src = {7, 8, 2};
  alone.tgt_in = {1, 4};
  alone.tgt_out = {4, 2};
  model.forward(alone, 0.0f, false, 0);
  for (int64_t j = 0; j < 2 * vocab; ++j) {
    EXPECT_NEAR(model.log_probs()[j], before[4 * vocab + j], 1e-12) << j;
  }
}

}  // namespace
}  // namespace attnlab
