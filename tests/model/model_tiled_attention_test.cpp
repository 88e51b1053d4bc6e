// model.attention: tiled against standard on the whole model: the same loss and every parameter
// gradient (float to 1e-5, double to 1e-10) with padding, for every architecture variant
// (tests/common/model_variants.h) with and without dropout (attention dropout included), on
// lengths that cross the 64-key tiles; and the attention maps the run log and diagnostics read
// (computed on request in tiled mode).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "common/tensor_testing.h"
#include "core/model/transformer.h"
#include "core/ops/attention_tiled.h"
#include "tests/common/model_variants.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

ModelConfig small_config(double dropout) {
  ModelConfig c = test::tiny_model_config();
  c.dropout = dropout;
  c.attention_dropout = dropout;
  c.max_positions = 80;  // long_batch's 70 source tokens span more than one key tile
  c.vocab_size = 13;     // long_batch's token ids
  return c;
}

// Three pairs, source length 70 and target length 66 (one full key tile plus a partial one),
// each sentence shorter than the padded length by a different amount.
Batch long_batch() {
  Batch b;
  b.size = 3;
  b.src_length = 70;
  b.tgt_length = 66;
  const int64_t src_real[] = {70, 41, 3}, tgt_real[] = {66, 65, 2};
  for (int64_t i = 0; i < b.size; ++i) {
    for (int64_t s = 0; s < b.src_length; ++s) {
      const int32_t id = s < src_real[i] ? static_cast<int32_t>(3 + (s * 7 + i) % 10) : 0;
      b.src.push_back(id);
      b.src_tokens += id != 0;
    }
    for (int64_t t = 0; t < b.tgt_length; ++t) {
      const bool real = t < tgt_real[i];
      b.tgt_in.push_back(real ? (t == 0 ? 1 : static_cast<int32_t>(3 + (t * 5 + i) % 10)) : 0);
      b.tgt_out.push_back(real ? static_cast<int32_t>(3 + (t * 5 + i + 5) % 10) : 0);
      b.tgt_tokens += real;
    }
  }
  return b;
}

struct Pass {
  ops::LossSums loss;
  std::vector<double> grads;
};

template <typename T>
Pass run(ModelConfig config, AttentionKernel kernel, bool training) {
  config.attention = kernel;
  // Gradients come from training forwards: without dropout, from a model without any.
  if (!training) config.dropout = config.attention_dropout = 0.0;
  Transformer<T> model(config, 21);
  const Batch batch = long_batch();
  model.zero_grads();
  Pass pass;
  pass.loss = model.forward(batch, 0.1f, true, 77);
  model.backward();
  model.scale_grads(T(1) / static_cast<T>(batch.tgt_tokens));
  pass.grads = test::convert<double>(model.grads());
  return pass;
}

class TiledModel : public ::testing::TestWithParam<test::VariantAndDropout> {};

TEST_P(TiledModel, FloatLossAndGradientsEqualStandard) {
  const auto& [variant, dropout] = GetParam();
  const ModelConfig config = variant.applied_to(small_config(dropout));
  const Pass standard = run<float>(config, AttentionKernel::kStandard, true);
  const Pass tiled = run<float>(config, AttentionKernel::kTiled, true);
  EXPECT_NEAR(tiled.loss.loss, standard.loss.loss, 1e-5 * std::fabs(standard.loss.loss));
  EXPECT_NEAR(tiled.loss.nll, standard.loss.nll, 1e-5 * std::fabs(standard.loss.nll));
  EXPECT_EQ(tiled.loss.tokens, standard.loss.tokens);
  EXPECT_LT(test::max_scaled_difference(tiled.grads, standard.grads), 1e-5);
}

TEST_P(TiledModel, DoubleLossAndGradientsEqualStandard) {
  const auto& [variant, dropout] = GetParam();
  const ModelConfig config = variant.applied_to(small_config(dropout));
  const Pass standard = run<double>(config, AttentionKernel::kStandard, true);
  const Pass tiled = run<double>(config, AttentionKernel::kTiled, true);
  EXPECT_NEAR(tiled.loss.loss, standard.loss.loss, 1e-10 * std::fabs(standard.loss.loss));
  EXPECT_LT(test::max_scaled_difference(tiled.grads, standard.grads), 1e-10);
  // Not trivially equal: the gradient is far from zero.
  double largest = 0.0;
  for (double g : standard.grads) largest = std::max(largest, std::fabs(g));
  EXPECT_GT(largest, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, TiledModel, test::variants_with_dropout(0.2),
                         test::variant_and_dropout_name);

TEST(TiledModelProbe, AttentionMapsEqualStandard) {
  const ModelConfig base = small_config(0.1);
  ModelConfig tiled_config = base;
  tiled_config.attention = AttentionKernel::kTiled;
  Transformer<float> standard(base, 4), tiled(tiled_config, 4);
  const Batch batch = long_batch();
  standard.forward(batch, 0.0f, false, 0);
  tiled.forward(batch, 0.0f, false, 0);
  for (AttentionStack stack : kAttentionStacks) {
    for (int64_t layer = 0; layer < 2; ++layer) {
      SCOPED_TRACE(std::string(to_string(stack)) + " layer " + std::to_string(layer));
      TensorView<const float> expected = standard.attention_probs(stack, layer);
      TensorView<const float> got = tiled.attention_probs(stack, layer);
      ASSERT_EQ(got.shape(), expected.shape());
      const std::vector<float> a(got.data(), got.data() + got.numel()),
          b(expected.data(), expected.data() + expected.numel());
      EXPECT_LT(test::max_scaled_difference(a, b), 1e-6);
      // Diagnostics read the same maps with the projections beside them.
      const AttentionActivations<float>& acts = tiled.attention_activations(stack, layer);
      EXPECT_EQ(acts.probs.data(), got.data());
      EXPECT_EQ(acts.q_heads.shape(), standard.attention_activations(stack, layer).q_heads.shape());
    }
  }
  // A new forward replaces the maps: they follow the new batch's shape.
  Batch shorter = long_batch();
  shorter.size = 1;
  shorter.src.resize(70);
  shorter.tgt_in.resize(66);
  shorter.tgt_out.resize(66);
  tiled.forward(shorter, 0.0f, false, 0);
  EXPECT_EQ(tiled.attention_probs(AttentionStack::kDecoderCross, 1).shape(), Shape({1, 2, 66, 70}));
}

TEST(TiledModelWorkspace, DropsTheScoreMatrices) {
  // Tiled replaces every block's (B,H,T,S) probabilities by a (B,H,T) logsumexp and the
  // (B,H,L,L) backward scratch by the per-worker tiles, and keeps every block's (B,T,H*V) joined
  // heads (its backward reads them as O; the standard kernel's backward rebuilds them from the
  // probabilities, so it keeps them in one pool); nothing else in the workspace changes.
  const ModelConfig base = small_config(0.0);
  ModelConfig tiled_config = base;
  tiled_config.attention = AttentionKernel::kTiled;
  Transformer<float> standard(base, 4), tiled(tiled_config, 4);
  const Batch batch = long_batch();
  standard.forward(batch, 0.0f, true, 0);
  tiled.forward(batch, 0.0f, true, 0);
  auto aligned = [](int64_t n) { return (n + 15) / 16 * 16; };  // Arena views are 64-byte aligned
  const int64_t B = 3, H = 2, S = 70, T = 66, layers = 2;
  const int64_t probs =
      layers * (aligned(B * H * S * S) + aligned(B * H * T * T) + aligned(B * H * T * S));
  const int64_t logsumexp = layers * (aligned(B * H * S) + 2 * aligned(B * H * T));
  const int64_t scratch =
      aligned(ops::attention_tiled_scratch_elements(ops::attention_tiled_workers()));
  const int64_t V = 5;  // tiny_model_config's d_v
  const int64_t joined = layers * (aligned(B * S * H * V) + 2 * aligned(B * T * H * V));
  EXPECT_EQ(standard.workspace_elements() - tiled.workspace_elements(),
            probs - logsumexp + aligned(B * H * S * S) - scratch - joined);
  EXPECT_EQ(tiled.attention_activations(AttentionStack::kEncoderSelf, 0).logsumexp.shape(),
            Shape({B, H, S}));
}

}  // namespace
}  // namespace attnlab
