// The parameter name table of the paper's Transformer (names as in fairseq, see docs/design.md).
#include "core/model/param_table.h"

#include <cmath>

#include "core/util/rng.h"

namespace attnlab {
namespace {

void add_attention(ParamTable& table, const ModelConfig& c, const std::string& prefix,
                   const std::string& component) {
  const int64_t qk_width = c.heads * c.d_k;
  const int64_t v_width = c.heads * c.d_v;
  table.add(prefix + ".q_proj.weight", {qk_width, c.d_model}, component, ParamInit::kXavierUniform);
  table.add(prefix + ".q_proj.bias", {qk_width}, component, ParamInit::kZeros);
  table.add(prefix + ".k_proj.weight", {qk_width, c.d_model}, component, ParamInit::kXavierUniform);
  table.add(prefix + ".k_proj.bias", {qk_width}, component, ParamInit::kZeros);
  table.add(prefix + ".v_proj.weight", {v_width, c.d_model}, component, ParamInit::kXavierUniform);
  table.add(prefix + ".v_proj.bias", {v_width}, component, ParamInit::kZeros);
  table.add(prefix + ".out_proj.weight", {c.d_model, v_width}, component,
            ParamInit::kXavierUniform);
  table.add(prefix + ".out_proj.bias", {c.d_model}, component, ParamInit::kZeros);
  if (c.attention_scale.learned()) {
    table.add(prefix + ".scale", {1}, component, ParamInit::kConstant,
              c.attention_scale.initial_value(c.d_k));
  }
}

// A norm's gain, and a bias for LayerNorm (RMSNorm has none).
void add_norm(ParamTable& table, const ModelConfig& c, const std::string& prefix) {
  table.add(prefix + ".weight", {c.d_model}, "norms", ParamInit::kOnes);
  if (c.norm_type == NormType::kLayerNorm) {
    table.add(prefix + ".bias", {c.d_model}, "norms", ParamInit::kZeros);
  }
}

void add_ffn(ParamTable& table, const ModelConfig& c, const std::string& prefix,
             const std::string& component) {
  table.add(prefix + ".fc1.weight", {c.d_ff, c.d_model}, component, ParamInit::kXavierUniform);
  table.add(prefix + ".fc1.bias", {c.d_ff}, component, ParamInit::kZeros);
  table.add(prefix + ".fc2.weight", {c.d_model, c.d_ff}, component, ParamInit::kXavierUniform);
  table.add(prefix + ".fc2.bias", {c.d_model}, component, ParamInit::kZeros);
}

}  // namespace

ParamTable::ParamTable(const ModelConfig& c) {
  const Shape embedding_shape{c.vocab_size, c.d_model};
  add("encoder.embed_tokens.weight", embedding_shape, "embeddings", ParamInit::kEmbeddingNormal);
  if (!c.tie_embeddings) {
    add("decoder.embed_tokens.weight", embedding_shape, "embeddings", ParamInit::kEmbeddingNormal);
    add("decoder.output_projection.weight", embedding_shape, "output", ParamInit::kXavierUniform);
  }
  if (c.output_bias) {
    add("decoder.output_projection.bias", {c.vocab_size}, "output", ParamInit::kZeros);
  }
  if (c.positions == PositionKind::kLearned) {
    add("encoder.embed_positions.weight", {c.max_positions, c.d_model}, "positions",
        ParamInit::kEmbeddingNormal);
    add("decoder.embed_positions.weight", {c.max_positions, c.d_model}, "positions",
        ParamInit::kEmbeddingNormal);
  }
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    const std::string layer = "encoder.layers." + std::to_string(i);
    add_attention(*this, c, layer + ".self_attn", "encoder.attention");
    add_norm(*this, c, layer + ".self_attn_layer_norm");
    add_ffn(*this, c, layer, "encoder.ffn");
    add_norm(*this, c, layer + ".final_layer_norm");
  }
  if (c.norm == NormPlacement::kPre) add_norm(*this, c, "encoder.layer_norm");
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    const std::string layer = "decoder.layers." + std::to_string(i);
    add_attention(*this, c, layer + ".self_attn", "decoder.self_attention");
    add_norm(*this, c, layer + ".self_attn_layer_norm");
    add_attention(*this, c, layer + ".encoder_attn", "decoder.cross_attention");
    add_norm(*this, c, layer + ".encoder_attn_layer_norm");
    add_ffn(*this, c, layer, "decoder.ffn");
    add_norm(*this, c, layer + ".final_layer_norm");
  }
  if (c.norm == NormPlacement::kPre) add_norm(*this, c, "decoder.layer_norm");
}

int ParamTable::add(const std::string& name, Shape shape, const std::string& component,
                    ParamInit init, double init_value) {
  CHECK(by_name_.count(name) == 0) << "parameter '" << name << "' declared twice";
  ParamEntry e{name, shape, size_, component, init, init_value};
  // Entries start on 16-element boundaries so every tensor is 64-byte aligned for SIMD kernels.
  size_ += (shape.numel() + 15) / 16 * 16;
  entries_.push_back(e);
  const int index = static_cast<int>(entries_.size()) - 1;
  by_name_[name] = index;
  return index;
}

int ParamTable::index_of(const std::string& name) const {
  auto it = by_name_.find(name);
  CHECK(it != by_name_.end()) << "no parameter named '" << name << "' in this model";
  return it->second;
}

template <typename T>
void ParamTable::initialise(T* buffer, const ModelConfig& config, uint64_t seed) const {
  Rng rng(rng_key(seed, 0x1417));  // the init stream, distinct from data and dropout streams
  for (int64_t i = 0; i < size_; ++i) buffer[i] = T(0);
  for (const ParamEntry& e : entries_) {
    T* values = buffer + e.offset;
    const int64_t n = e.shape.numel();
    switch (e.init) {
      case ParamInit::kZeros: break;
      case ParamInit::kOnes:
        for (int64_t j = 0; j < n; ++j) values[j] = T(1);
        break;
      case ParamInit::kConstant:
        for (int64_t j = 0; j < n; ++j) values[j] = static_cast<T>(e.init_value);
        break;
      case ParamInit::kXavierUniform: {
        // U(-a, a), a = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio; fairseq's projections).
        const double bound = std::sqrt(6.0 / static_cast<double>(e.shape[0] + e.shape[1]));
        for (int64_t j = 0; j < n; ++j) values[j] = static_cast<T>(rng.uniform(-bound, bound));
        break;
      }
      case ParamInit::kEmbeddingNormal: {
        // N(0, d_model^-1/2): with the sqrt(d_model) input scale, embeddings enter at unit scale.
        const double std_dev = 1.0 / std::sqrt(static_cast<double>(config.d_model));
        for (int64_t j = 0; j < n; ++j) values[j] = static_cast<T>(rng.normal() * std_dev);
        break;
      }
    }
  }
}

template void ParamTable::initialise<float>(float*, const ModelConfig&, uint64_t) const;
template void ParamTable::initialise<double>(double*, const ModelConfig&, uint64_t) const;

}  // namespace attnlab
