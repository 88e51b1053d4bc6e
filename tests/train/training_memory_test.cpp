// training_memory: the breakdown `attnlab params` prints, against sizes computed by hand for the
// tiny model, and against what a real step allocates.
#include <gtest/gtest.h>

#include <vector>

#include "core/data/synthetic.h"
#include "core/model/param_count.h"
#include "core/model/param_table.h"
#include "core/model/transformer.h"
#include "core/train/memory_estimate.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

// The arena rounds every buffer up to 16 floats (64-byte alignment).
int64_t aligned(int64_t elements) { return (elements + 15) / 16 * 16; }

TEST(TrainingMemory, ModelAndAdamAreFourBytesPerStoredParameterEach) {
  const ModelConfig c = test::tiny_model_config();
  const TrainingMemory memory = training_memory(c, 3, 5, 4);
  // The parameter buffer starts every tensor on a 16-float boundary (param_table.cpp), so it
  // holds each tensor's count rounded up to 16.
  const ParamTable table(c);
  int64_t stored = 0;
  for (const ParamEntry& entry : table.entries()) stored += aligned(entry.shape.numel());
  EXPECT_GE(stored, analytic_parameter_count(c));
  const double bytes = 4.0 * static_cast<double>(stored);
  EXPECT_EQ(memory.parameters, bytes);
  EXPECT_EQ(memory.gradients, bytes);
  EXPECT_EQ(memory.adam_moments, 2 * bytes);
}

TEST(TrainingMemory, ActivationsAndLogitsEqualTheHandCount) {
  // Post-LN, standard attention kernel, ReLU (in place): B = 3 sentences, S = 5, T = 4; D = 8,
  // F = 12, H = 2, d_k = 3, d_v = 5, two layers per stack, vocabulary 11.
  const ModelConfig c = test::tiny_model_config();
  const int64_t B = 3, S = 5, T = 4, D = 8, F = 12, H = 2, K = 3, V = 5;
  // A post-LN sub-layer keeps its norm's input, mean and rstd, and its output.
  auto residual = [&](int64_t L) {
    return aligned(B * L * D) + 2 * aligned(B * L) + aligned(B * L * D);
  };
  // Attention keeps the projected heads and the probabilities; the joined heads live in a pool
  // (backward rebuilds them from the probabilities and values).
  auto attention = [&](int64_t L, int64_t keys) {
    return residual(L) + aligned(B * H * L * K) + aligned(B * H * keys * K) +
           aligned(B * H * keys * V) + aligned(B * H * L * keys);
  };
  auto feed_forward = [&](int64_t L) { return residual(L) + aligned(B * L * F); };
  const int64_t encoder = aligned(B * S * D) + 2 * (attention(S, S) + feed_forward(S));
  const int64_t decoder =
      aligned(B * T * D) + 2 * (attention(T, T) + attention(T, S) + feed_forward(T));
  const TrainingMemory memory = training_memory(c, B, S, T);
  EXPECT_EQ(memory.activations, 4.0 * static_cast<double>(encoder + decoder));
  EXPECT_EQ(memory.logits, 4.0 * static_cast<double>(aligned(B * T * c.vocab_size)));
  EXPECT_GT(memory.scratch, 0.0);
}

TEST(TrainingMemory, TheCountIsWhatAStepAllocatesAndLeavesTheStepIntact) {
  ModelConfig c = test::tiny_model_config();
  c.vocab_size = 13;  // the sort task's 10 symbols after pad, bos and eos
  const SyntheticSplit split = make_synthetic_split(SyntheticTask::kSort, 10, 5, 5, 8, 0, 9);
  const Batch batch = make_batch(split.train, {0, 1, 2}, c.pad_id, c.bos_id, c.eos_id);
  Transformer<float> counted(c, 5), plain(c, 5);
  for (Transformer<float>* model : {&counted, &plain}) {
    model->zero_grads();
    model->forward(batch, 0.1f, true, 3);
  }
  // Counting another shape between forward and backward must not touch the step's buffers.
  const WorkspaceParts other = counted.workspace_parts(7, 9, 11);
  EXPECT_GT(other.total(), counted.workspace_elements());
  counted.backward();
  plain.backward();
  EXPECT_TRUE(counted.grads() == plain.grads());

  const WorkspaceParts parts =
      counted.workspace_parts(batch.size, batch.src_length, batch.tgt_length);
  EXPECT_EQ(parts.total(), counted.workspace_elements());
}

}  // namespace
}  // namespace attnlab
