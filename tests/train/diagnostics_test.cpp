// core/train/diagnostics: the query/key gradient norm per attention block against a hand sum, and
// the trainer reporting gradients at step 1 (the initial parameters) as well as at the interval.
#include "core/train/diagnostics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/model/param_names.h"
#include "core/train/trainer.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

// Stacks of different depths, so that per-layer labels and their order are checked.
ModelConfig small_model() {
  ModelConfig c = test::tiny_model_config();
  c.encoder_layers = 1;
  c.d_ff = 16;
  c.d_v = 4;
  c.vocab_size = 10;
  return c;
}

void fill_params(Transformer<float>& model, const std::string& name, float value) {
  const ParamTable& table = model.table();
  const ParamEntry& e = table.entries()[static_cast<size_t>(table.index_of(name))];
  for (int64_t i = 0; i < e.shape.numel(); ++i) {
    model.params()[static_cast<size_t>(e.offset + i)] = value;
  }
}

// Two sentences padded to common lengths (pad 0, eos 2, bos 1): sources of 3 and 2 real tokens,
// decoder inputs of 2 and 3.
Batch two_sentences() {
  Batch batch;
  batch.size = 2;
  batch.src_length = 3;
  batch.tgt_length = 3;
  batch.src = {5, 6, 2, 7, 2, 0};
  batch.tgt_in = {1, 8, 0, 1, 9, 4};
  batch.tgt_out = {8, 2, 0, 9, 4, 2};
  return batch;
}

// Sentence `i` of `batch` alone, without padding.
Batch sentence(const Batch& batch, int64_t i, int64_t src_length, int64_t tgt_length) {
  Batch one;
  one.size = 1;
  one.src_length = src_length;
  one.tgt_length = tgt_length;
  const auto src = batch.src.begin() + i * batch.src_length;
  const auto tgt_in = batch.tgt_in.begin() + i * batch.tgt_length;
  const auto tgt_out = batch.tgt_out.begin() + i * batch.tgt_length;
  one.src.assign(src, src + src_length);
  one.tgt_in.assign(tgt_in, tgt_in + tgt_length);
  one.tgt_out.assign(tgt_out, tgt_out + tgt_length);
  return one;
}

void fill(Transformer<float>& model, const std::string& name, float value) {
  const ParamTable& table = model.table();
  const ParamEntry& e = table.entries()[static_cast<size_t>(table.index_of(name))];
  for (int64_t i = 0; i < e.shape.numel(); ++i) {
    model.grads()[static_cast<size_t>(e.offset + i)] = value;
  }
}

TEST(LayerGradientNorms, OneNormPerLayerStackNormAndTheEmbeddings) {
  ModelConfig c = small_model();
  c.norm = NormPlacement::kPre;  // adds encoder.layer_norm and decoder.layer_norm
  Transformer<float> model(c, 1);
  model.zero_grads();
  fill(model, "encoder.embed_tokens.weight", 1.0f);  // 10 x 8 ones: sqrt(80)
  fill(model, "decoder.layers.1.fc2.bias", 1.0f);    // 8 ones
  fill(model, "decoder.layers.1.encoder_attn.q_proj.bias",
       2.0f);                                      // 6 twos: with the above, sqrt(32)
  fill(model, "encoder.layer_norm.weight", 3.0f);  // 8 threes: sqrt(72)
  const LayerValues norms = layer_gradient_norms(model);
  EXPECT_EQ(norms.labels, (std::vector<std::string>{"embeddings", "encoder.layers.0",
                                                    "encoder.layer_norm", "decoder.layers.0",
                                                    "decoder.layers.1", "decoder.layer_norm"}));
  const std::vector<double> expected = {std::sqrt(80.0),       0.0, std::sqrt(72.0), 0.0,
                                        std::sqrt(8.0 + 24.0), 0.0};
  ASSERT_EQ(norms.values.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(norms.values[i], expected[i], 1e-9) << norms.labels[i];
  }
}

TEST(AttentionScoreGradientNorms, SumQueryAndKeyGradientsOfEachBlockOnly) {
  Transformer<float> model(small_model(), 1);
  model.zero_grads();
  // Decoder layer 1 cross-attention: q_proj.weight (6 x 8) all 2, k_proj.bias (6) all -1.
  fill(model, "decoder.layers.1.encoder_attn.q_proj.weight", 2.0f);
  fill(model, "decoder.layers.1.encoder_attn.k_proj.bias", -1.0f);
  // Values, outputs and FFNs never count.
  fill(model, "decoder.layers.1.encoder_attn.v_proj.weight", 100.0f);
  fill(model, "decoder.layers.1.encoder_attn.out_proj.weight", 100.0f);
  fill(model, "encoder.layers.0.fc1.weight", 100.0f);
  // Encoder self-attention: k_proj.weight (6 x 8) all 0.5, q_proj.bias (6) all 3.
  fill(model, "encoder.layers.0.self_attn.k_proj.weight", 0.5f);
  fill(model, "encoder.layers.0.self_attn.q_proj.bias", 3.0f);

  const LayerValues norms = attention_score_gradient_norms(model);
  const std::vector<std::string> labels = {"encoder_self.layers.0", "decoder_self.layers.0",
                                           "decoder_self.layers.1", "decoder_cross.layers.0",
                                           "decoder_cross.layers.1"};
  EXPECT_EQ(norms.labels, labels);
  ASSERT_EQ(norms.values.size(), 5u);
  EXPECT_NEAR(norms.values[0], std::sqrt(48 * 0.25 + 6 * 9.0), 1e-9);
  EXPECT_EQ(norms.values[1], 0.0);
  EXPECT_EQ(norms.values[2], 0.0);
  EXPECT_EQ(norms.values[3], 0.0);
  EXPECT_NEAR(norms.values[4], std::sqrt(48 * 4.0 + 6 * 1.0), 1e-9);
}

TEST(AttentionScoreGradientNorms, LabelsMatchTheAttentionStatistics) {
  Transformer<float> model(small_model(), 2);
  Batch probe;
  probe.size = 1;
  probe.src_length = 3;
  probe.tgt_length = 2;
  probe.src = {5, 6, 2};
  probe.tgt_in = {1, 7};
  probe.tgt_out = {7, 2};
  EXPECT_EQ(attention_score_gradient_norms(model).labels,
            attention_statistics(model, probe).labels);
}

// With the query and key projections zero every logit is 0, so each row attends uniformly to the
// keys it sees and has entropy log n: relative entropy 1 everywhere, and the mean entropy in nats
// is a sum of logarithms fixed by the padding and the causal mask.
TEST(AttentionStatistics, UniformAttentionOverTheVisibleKeysIsOneAndLogN) {
  const ModelConfig c = small_model();  // 1 encoder layer, 2 decoder layers, 2 heads
  Transformer<float> model(c, 3);
  std::vector<std::string> blocks = {param_names::self_attention(false, 0)};
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    blocks.push_back(param_names::self_attention(true, i));
    blocks.push_back(param_names::cross_attention(i));
  }
  for (const std::string& block : blocks) {
    for (const std::string& name : {param_names::q_weight(block), param_names::q_bias(block),
                                    param_names::k_weight(block), param_names::k_bias(block)}) {
      fill_params(model, name, 0.0f);
    }
  }
  const AttentionStatistics stats =
      attention_statistics(model, std::vector<Batch>{two_sentences()});
  ASSERT_EQ(stats.labels.size(), 5u);
  ASSERT_EQ(stats.relative_entropy.size(), 5u * static_cast<size_t>(c.heads));
  EXPECT_EQ(stats.sentences, 2);
  const double l2 = std::log(2.0), l3 = std::log(3.0);
  // Encoder rows: 3 rows over 3 keys, 2 rows over 2. Cross rows: 2 over 3 sources, 3 over 2.
  // Decoder self rows: positions 0,1 and 0,1,2 see 1,2 and 1,2,3 keys.
  const std::vector<double> expected = {(3 * l3 + 2 * l2) / 5, (l2 + l2 + l3) / 5,
                                        (l2 + l2 + l3) / 5, (2 * l3 + 3 * l2) / 5,
                                        (2 * l3 + 3 * l2) / 5};
  const std::vector<std::string> order = {"encoder_self", "decoder_self", "decoder_self",
                                          "decoder_cross", "decoder_cross"};
  for (size_t block = 0; block < 5; ++block) {
    EXPECT_EQ(stats.labels[block].rfind(order[block], 0), 0u) << stats.labels[block];
    for (int64_t h = 0; h < c.heads; ++h) {
      const size_t i = block * static_cast<size_t>(c.heads) + static_cast<size_t>(h);
      EXPECT_NEAR(stats.relative_entropy[i], 1.0, 1e-6) << stats.labels[block];
      EXPECT_NEAR(stats.entropy[i], expected[block], 1e-6) << stats.labels[block];
      EXPECT_NEAR(stats.logit_variance[i], 0.0, 1e-12) << stats.labels[block];
    }
  }
  EXPECT_NEAR(mean_cross_attention_relative_entropy(stats), 1.0, 1e-6);
}

// Rows are pooled over batches: measuring the two sentences in one padded batch or one by one in
// batches of their own gives the same statistics (padding is not counted).
TEST(AttentionStatistics, PaddedBatchAndSentencesAloneAgree) {
  Transformer<float> model(small_model(), 11);
  const Batch both = two_sentences();
  const AttentionStatistics together = attention_statistics(model, std::vector<Batch>{both});
  const AttentionStatistics apart = attention_statistics(
      model, std::vector<Batch>{sentence(both, 0, 3, 2), sentence(both, 1, 2, 3)});
  EXPECT_EQ(apart.sentences, 2);
  ASSERT_EQ(together.entropy.size(), apart.entropy.size());
  bool some_not_uniform = false;
  for (size_t i = 0; i < together.entropy.size(); ++i) {
    EXPECT_NEAR(together.entropy[i], apart.entropy[i], 1e-5) << i;
    EXPECT_NEAR(together.relative_entropy[i], apart.relative_entropy[i], 1e-5) << i;
    EXPECT_NEAR(together.logit_variance[i], apart.logit_variance[i], 1e-5) << i;
    some_not_uniform |= together.relative_entropy[i] < 0.999;
  }
  EXPECT_TRUE(some_not_uniform);  // random projections: the check above is not 1 == 1
}

TEST(AttentionStatistics, CrossAttentionMeanSkipsOtherBlocksAndRowlessHeads) {
  AttentionStatistics stats;
  stats.heads = 2;
  stats.labels = {"encoder_self.layers.0", "decoder_cross.layers.0", "decoder_cross.layers.1"};
  stats.relative_entropy = {0.1, 0.1, 0.5, 0.7, std::nan(""), 0.3};
  EXPECT_NEAR(mean_cross_attention_relative_entropy(stats), 0.5, 1e-12);
  stats.labels = {"encoder_self.layers.0"};
  stats.relative_entropy = {0.1, 0.1};
  EXPECT_TRUE(std::isnan(mean_cross_attention_relative_entropy(stats)));
}

TEST(TrainerDiagnostics, GradientsAreReportedAtStepOneAndAtTheInterval) {
  ExperimentConfig c;
  c.data.task = DataTask::kReverse;
  c.data.synthetic = {6, 3, 5, 200, 20};
  c.model = small_model();
  c.model.max_positions = 8;
  c.train.batch_tokens = 100;
  c.train.steps = 7;
  c.train.lr.schedule = LrSchedule::Kind::kConstant;
  c.train.lr.peak = 1e-3;
  c.eval.every = 0;
  c.train.checkpoint_every = 0;
  c.log.diagnostics_every = 3;
  dist::LocalComm comm;
  Trainer trainer(c, make_synthetic_source(c), comm);
  std::vector<int64_t> steps;
  std::vector<double> norms;
  TrainerCallbacks callbacks;
  callbacks.on_gradients = [&](int64_t step) {
    steps.push_back(step);
    norms.push_back(attention_score_gradient_norms(trainer.model()).values.front());
  };
  ASSERT_EQ(trainer.run(callbacks), TrainOutcome::kCompleted);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 3, 6}));
  for (double norm : norms) EXPECT_GT(norm, 0.0);  // the encoder's logits do reach the loss
}

}  // namespace
}  // namespace attnlab
