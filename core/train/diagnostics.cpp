// Gradient norms by layer and attention statistics by head.
#include "core/train/diagnostics.h"

#include <cmath>
#include <map>
#include <utility>

#include "core/model/param_names.h"

namespace attnlab {

LayerValues layer_gradient_norms(const Transformer<float>& model) {
  // By the table's groups: "decoder.layers.3", "encoder.layer_norm", "embeddings" (token and
  // position embeddings, output projection).
  std::map<std::string, double> squares;
  std::vector<std::string> order;
  const ParamTable& table = model.table();
  const std::vector<float>& grads = const_cast<Transformer<float>&>(model).grads();
  for (const ParamEntry& e : table.entries()) {
    const std::string& label = e.group;
    if (squares.count(label) == 0) order.push_back(label);
    double sum = 0.0;
    for (int64_t i = 0; i < e.shape.numel(); ++i) {
      const double g = grads[static_cast<size_t>(e.offset + i)];
      sum += g * g;
    }
    squares[label] += sum;
  }
  LayerValues result;
  for (const std::string& label : order) {
    result.labels.push_back(label);
    result.values.push_back(std::sqrt(squares[label]));
  }
  return result;
}

LayerValues attention_score_gradient_norms(const Transformer<float>& model) {
  const ModelConfig& c = model.config();
  const std::vector<float>& grads = const_cast<Transformer<float>&>(model).grads();
  const ParamTable& table = model.table();
  // (label, parameter prefix) in the order of attention_statistics.
  std::vector<std::pair<std::string, std::string>> blocks;
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    blocks.emplace_back("encoder_self.layers." + std::to_string(i),
                        param_names::self_attention(false, i));
  }
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    blocks.emplace_back("decoder_self.layers." + std::to_string(i),
                        param_names::self_attention(true, i));
  }
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    blocks.emplace_back("decoder_cross.layers." + std::to_string(i),
                        param_names::cross_attention(i));
  }
  LayerValues result;
  for (const auto& [label, prefix] : blocks) {
    double sum = 0.0;
    for (const std::string& name : {param_names::q_weight(prefix), param_names::q_bias(prefix),
                                    param_names::k_weight(prefix), param_names::k_bias(prefix)}) {
      const ParamEntry& e = table.entries()[static_cast<size_t>(table.index_of(name))];
      for (int64_t i = 0; i < e.shape.numel(); ++i) {
        const double g = grads[static_cast<size_t>(e.offset + i)];
        sum += g * g;
      }
    }
    result.labels.push_back(label);
    result.values.push_back(std::sqrt(sum));
  }
  return result;
}

AttentionStatistics attention_statistics(Transformer<float>& model, const Batch& probe) {
  model.forward(probe, 0.0f, false, 0);
  const ModelConfig& c = model.config();
  AttentionStatistics stats;
  stats.heads = c.heads;
  for (AttentionStack stack : kAttentionStacks) {
    const int64_t layers = in_decoder(stack) ? c.decoder_layers : c.encoder_layers;
    const bool queries_are_source = stack == AttentionStack::kEncoderSelf;
    const bool keys_are_source = stack != AttentionStack::kDecoderSelf;
    for (int64_t layer = 0; layer < layers; ++layer) {
      stats.labels.push_back(std::string(to_string(stack)) + ".layers." + std::to_string(layer));
      const AttentionActivations<float>& a = model.attention_activations(stack, layer);
      const float scale = model.attention_scale(model.attention_block_params(stack, layer));
      const int64_t B = a.probs.dim(0), H = a.probs.dim(1), Tq = a.probs.dim(2),
                    Sk = a.probs.dim(3);
      const int64_t K = a.q_heads.dim(3);
      for (int64_t h = 0; h < H; ++h) {
        double entropy = 0.0, rows = 0.0;
        double sum = 0.0, sum_squares = 0.0, pairs = 0.0;
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t t = 0; t < Tq; ++t) {
            const int32_t query_token =
                queries_are_source ? probe.src[static_cast<size_t>(b * probe.src_length + t)]
                                   : probe.tgt_in[static_cast<size_t>(b * probe.tgt_length + t)];
            if (query_token == c.pad_id) continue;
            const float* p = a.probs.data() + ((b * H + h) * Tq + t) * Sk;
            double row_entropy = 0.0;
            for (int64_t s = 0; s < Sk; ++s) {
              if (p[s] > 0.0f) row_entropy -= p[s] * std::log(static_cast<double>(p[s]));
            }
            entropy += row_entropy;
            rows += 1.0;
            const float* q = a.q_heads.data() + ((b * H + h) * Tq + t) * K;
            for (int64_t s = 0; s < Sk; ++s) {
              const int32_t key_token =
                  keys_are_source ? probe.src[static_cast<size_t>(b * probe.src_length + s)]
                                  : probe.tgt_in[static_cast<size_t>(b * probe.tgt_length + s)];
              if (key_token == c.pad_id || (stack == AttentionStack::kDecoderSelf && s > t))
                continue;
              const float* k = a.k_heads.data() + ((b * H + h) * Sk + s) * K;
              double dot = 0.0;
              for (int64_t j = 0; j < K; ++j) dot += static_cast<double>(q[j]) * k[j];
              const double logit = scale * dot;
              sum += logit;
              sum_squares += logit * logit;
              pairs += 1.0;
            }
          }
        }
        stats.entropy.push_back(rows > 0 ? entropy / rows : 0.0);
        const double mean = pairs > 0 ? sum / pairs : 0.0;
        stats.logit_variance.push_back(pairs > 0 ? sum_squares / pairs - mean * mean : 0.0);
      }
    }
  }
  return stats;
}

}  // namespace attnlab
