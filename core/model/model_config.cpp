// ModelConfig defaults and cross-field rules.
#include "core/model/model_config.h"

#include <sstream>

#include "core/util/check.h"

namespace attnlab {

void ModelConfig::resolve_defaults() {
  if (heads > 0 && d_k == 0) d_k = d_model / heads;
  if (heads > 0 && d_v == 0) d_v = d_model / heads;
}

std::vector<ModelProblem> ModelConfig::problems() const {
  std::vector<ModelProblem> found;
  auto require = [&](bool holds, std::vector<std::string> keys, const std::string& message) {
    if (!holds) found.push_back({std::move(keys), message});
  };
  auto at_least_one = [&](const char* key, int64_t value) {
    require(value >= 1, {key}, std::string(key) + " must be >= 1, got " + std::to_string(value));
  };
  at_least_one("model.encoder_layers", encoder_layers);
  at_least_one("model.decoder_layers", decoder_layers);
  at_least_one("model.d_model", d_model);
  at_least_one("model.d_ff", d_ff);
  at_least_one("model.heads", heads);
  at_least_one("model.d_k", d_k);
  at_least_one("model.d_v", d_v);
  auto probability = [&](const char* key, double value) {
    std::ostringstream message;
    message << key << " must be in [0, 1), got " << value;
    require(value >= 0.0 && value < 1.0, {key}, message.str());
  };
  probability("model.dropout", dropout);
  probability("model.attention_dropout", attention_dropout);
  require(positions != PositionKind::kSinusoidal || d_model % 2 == 0,
          {"model.d_model", "model.positions"},
          "model.d_model must be even for sinusoidal positions (sin/cos pairs), got " +
              std::to_string(d_model));
  at_least_one("model.max_positions", max_positions);
  require(vocab_size >= 4, {"model.vocab_size"},
          "model.vocab_size must be >= 4 (pad, bos, eos and a symbol), got " +
              std::to_string(vocab_size));
  for (int32_t id : {pad_id, bos_id, eos_id}) {
    require(id >= 0 && id < vocab_size,
            {"model.pad_id", "model.bos_id", "model.eos_id", "model.vocab_size"},
            "model special token id " + std::to_string(id) + " outside the vocabulary [0, " +
                std::to_string(vocab_size) + ")");
  }
  require(pad_id != bos_id && pad_id != eos_id && bos_id != eos_id,
          {"model.pad_id", "model.bos_id", "model.eos_id"},
          "model.pad_id, bos_id and eos_id must differ, got " + std::to_string(pad_id) + ", " +
              std::to_string(bos_id) + ", " + std::to_string(eos_id));
  std::ostringstream eps;
  eps << "model.layer_norm_eps must be positive, got " << layer_norm_eps;
  require(layer_norm_eps > 0.0, {"model.layer_norm_eps"}, eps.str());
  return found;
}

void ModelConfig::validate() const {
  const std::vector<ModelProblem> found = problems();
  if (!found.empty()) throw Error(found.front().message);
}

std::string to_string(NormPlacement norm) { return norm_placement_names().name(norm); }
std::string to_string(NormType type) { return norm_type_names().name(type); }
std::string to_string(PositionKind positions) { return position_names().name(positions); }
std::string to_string(AttentionKernel kernel) { return attention_kernel_names().name(kernel); }
NormPlacement parse_norm(const std::string& text) { return norm_placement_names().parse(text); }
NormType parse_norm_type(const std::string& text) { return norm_type_names().parse(text); }
PositionKind parse_positions(const std::string& text) { return position_names().parse(text); }
AttentionKernel parse_attention_kernel(const std::string& text) {
  return attention_kernel_names().parse(text);
}

}  // namespace attnlab
