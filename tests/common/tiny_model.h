// The tiny Transformer the model, decoding and training tests start from: 2+2 layers, d_model 8,
// d_ff 12, two heads whose d_k = 3 and d_v = 5 differ from each other and from d_model / heads (so
// a mix-up of the three widths shows in a shape or a gradient), vocabulary 11, 16 positions, no
// dropout, the paper's Post-LN, sinusoids and 1/sqrt(d_k). Small enough for double-precision
// finite differences; a test sets only the fields its case is about, and says why.
#pragma once

#include "core/data/batch.h"
#include "core/model/model_config.h"

namespace attnlab::test {

inline ModelConfig tiny_model_config() {
  ModelConfig c;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.d_model = 8;
  c.d_ff = 12;
  c.heads = 2;
  c.d_k = 3;
  c.d_v = 5;
  c.dropout = 0.0;
  c.attention_dropout = 0.0;
  c.norm = NormPlacement::kPost;
  c.norm_type = NormType::kLayerNorm;
  c.positions = PositionKind::kSinusoidal;
  c.attention_scale = AttentionScale::parse("rsqrt_dk");
  c.max_positions = 16;
  c.vocab_size = 11;
  return c;
}

// Two sentence pairs for tiny_model_config; the second is shorter on both sides (padded with 0).
inline Batch tiny_batch() {
  Batch b;
  b.size = 2;
  b.src_length = 5;
  b.tgt_length = 4;
  b.src = {3, 4, 5, 6, 2, 7, 8, 2, 0, 0};
  b.tgt_in = {1, 9, 10, 3, 1, 4, 0, 0};
  b.tgt_out = {9, 10, 3, 2, 4, 2, 0, 0};
  b.src_tokens = 8;
  b.tgt_tokens = 6;
  return b;
}

}  // namespace attnlab::test
