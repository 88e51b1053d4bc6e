// core/train/diagnostics: the query/key gradient norm per attention block against a hand sum, and
// the trainer reporting gradients at step 1 (the initial parameters) as well as at the interval.
#include "core/train/diagnostics.h"

#include <gtest/gtest.h>

#include <cmath>

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
