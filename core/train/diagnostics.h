// Training diagnostics behind the seed notes' claims: per-layer gradient norms (Post-LN vs
// Pre-LN, warmup), and per-head attention entropy and attention-logit variance (why sqrt(d_k)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/data/batch.h"
#include "core/io/run_log.h"
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
  // (blocks, heads), row-major. Rows are real (non-pad) query positions of every sentence.
  std::vector<double> entropy;  // mean entropy (nats) of the rows
  // Mean over the rows that see n >= 2 keys of H(row) / log n: 1 = uniform over the keys the row
  // sees (the real source tokens; for decoder self-attention, positions up to its own), 0 = all
  // weight on one key. NaN when no row sees two keys.
  std::vector<double> relative_entropy;
  std::vector<double> logit_variance;  // variance of scale * q.k over visible pairs
  int64_t heads = 0;
  int64_t sentences = 0;  // sentences measured
};

// Runs every batch through the model (no dropout, teacher forcing) and measures every attention
// block over all of their real rows (a dev set: batches of sentences padded to a common length).
AttentionStatistics attention_statistics(Transformer<float>& model,
                                         const std::vector<Batch>& batches);
// The same for one batch (a probe).
AttentionStatistics attention_statistics(Transformer<float>& model, const Batch& probe);

// How concentrated decoder-encoder attention is: the mean of relative_entropy over the
// decoder_cross blocks and their heads (NaN if there are none).
double mean_cross_attention_relative_entropy(const AttentionStatistics& stats);

// The statistics as the run file stores them (entropy, relative_entropy, logit_variance by head),
// measured with the parameters of `step`.
io::HeadStatistics head_statistics(const AttentionStatistics& stats, int64_t step);

}  // namespace attnlab
