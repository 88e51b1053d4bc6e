// ModelConfig: the architecture of one Transformer. Defaults are the paper's base model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ops/activation.h"
#include "core/ops/attention_scale.h"
#include "core/util/enum_names.h"

namespace attnlab {

// post: LN(x + sublayer(x)) (the paper); pre: x + sublayer(LN(x)).
enum class NormPlacement { kPost, kPre };
// layernorm: (x - mean) / sqrt(var + eps) * w + b (the paper);
// rmsnorm: x / sqrt(mean(x^2) + eps) * w, no centring and no bias (Zhang & Sennrich 2019).
enum class NormType { kLayerNorm, kRmsNorm };
enum class PositionKind { kSinusoidal, kLearned };
// How attention is computed (the same function either way, to float round-off):
// standard: the full (B,H,T,S) probabilities are stored for backward (core/ops/attention.cpp);
// tiled: key tiles with an online softmax, only the (B,H,T) logsumexp is stored and backward
// recomputes the probabilities (core/ops/attention_tiled.cpp): O(T) instead of O(T*S) memory.
enum class AttentionKernel { kStandard, kTiled };

// One broken rule: the config keys involved (a config error points at the last of them that a
// file sets) and the message naming them, their values and what was expected.
struct ModelProblem {
  std::vector<std::string> keys;
  std::string message;
};

struct ModelConfig {
  int64_t encoder_layers = 6;  // N in the paper, encoder side
  int64_t decoder_layers = 6;  // N in the paper, decoder side
  int64_t d_model = 512;       // width of the residual stream
  int64_t d_ff = 2048;         // inner width of the position-wise FFN
  // relu | gelu, between the FFN's two linears
  FfnActivation activation = FfnActivation::kRelu;
  int64_t heads = 8;               // h
  int64_t d_k = 64;                // per-head query/key width (0 = d_model / heads)
  int64_t d_v = 64;                // per-head value width (0 = d_model / heads)
  double dropout = 0.1;            // P_drop on sub-layer outputs and embedding sums
  double attention_dropout = 0.0;  // dropout on attention probabilities
  NormPlacement norm = NormPlacement::kPost;
  NormType norm_type = NormType::kLayerNorm;
  PositionKind positions = PositionKind::kSinusoidal;
  int64_t max_positions = 1024;    // rows of the position table
  AttentionScale attention_scale;  // rsqrt_dk | none | inv_dk | <number> | learned
  AttentionKernel attention = AttentionKernel::kStandard;  // standard | tiled
  bool tie_embeddings = true;  // one matrix for source, target embedding and output projection
  bool output_bias = false;    // a bias on the pre-softmax projection
  int64_t vocab_size = 37000;  // shared vocabulary size N
  int32_t pad_id = 0;
  int32_t bos_id = 1;
  int32_t eos_id = 2;
  double layer_norm_eps = 1e-5;  // eps of every norm, LayerNorm or RMSNorm

  // Fills d_k/d_v left at 0 with d_model / heads.
  void resolve_defaults();
  // The rules this config breaks, in rule order; empty when it is valid.
  std::vector<ModelProblem> problems() const;
  // Throws Error with the first problem's message.
  void validate() const;
};

// The names of each enum's values (parse, print, and the option's "a | b" text), declared once,
// beside the enums (core/util/enum_names.h).
inline const EnumNames<NormPlacement>& norm_placement_names() {
  static const EnumNames<NormPlacement> names(
      "model.norm", {{NormPlacement::kPost, "post"}, {NormPlacement::kPre, "pre"}});
  return names;
}

inline const EnumNames<NormType>& norm_type_names() {
  static const EnumNames<NormType> names(
      "model.norm_type", {{NormType::kLayerNorm, "layernorm"}, {NormType::kRmsNorm, "rmsnorm"}});
  return names;
}

inline const EnumNames<PositionKind>& position_names() {
  static const EnumNames<PositionKind> names(
      "model.positions",
      {{PositionKind::kSinusoidal, "sinusoidal"}, {PositionKind::kLearned, "learned"}});
  return names;
}

inline const EnumNames<AttentionKernel>& attention_kernel_names() {
  static const EnumNames<AttentionKernel> names(
      "model.attention",
      {{AttentionKernel::kStandard, "standard"}, {AttentionKernel::kTiled, "tiled"}});
  return names;
}

// Thin wrappers over the tables above.
std::string to_string(NormPlacement norm);
std::string to_string(NormType type);
std::string to_string(PositionKind positions);
std::string to_string(AttentionKernel kernel);
NormPlacement parse_norm(const std::string& text);
NormType parse_norm_type(const std::string& text);
PositionKind parse_positions(const std::string& text);
AttentionKernel parse_attention_kernel(const std::string& text);

}  // namespace attnlab
