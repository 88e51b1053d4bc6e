// Training diagnostics behind the seed notes' claims: per-layer gradient norms (Post-LN vs
// Pre-LN, warmup), and per-head attention entropy and attention-logit variance (why sqrt(d_k)).
#pragma once

#include <string>
#include <vector>

#include "core/data/batch.h"
#include "core/model/transformer.h"

namespace attnlab {

struct LayerValues {
  std::vector<std::string> labels;  // "embeddings", "encoder.layers.0", ..., "decoder.layers.5"
  std::vector<double> values;
};

// L2 norm of the gradient of every layer's parameters (embeddings and final norms included in
// "embeddings" and "<stack>.layer_norm").
LayerValues layer_gradient_norms(const Transformer<float>& model);

// L2 norm of the gradient of each attention block's query and key projections (weights and
// biases), labelled like AttentionStatistics ("encoder_self.layers.0", ...). These parameters
// reach the loss only through the attention logits, so their gradient has passed through the
// softmax Jacobian diag(p) - p p^T, which vanishes as the softmax saturates (why sqrt(d_k)).
LayerValues attention_score_gradient_norms(const Transformer<float>& model);

struct AttentionStatistics {
  std::vector<std::string> labels;  // "encoder_self.layers.0", ..., "decoder_cross.layers.5"
  std::vector<double> entropy;      // (blocks, heads): mean entropy (nats) of real query rows
  std::vector<double>
      logit_variance;  // (blocks, heads): variance of scale * q.k over visible pairs
  int64_t heads = 0;
};

// Runs `probe` through the model (no dropout) and measures every attention block.
AttentionStatistics attention_statistics(Transformer<float>& model, const Batch& probe);

}  // namespace attnlab
