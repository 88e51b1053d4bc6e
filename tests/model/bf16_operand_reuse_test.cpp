// In bf16 the model rounds a matrix that several products read once for all of them
// (blas::Bf16OperandReuse: a linear layer's output gradient, the output weight across the loss's
// blocks, the input that q, k and v share, the encoder output every decoder layer's keys and values
// read). A held copy is only right while its matrix does not change: a training step with the
// scopes must give the loss and gradients of the same step with every product rounding its own
// operands, bit for bit, and round fewer elements.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/transformer.h"
#include "core/tensor/blas.h"
#include "tests/common/bf16_precision.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

struct Bf16Step {
  float loss = 0.0f;
  std::vector<float> grads;
  int64_t rounded = 0;
};

// One training forward and backward in bf16, with dropout and the loss in blocks of 3 rows, with
// or without operand reuse.
Bf16Step bf16_training_step(const ModelConfig& config, bool reuse) {
  const test::Bf16PrecisionScope bf16_precision;
  const bool before = blas::Bf16OperandReuse::set_enabled(reuse);
  Transformer<float> model(config, 7);
  model.set_loss_block_bytes(3 * config.vocab_size * static_cast<int64_t>(sizeof(float)));
  model.zero_grads();
  Bf16Step step;
  const int64_t rounded_before = blas::Bf16OperandReuse::rounded_elements();
  step.loss = static_cast<float>(model.forward(test::tiny_batch(), 0.1f, true, 99).loss);
  model.backward();
  step.rounded = blas::Bf16OperandReuse::rounded_elements() - rounded_before;
  step.grads = model.grads();
  blas::Bf16OperandReuse::set_enabled(before);
  return step;
}

class Bf16OperandReuseInTheModel : public ::testing::TestWithParam<NormPlacement> {
 protected:
  void SetUp() override {
    const std::string reason = blas::bf16_unsupported_reason();
    if (!reason.empty()) GTEST_SKIP() << "bf16 products cannot run here: " << reason;
  }
};

TEST_P(Bf16OperandReuseInTheModel, TrainingStepEqualsTheStepWithoutReuseBitForBit) {
  ModelConfig config = test::tiny_model_config();
  config.norm = GetParam();
  config.dropout = config.attention_dropout = 0.2;
  const Bf16Step with_reuse = bf16_training_step(config, true);
  const Bf16Step without = bf16_training_step(config, false);
  EXPECT_EQ(with_reuse.loss, without.loss);
  ASSERT_EQ(with_reuse.grads.size(), without.grads.size());
  size_t differing = 0;
  for (size_t i = 0; i < without.grads.size(); ++i)
    differing += with_reuse.grads[i] != without.grads[i];
  EXPECT_EQ(differing, 0U) << "of " << without.grads.size() << " gradients";
  EXPECT_LT(with_reuse.rounded, without.rounded);
}

INSTANTIATE_TEST_SUITE_P(Norms, Bf16OperandReuseInTheModel,
                         ::testing::Values(NormPlacement::kPost, NormPlacement::kPre),
                         [](const ::testing::TestParamInfo<NormPlacement>& info) {
                           return info.param == NormPlacement::kPost ? std::string("PostLN")
                                                                     : std::string("PreLN");
                         });

}  // namespace
}  // namespace attnlab
