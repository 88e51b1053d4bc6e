// The parameter name table of the paper's Transformer (names as in fairseq, see docs/design.md).
#include "core/model/param_table.h"

#include <cmath>

#include "core/model/param_names.h"
#include "core/util/rng.h"

namespace attnlab {
namespace {

namespace names = param_names;

void add_attention(ParamTable& table, const ModelConfig& c, const std::string& prefix,
                   const std::string& component) {
  const int64_t qk_width = c.heads * c.d_k;
  const int64_t v_width = c.heads * c.d_v;
  const ParamInit xavier = ParamInit::kXavierUniform;
  table.add(names::q_weight(prefix), {qk_width, c.d_model}, component, xavier);
  table.add(names::q_bias(prefix), {qk_width}, component, ParamInit::kZeros);
  table.add(names::k_weight(prefix), {qk_width, c.d_model}, component, xavier);
  table.add(names::k_bias(prefix), {qk_width}, component, ParamInit::kZeros);
  table.add(names::v_weight(prefix), {v_width, c.d_model}, component, xavier);
  table.add(names::v_bias(prefix), {v_width}, component, ParamInit::kZeros);
  table.add(names::out_weight(prefix), {c.d_model, v_width}, component, xavier);
  table.add(names::out_bias(prefix), {c.d_model}, component, ParamInit::kZeros);
  if (c.attention_scale.learned()) {
    table.add(names::scale(prefix), {1}, component, ParamInit::kConstant,
              c.attention_scale.initial_value(c.d_k));
  }
}

// A norm's gain, and a bias for LayerNorm (RMSNorm has none).
void add_norm(ParamTable& table, const ModelConfig& c, const std::string& prefix) {
  table.add(names::norm_weight(prefix), {c.d_model}, "norms", ParamInit::kOnes);
  if (c.norm_type == NormType::kLayerNorm) {
    table.add(names::norm_bias(prefix), {c.d_model}, "norms", ParamInit::kZeros);
  }
}

void add_ffn(ParamTable& table, const ModelConfig& c, const std::string& prefix,
             const std::string& component) {
  const ParamInit xavier = ParamInit::kXavierUniform;
  table.add(names::fc1_weight(prefix), {c.d_ff, c.d_model}, component, xavier);
  table.add(names::fc1_bias(prefix), {c.d_ff}, component, ParamInit::kZeros);
  table.add(names::fc2_weight(prefix), {c.d_model, c.d_ff}, component, xavier);
  table.add(names::fc2_bias(prefix), {c.d_model}, component, ParamInit::kZeros);
}

}  // namespace

ParamTable::ParamTable(const ModelConfig& c) {
  const Shape embedding_shape{c.vocab_size, c.d_model};
  // Tensors added while `group` runs belong to that group (the diagnostics' unit: one layer,
  // a stack's final norm, or the embeddings).
  auto in_group = [this](const std::string& group, auto&& add_tensors) {
    const size_t first = entries_.size();
    add_tensors();
    for (size_t k = first; k < entries_.size(); ++k) entries_[k].group = group;
  };
  in_group(names::kEmbeddingsGroup, [&] {
    add(names::token_embedding(false), embedding_shape, "embeddings", ParamInit::kEmbeddingNormal);
    if (!c.tie_embeddings) {
      add(names::token_embedding(true), embedding_shape, "embeddings", ParamInit::kEmbeddingNormal);
      add(names::output_weight(), embedding_shape, "output", ParamInit::kXavierUniform);
    }
    if (c.output_bias) add(names::output_bias(), {c.vocab_size}, "output", ParamInit::kZeros);
    if (c.positions == PositionKind::kLearned) {
      for (bool decoder : {false, true}) {
        add(names::position_embedding(decoder), {c.max_positions, c.d_model}, "positions",
            ParamInit::kEmbeddingNormal);
      }
    }
  });
  for (bool decoder : {false, true}) {
    const int64_t layers = decoder ? c.decoder_layers : c.encoder_layers;
    for (int64_t i = 0; i < layers; ++i) {
      in_group(names::layer(decoder, i), [&] {
        add_attention(*this, c, names::self_attention(decoder, i),
                      decoder ? "decoder.self_attention" : "encoder.attention");
        add_norm(*this, c, names::self_attention_norm(decoder, i));
        if (decoder) {
          add_attention(*this, c, names::cross_attention(i), "decoder.cross_attention");
          add_norm(*this, c, names::cross_attention_norm(i));
        }
        add_ffn(*this, c, names::layer(decoder, i), decoder ? "decoder.ffn" : "encoder.ffn");
        add_norm(*this, c, names::final_norm(decoder, i));
      });
    }
    if (c.norm == NormPlacement::kPre) {
      in_group(names::stack_norm(decoder), [&] { add_norm(*this, c, names::stack_norm(decoder)); });
    }
  }
}

int ParamTable::add(const std::string& name, Shape shape, const std::string& component,
                    ParamInit init, double init_value) {
  CHECK(by_name_.count(name) == 0) << "parameter '" << name << "' declared twice";
  ParamEntry e{name, shape, size_, component, init, init_value, ""};
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
