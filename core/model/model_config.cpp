// ModelConfig defaults and cross-field rules.
#include "core/model/model_config.h"

#include "core/util/check.h"

namespace attnlab {

void ModelConfig::resolve_defaults() {
  if (heads > 0 && d_k == 0) d_k = d_model / heads;
  if (heads > 0 && d_v == 0) d_v = d_model / heads;
}

void ModelConfig::validate() const {
  CHECK(encoder_layers >= 1) << "model.encoder_layers must be >= 1, got " << encoder_layers;
  CHECK(decoder_layers >= 1) << "model.decoder_layers must be >= 1, got " << decoder_layers;
  CHECK(d_model >= 1) << "model.d_model must be >= 1, got " << d_model;
  CHECK(d_ff >= 1) << "model.d_ff must be >= 1, got " << d_ff;
  CHECK(heads >= 1) << "model.heads must be >= 1, got " << heads;
  CHECK(d_k >= 1) << "model.d_k must be >= 1, got " << d_k;
  CHECK(d_v >= 1) << "model.d_v must be >= 1, got " << d_v;
  CHECK(dropout >= 0.0 && dropout < 1.0) << "model.dropout must be in [0, 1), got " << dropout;
  CHECK(attention_dropout >= 0.0 && attention_dropout < 1.0)
      << "model.attention_dropout must be in [0, 1), got " << attention_dropout;
  CHECK(positions != PositionKind::kSinusoidal || d_model % 2 == 0)
      << "model.d_model must be even for sinusoidal positions (sin/cos pairs), got " << d_model;
  CHECK(max_positions >= 1) << "model.max_positions must be >= 1, got " << max_positions;
  CHECK(vocab_size >= 4) << "model.vocab_size must be >= 4 (pad, bos, eos and a symbol), got "
                         << vocab_size;
  for (int32_t id : {pad_id, bos_id, eos_id}) {
    CHECK(id >= 0 && id < vocab_size)
        << "model special token id " << id << " outside the vocabulary [0, " << vocab_size << ")";
  }
  CHECK(pad_id != bos_id && pad_id != eos_id && bos_id != eos_id)
      << "model.pad_id, bos_id and eos_id must differ, got " << pad_id << ", " << bos_id << ", "
      << eos_id;
  CHECK(layer_norm_eps > 0.0) << "model.layer_norm_eps must be positive, got " << layer_norm_eps;
}

std::string to_string(NormPlacement norm) { return norm == NormPlacement::kPost ? "post" : "pre"; }

std::string to_string(NormType type) {
  return type == NormType::kLayerNorm ? "layernorm" : "rmsnorm";
}

NormType parse_norm_type(const std::string& text) {
  if (text == "layernorm") return NormType::kLayerNorm;
  if (text == "rmsnorm") return NormType::kRmsNorm;
  CHECK(false) << "model.norm_type '" << text << "' must be 'layernorm' (the paper) or 'rmsnorm'";
  return NormType::kLayerNorm;
}

std::string to_string(PositionKind positions) {
  return positions == PositionKind::kSinusoidal ? "sinusoidal" : "learned";
}

NormPlacement parse_norm(const std::string& text) {
  if (text == "post") return NormPlacement::kPost;
  if (text == "pre") return NormPlacement::kPre;
  CHECK(false) << "model.norm '" << text << "' must be 'post' (the paper) or 'pre'";
  return NormPlacement::kPost;
}

PositionKind parse_positions(const std::string& text) {
  if (text == "sinusoidal") return PositionKind::kSinusoidal;
  if (text == "learned") return PositionKind::kLearned;
  CHECK(false) << "model.positions '" << text << "' must be 'sinusoidal' or 'learned'";
  return PositionKind::kSinusoidal;
}

std::string to_string(AttentionKernel kernel) {
  return kernel == AttentionKernel::kStandard ? "standard" : "tiled";
}

AttentionKernel parse_attention_kernel(const std::string& text) {
  if (text == "standard") return AttentionKernel::kStandard;
  if (text == "tiled") return AttentionKernel::kTiled;
  CHECK(false) << "model.attention '" << text
               << "' must be 'standard' (probabilities stored) or 'tiled' (online softmax)";
  return AttentionKernel::kStandard;
}

}  // namespace attnlab
