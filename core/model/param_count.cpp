// Parameter counts from the name table, the closed-form formula, and training FLOPs per token.
#include "core/model/param_count.h"

#include <map>

#include "core/model/param_table.h"

namespace attnlab {

std::vector<ComponentCount> parameter_counts(const ModelConfig& config) {
  static const char* kOrder[] = {"embeddings",
                                 "positions",
                                 "encoder.attention",
                                 "encoder.ffn",
                                 "decoder.self_attention",
                                 "decoder.cross_attention",
                                 "decoder.ffn",
                                 "norms",
                                 "output"};
  std::map<std::string, int64_t> totals;
  const ParamTable table(config);
  for (const ParamEntry& e : table.entries()) totals[e.component] += e.shape.numel();
  std::vector<ComponentCount> counts;
  for (const char* component : kOrder) {
    auto it = totals.find(component);
    if (it != totals.end() && it->second > 0) counts.push_back({component, it->second});
  }
  return counts;
}

namespace {

// The closed form once, in the caller's arithmetic: int64 for the exact count, double for a
// magnitude that cannot overflow (configuration checks use it before any int64 product is formed).
template <typename Count>
BasicParameterFormula<Count> describe_parameters(const ModelConfig& c) {
  using Formula = BasicParameterFormula<Count>;
  using Counts = typename Formula::Counts;
  const Count D = static_cast<Count>(c.d_model), F = static_cast<Count>(c.d_ff);
  const Count H = static_cast<Count>(c.heads), K = static_cast<Count>(c.d_k);
  const Count V = static_cast<Count>(c.d_v), N = static_cast<Count>(c.vocab_size);
  const bool learned_scale = c.attention_scale.learned();
  const bool layer_norm = c.norm_type == NormType::kLayerNorm;
  // One attention block: Q and K projections D -> H*K, V projection D -> H*V, output H*V -> D,
  // each with a bias; plus the learned scale when present.
  const Count attention =
      2 * (D * H * K + H * K) + (D * H * V + H * V) + (H * V * D + D) + (learned_scale ? 1 : 0);
  const Count ffn = (D * F + F) + (F * D + D);
  const Count norm = (layer_norm ? 2 : 1) * D;  // RMSNorm: a gain, no bias
  Formula formula;
  formula.definitions = {{"attn",
                          std::string("2 (D H d_k + H d_k) + (D H d_v + H d_v) + (H d_v D + D)") +
                              (learned_scale ? " + 1 (learned scale)" : ""),
                          attention},
                         {"ffn", "(D d_ff + d_ff) + (d_ff D + D)", ffn},
                         {"LN", layer_norm ? "2 D" : "D (RMSNorm: no bias)", norm}};
  formula.terms.push_back({"N_enc (attn + ffn + 2 LN)",
                           static_cast<Count>(c.encoder_layers) * (attention + ffn + 2 * norm),
                           Counts::kEncoderLayers});
  formula.terms.push_back({"N_dec (2 attn + ffn + 3 LN)",
                           static_cast<Count>(c.decoder_layers) * (2 * attention + ffn + 3 * norm),
                           Counts::kDecoderLayers});
  // A shared table, or source and target embeddings and the output projection.
  formula.terms.push_back({c.tie_embeddings ? "vocab D" : "3 vocab D",
                           N * D * (c.tie_embeddings ? 1 : 3), Counts::kEmbeddings});
  if (c.output_bias) formula.terms.push_back({"vocab (output bias)", N, Counts::kEmbeddings});
  if (c.positions == PositionKind::kLearned) {
    formula.terms.push_back({"2 max_positions D (learned positions)",
                             2 * static_cast<Count>(c.max_positions) * D, Counts::kEmbeddings});
  }
  if (c.norm == NormPlacement::kPre) {
    formula.terms.push_back(
        {"2 LN (Pre-LN: each stack's final norm)", 2 * norm, Counts::kStackNorms});
  }
  return formula;
}

}  // namespace

ParameterFormula parameter_formula(const ModelConfig& c) { return describe_parameters<int64_t>(c); }

int64_t analytic_parameter_count(const ModelConfig& c) { return parameter_formula(c).total(); }

double approximate_parameter_count(const ModelConfig& c) {
  return describe_parameters<double>(c).total();
}

double training_flops_per_target_token(const ModelConfig& c, int64_t src_length,
                                       int64_t tgt_length) {
  // Multiply-adds of the matmuls, counted per sentence pair, times 2 FLOPs each, times 3 for
  // forward + backward (backward costs two matmuls per forward matmul).
  const double D = static_cast<double>(c.d_model), F = static_cast<double>(c.d_ff);
  const double HK = static_cast<double>(c.heads * c.d_k), HV = static_cast<double>(c.heads * c.d_v);
  const double S = static_cast<double>(src_length), T = static_cast<double>(tgt_length);
  const double projections = 2 * D * HK + D * HV + HV * D;
  const double ffn = 2 * D * F;
  double encoder = S * (projections + ffn) + S * S * (HK + HV);
  double decoder_self = T * projections + T * T * (HK + HV);
  double decoder_cross = T * (D * HK + HV * D) + S * (D * HK + D * HV) + T * S * (HK + HV);
  double decoder = decoder_self + decoder_cross + T * ffn;
  double output = T * D * static_cast<double>(c.vocab_size);
  double forward_macs = static_cast<double>(c.encoder_layers) * encoder +
                        static_cast<double>(c.decoder_layers) * decoder + output;
  return 3.0 * 2.0 * forward_macs / T;
}

}  // namespace attnlab
