// Parameter names, in fairseq's scheme (docs/design.md, "Parameter names"), built here only:
// ParamTable declares the tensors under these names, and the model, the diagnostics and the
// checkpoints find them by them.
#pragma once

#include <cstdint>
#include <string>

namespace attnlab::param_names {

inline std::string stack(bool decoder) { return decoder ? "decoder" : "encoder"; }
// "encoder.layers.3"
inline std::string layer(bool decoder, int64_t index) {
  return stack(decoder) + ".layers." + std::to_string(index);
}
inline std::string self_attention(bool decoder, int64_t index) {
  return layer(decoder, index) + ".self_attn";
}
inline std::string cross_attention(int64_t index) { return layer(true, index) + ".encoder_attn"; }
inline std::string self_attention_norm(bool decoder, int64_t index) {
  return layer(decoder, index) + ".self_attn_layer_norm";
}
inline std::string cross_attention_norm(int64_t index) {
  return layer(true, index) + ".encoder_attn_layer_norm";
}
inline std::string final_norm(bool decoder, int64_t index) {
  return layer(decoder, index) + ".final_layer_norm";
}
// The pre-LN norm after a stack's last layer.
inline std::string stack_norm(bool decoder) { return stack(decoder) + ".layer_norm"; }
inline std::string token_embedding(bool decoder) { return stack(decoder) + ".embed_tokens.weight"; }
inline std::string position_embedding(bool decoder) {
  return stack(decoder) + ".embed_positions.weight";
}
inline std::string output_weight() { return "decoder.output_projection.weight"; }
inline std::string output_bias() { return "decoder.output_projection.bias"; }

// Tensors of an attention block, a norm and an FFN, below their prefix.
inline std::string q_weight(const std::string& attention) { return attention + ".q_proj.weight"; }
inline std::string q_bias(const std::string& attention) { return attention + ".q_proj.bias"; }
inline std::string k_weight(const std::string& attention) { return attention + ".k_proj.weight"; }
inline std::string k_bias(const std::string& attention) { return attention + ".k_proj.bias"; }
inline std::string v_weight(const std::string& attention) { return attention + ".v_proj.weight"; }
inline std::string v_bias(const std::string& attention) { return attention + ".v_proj.bias"; }
inline std::string out_weight(const std::string& attention) {
  return attention + ".out_proj.weight";
}
inline std::string out_bias(const std::string& attention) { return attention + ".out_proj.bias"; }
inline std::string scale(const std::string& attention) { return attention + ".scale"; }
inline std::string norm_weight(const std::string& norm) { return norm + ".weight"; }
inline std::string norm_bias(const std::string& norm) { return norm + ".bias"; }
inline std::string fc1_weight(const std::string& layer) { return layer + ".fc1.weight"; }
inline std::string fc1_bias(const std::string& layer) { return layer + ".fc1.bias"; }
inline std::string fc2_weight(const std::string& layer) { return layer + ".fc2.weight"; }
inline std::string fc2_bias(const std::string& layer) { return layer + ".fc2.bias"; }

// The group of tensors outside every layer, as the diagnostics label it.
inline constexpr const char* kEmbeddingsGroup = "embeddings";

}  // namespace attnlab::param_names
