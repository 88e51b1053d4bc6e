// The cached incremental decoder against the full decoder re-run on every prefix. Both run the
// same decoder layer (Transformer::layer_forward), the cache one position at a time, so in double
// precision they differ only by the order of a few sums: the bound is 1e-12 (measured: at most
// 8.9e-16, which includes the test's own log-softmax against the model's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "core/decode/beam.h"
#include "core/decode/decoder_state.h"
#include "core/decode/greedy.h"
#include "core/model/decode_buffers.h"
#include "core/model/param_names.h"
#include "tests/common/model_variants.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

ModelConfig small_config() {
  ModelConfig c = test::tiny_model_config();
  c.d_model = 16;  // four heads of d_k 3 and d_v 5: neither width is d_model / heads
  c.d_ff = 24;
  c.heads = 4;
  c.max_positions = 32;  // the longest prefix decoded
  c.vocab_size = 13;
  return c;
}

// Every architecture variant (tests/common/model_variants.h), under either attention kernel.
using Combination = std::tuple<test::ModelVariant, AttentionKernel>;
class KvCache : public ::testing::TestWithParam<Combination> {};

// Decodes two sentences 7 steps with the cache and compares every step's log-probabilities with
// those of one full decoder forward over the 7 positions; returns the largest difference.
template <typename T>
double max_incremental_difference(const ModelConfig& config) {
  Transformer<T> model(config, 11);
  Batch source;
  source.size = 2;
  source.src_length = 6;
  source.src = {3, 4, 5, 6, 7, 2, 8, 9, 2, 0, 0, 0};  // sentence 1 padded
  const std::vector<std::vector<int32_t>> targets = {{1, 5, 9, 4, 12, 3, 7},
                                                     {1, 10, 11, 6, 3, 3, 8}};
  const int64_t steps = 7;
  const int64_t vocab = config.vocab_size;
  // Full decoder: one forward over all 7 positions (causal, so row t sees the prefix up to t).
  Batch full = source;
  full.tgt_length = steps;
  for (const auto& t : targets) {
    full.tgt_in.insert(full.tgt_in.end(), t.begin(), t.end());
    full.tgt_out.insert(full.tgt_out.end(), t.begin(), t.end());
  }
  model.keep_log_probs(true);
  model.forward(full, 0.0f, false, 0);
  const std::vector<T> expected(model.log_probs().data(),
                                model.log_probs().data() + model.log_probs().numel());

  double worst = 0.0;
  DecoderState<T> state(model, source, steps);
  for (int64_t t = 0; t < steps; ++t) {
    TensorView<const T> logits =
        state.step({targets[0][static_cast<size_t>(t)], targets[1][static_cast<size_t>(t)]});
    for (int64_t b = 0; b < 2; ++b) {
      const T* row = logits.data() + b * vocab;
      double max_logit = row[0];
      for (int64_t j = 1; j < vocab; ++j) max_logit = std::max<double>(max_logit, row[j]);
      double sum = 0.0;
      for (int64_t j = 0; j < vocab; ++j) sum += std::exp(row[j] - max_logit);
      for (int64_t j = 0; j < vocab; ++j) {
        const double log_prob = row[j] - max_logit - std::log(sum);
        const double difference =
            std::fabs(log_prob - expected[static_cast<size_t>((b * steps + t) * vocab + j)]);
        worst = std::max(worst, difference);
      }
    }
  }
  return worst;
}

TEST_P(KvCache, IncrementalLogitsEqualFullDecoderOnEveryPrefix) {
  const auto& [variant, kernel] = GetParam();
  ModelConfig config = variant.applied_to(small_config());
  config.attention = kernel;  // decoding attends with the standard kernel either way
  EXPECT_LE(max_incremental_difference<double>(config), 1e-12);
}

// In float a decoder step's products run on oneDNN's fp32 engine (blas::Fp32Engine), the full
// decoder's on OpenBLAS: the two agree to float rounding, here on products wide enough for
// oneDNN's blocked kernels (d_model 64, a 301-token vocabulary). Measured: 1.6e-6; the bound is
// about ten times that.
TEST(KvCache, FloatDecodingOnOneDnnEqualsTheFullDecoderToFloatRounding) {
  ModelConfig config = small_config();
  config.d_model = 64;
  config.d_k = config.d_v = 16;
  config.d_ff = 96;
  config.vocab_size = 301;
  EXPECT_LE(max_incremental_difference<float>(config), 2e-5);
}

// A float state multiplies by the copies of Transformer::step_weights packed when it was made
// (blas::PackedWeights). After the state is made, every matrix of the model but the embedding
// tables is doubled (the list is not consulted): the state's logits stay bit-for-bit those of a
// state over the unchanged model, so no product of a step reads a weight it did not pack (the
// encoder and cross-attention's keys and values ran when the state was made), though a state made
// after the change sees it. Changing the target embedding, which a step reads unpacked, does
// change them.
TEST(KvCache, FloatStepsMultiplyByTheWeightsPackedWhenTheStateWasMade) {
  ModelConfig config = small_config();
  config.tie_embeddings = false;
  Batch source;
  source.size = 2;
  source.src_length = 3;
  source.src = {3, 4, 2, 5, 2, 0};
  auto logits_after_two_steps = [](DecoderState<float>& state) {
    state.step({1, 1});
    TensorView<const float> logits = state.step({6, 9});
    return std::vector<float>(logits.data(), logits.data() + logits.numel());
  };
  auto double_matrices = [](Transformer<float>& model) {
    for (auto& [name, view] : model.table().named_views<float>(model.params().data())) {
      if (view.shape().rank() != 2 || name.find(".embed_") != std::string::npos) continue;
      for (int64_t i = 0; i < view.numel(); ++i) view.data()[i] *= 2.0f;
    }
  };
  Transformer<float> unchanged(config, 5);
  DecoderState<float> reference(unchanged, source, 4);
  const std::vector<float> expected = logits_after_two_steps(reference);

  Transformer<float> model(config, 5);
  DecoderState<float> packed_before(model, source, 4);
  double_matrices(model);
  DecoderState<float> packed_after(model, source, 4);
  EXPECT_EQ(logits_after_two_steps(packed_before), expected);
  EXPECT_NE(logits_after_two_steps(packed_after), expected);

  Transformer<float> embedding_changed(config, 5);
  DecoderState<float> reads_embedding(embedding_changed, source, 4);
  TensorView<float> embedding = embedding_changed.param(param_names::token_embedding(true));
  for (int64_t i = 0; i < embedding.numel(); ++i) embedding.data()[i] *= 2.0f;
  EXPECT_NE(logits_after_two_steps(reads_embedding), expected);
}

std::string combination_name(const ::testing::TestParamInfo<Combination>& info) {
  const auto& [variant, kernel] = info.param;
  return variant.name() + "_" + to_string(kernel);
}

INSTANTIATE_TEST_SUITE_P(AllVariants, KvCache,
                         ::testing::Combine(::testing::ValuesIn(test::model_variants()),
                                            ::testing::Values(AttentionKernel::kStandard,
                                                              AttentionKernel::kTiled)),
                         combination_name);

// Sentences of three source tokens each, one after another in `tokens`.
Batch three_token_sources(std::vector<int32_t> tokens) {
  Batch source;
  source.size = static_cast<int64_t>(tokens.size()) / 3;
  source.src_length = 3;
  source.src = std::move(tokens);
  return source;
}

TEST(KvCache, ReorderKeepsTheSelectedSentences) {
  Transformer<double> model(small_config(), 4);
  const Batch source = three_token_sources({3, 4, 2, 5, 2, 0});
  // Two positions cached before the reorder and two after, so that the kept caches grow again.
  DecoderState<double> both(model, source, 5);
  both.step({1, 1});
  both.step({8, 9});
  both.reorder({1, 1, 0});
  both.step({6, 7, 6});
  TensorView<const double> reordered = both.step({3, 4, 5});
  DecoderState<double> alone(model, three_token_sources({5, 2, 0}), 5);
  alone.step({1});
  alone.step({9});
  alone.step({7});
  TensorView<const double> expected = alone.step({4});
  for (int64_t j = 0; j < 13; ++j) EXPECT_NEAR(reordered[13 + j], expected[j], 1e-12);
}

// A beam search's reorders: beams of one sentence swap places (their sentences stay, so the
// cross-attention caches stay where they are) and then the sentences themselves move (the cross
// caches move with them). Every row must go on as a state that was fed its history alone.
TEST(KvCache, ReorderWithinAndAcrossSentencesKeepsEachRowsHistory) {
  Transformer<double> model(small_config(), 4);
  const Batch source = three_token_sources({3, 4, 2, 5, 2, 0});
  DecoderState<double> beams(model, source, 5);
  beams.step({1, 1});
  beams.reorder({0, 0, 1, 1});
  beams.step({5, 6, 7, 8});
  beams.reorder({1, 0, 3, 2});  // each sentence's two beams swap
  beams.step({3, 4, 5, 6});
  beams.reorder({3, 2, 1, 1});  // the sentences swap, and one beam of sentence 0 is copied
  TensorView<const double> logits = beams.step({9, 10, 11, 12});
  const int64_t vocab = logits.dim(1);
  // Row r's sentence and the tokens it was fed, from the reorders above.
  const std::vector<std::pair<int64_t, std::vector<int32_t>>> histories = {
      {1, {1, 7, 6, 9}}, {1, {1, 8, 5, 10}}, {0, {1, 5, 4, 11}}, {0, {1, 5, 4, 12}}};
  for (int64_t r = 0; r < 4; ++r) {
    const auto& [sentence, tokens] = histories[static_cast<size_t>(r)];
    Batch alone_source;
    alone_source.size = 1;
    alone_source.src_length = 3;
    alone_source.src.assign(source.src.begin() + sentence * 3,
                            source.src.begin() + sentence * 3 + 3);
    DecoderState<double> alone(model, alone_source, 5);
    TensorView<const double> expected;
    for (const int32_t token : tokens) expected = alone.step({token});
    for (int64_t j = 0; j < vocab; ++j) {
      EXPECT_NEAR(logits[r * vocab + j], expected[j], 1e-12) << "row " << r << ", token " << j;
    }
  }
}

// KV caches take the buffers of caches that ended only while a DecodeBufferReuse lives, the
// smallest that is large enough, and none stay kept once the last scope ends.
TEST(DecodeBufferReuse, CachesTakeTheBuffersOfCachesThatEnded) {
  using Reuse = DecodeBufferReuse;
  using Cache = ::attnlab::KvCache<float>;  // the fixture above is also named KvCache
  const int64_t elements = 2 * 3 * 6 * 4;   // batch 2, 3 heads, capacity 6, width 4
  { const Cache cache(2, 3, 4, 4, 6); }
  EXPECT_EQ(Reuse::kept_elements<float>(), 0) << "no reuse scope: freed with the cache";
  {
    const Reuse reuse;
    const float* keys = nullptr;
    {
      const Cache first(2, 3, 4, 4, 6);
      keys = first.keys.data();
    }
    EXPECT_EQ(Reuse::kept_elements<float>(), 2 * elements);
    {
      const Reuse nested;
      // A cache of half the positions takes the two kept buffers (keys and values), whole.
      const Cache smaller(2, 3, 4, 4, 3);
      EXPECT_EQ(Reuse::kept_elements<float>(), 0);
      EXPECT_TRUE(smaller.keys.data() == keys || smaller.values.data() == keys);
      EXPECT_EQ(smaller.keys.size(), static_cast<size_t>(elements));
      const Cache same(2, 3, 4, 4, 6);  // nothing kept left: fresh memory
      // Larger than anything kept: fresh memory, and zeroed like a new vector.
      const Cache larger(2, 3, 4, 4, 12);
      EXPECT_EQ(larger.keys.size(), static_cast<size_t>(2 * elements));
      EXPECT_TRUE(
          std::all_of(larger.keys.begin(), larger.keys.end(), [](float x) { return x == 0.0f; }));
    }
    EXPECT_EQ(Reuse::kept_elements<float>(), 2 * elements + 2 * elements + 2 * 2 * elements)
        << "the outer scope still lives";
    EXPECT_EQ(Reuse::kept_elements<double>(), 0) << "each element type keeps its own";
  }
  EXPECT_EQ(Reuse::kept_elements<float>(), 0) << "the last scope has ended";
}

// Buffers reused from a longer decoding hold its stale keys and values; a decoding made in them
// must equal one made in fresh memory (greedy, and beam search, whose reorders swap buffers).
TEST(DecodeBufferReuse, DecodingInReusedBuffersEqualsDecodingInFreshOnes) {
  const ModelConfig config = small_config();
  Transformer<float> model(config, 5);
  Batch longer;
  longer.size = 3;
  longer.src_length = 7;
  longer.src = {3, 4, 5, 6, 7, 8, 2, 9, 10, 11, 12, 3, 4, 2, 5, 6, 7, 8, 9, 10, 2};
  Batch source;
  source.size = 2;
  source.src_length = 4;
  source.src = {5, 9, 3, 2, 12, 4, 2, 0};
  BeamOptions options;
  options.beam = 3;
  options.max_len_offset = 6;
  const auto fresh_greedy = greedy_decode(model, source, 9);
  const auto fresh_beam = beam_decode(model, source, options);
  const DecodeBufferReuse reuse;
  greedy_decode(model, longer, 20);
  beam_decode(model, longer, options);
  ASSERT_GT(DecodeBufferReuse::kept_elements<float>(), 0);
  EXPECT_EQ(greedy_decode(model, source, 9), fresh_greedy);
  const auto reused_beam = beam_decode(model, source, options);
  ASSERT_EQ(reused_beam.size(), fresh_beam.size());
  for (size_t i = 0; i < fresh_beam.size(); ++i) {
    EXPECT_EQ(reused_beam[i].tokens, fresh_beam[i].tokens) << i;
    EXPECT_EQ(reused_beam[i].log_prob, fresh_beam[i].log_prob) << i;
  }
}

TEST(Greedy, NeverEmitsPadOrBosAndStopsAtMaxLength) {
  ModelConfig config = small_config();
  config.norm = NormPlacement::kPre;
  config.tie_embeddings = false;
  config.output_bias = true;
  Transformer<double> model(config, 2);
  // pad and bos become the most likely tokens by far and eos the least likely: decoding must skip
  // pad and bos and run to exactly max_length tokens.
  TensorView<double> bias = model.param("decoder.output_projection.bias");
  bias[config.pad_id] = 1e3;
  bias[config.bos_id] = 1e3;
  bias[config.eos_id] = -1e3;
  Batch source;
  source.size = 2;
  source.src_length = 3;
  source.src = {3, 4, 2, 5, 2, 0};
  const auto outputs = greedy_decode(model, source, 5);
  ASSERT_EQ(outputs.size(), 2u);
  for (const auto& output : outputs) {
    EXPECT_EQ(output.size(), 5u);
    for (int32_t token : output) {
      EXPECT_GE(token, 3) << "pad, bos or eos emitted";
    }
  }
}

// A vocabulary of several argmax blocks (700 = 2 x 256 + 188): greedy_decode against the same
// cached logits scanned one token at a time. Output biases put the likely tokens in the second
// and the partial last block, and once on pad and bos in the last block (the scan must skip
// them and fall back to the best other token).
TEST(Greedy, ChoosesTheFirstMaximumOverALargeVocabulary) {
  for (int variant = 0; variant < 2; ++variant) {
    ModelConfig config = small_config();
    config.vocab_size = 700;
    config.tie_embeddings = false;
    config.output_bias = true;
    if (variant == 1) {
      config.pad_id = 690;
      config.bos_id = 650;
    }
    Transformer<double> model(config, 8 + static_cast<uint64_t>(variant));
    TensorView<double> bias = model.param("decoder.output_projection.bias");
    for (int64_t j : {300, 511, 612, 699}) bias[j] = 2.0;
    if (variant == 1) {
      bias[config.pad_id] = 1e3;
      bias[config.bos_id] = 1e3;
    }
    bias[config.eos_id] = -1e3;
    Batch source;
    source.size = 2;
    source.src_length = 3;
    source.src = {3, 4, 2, 5, 2, 0};
    const int64_t max_length = 6;
    const auto outputs = greedy_decode(model, source, max_length);
    // The oracle: the same decoder state, a strict `>` scan that skips pad and bos.
    DecoderState<double> state(model, source, max_length + 1);
    std::vector<int32_t> tokens(2, config.bos_id);
    std::vector<std::vector<int32_t>> expected(2);
    for (int64_t t = 0; t < max_length; ++t) {
      TensorView<const double> logits = state.step(tokens);
      for (int64_t b = 0; b < 2; ++b) {
        int32_t best = -1;
        for (int64_t j = 0; j < config.vocab_size; ++j) {
          if (j == config.pad_id || j == config.bos_id) continue;
          if (best < 0 || logits[b * config.vocab_size + j] > logits[b * config.vocab_size + best])
            best = static_cast<int32_t>(j);
        }
        tokens[static_cast<size_t>(b)] = best;
        expected[static_cast<size_t>(b)].push_back(best);
      }
    }
    EXPECT_EQ(outputs, expected) << "variant " << variant;
    for (const auto& output : outputs) {
      for (int32_t token : output) EXPECT_GT(token, 255) << "a biased token was expected";
    }
  }
}

}  // namespace
}  // namespace attnlab
