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

namespace {

// Running sums of one (block, head) over every batch measured.
struct HeadSums {
  double entropy = 0.0, rows = 0.0;                  // every real query row
  double relative = 0.0, relative_rows = 0.0;        // rows that see at least two keys
  double sum = 0.0, sum_squares = 0.0, pairs = 0.0;  // scaled logits of visible pairs
};

}  // namespace

AttentionStatistics attention_statistics(Transformer<float>& model,
                                         const std::vector<Batch>& batches) {
  const ModelConfig& c = model.config();
  AttentionStatistics stats;
  stats.heads = c.heads;
  for (AttentionStack stack : kAttentionStacks) {
    const int64_t layers = in_decoder(stack) ? c.decoder_layers : c.encoder_layers;
    for (int64_t layer = 0; layer < layers; ++layer) {
      stats.labels.push_back(std::string(to_string(stack)) + ".layers." + std::to_string(layer));
    }
  }
  std::vector<HeadSums> sums(stats.labels.size() * static_cast<size_t>(c.heads));
  for (const Batch& batch : batches) {
    model.forward(batch, 0.0f, false, 0);
    stats.sentences += batch.size;
    size_t block = 0;
    for (AttentionStack stack : kAttentionStacks) {
      const int64_t layers = in_decoder(stack) ? c.decoder_layers : c.encoder_layers;
      const bool queries_are_source = stack == AttentionStack::kEncoderSelf;
      const bool keys_are_source = stack != AttentionStack::kDecoderSelf;
      const bool causal = stack == AttentionStack::kDecoderSelf;
      for (int64_t layer = 0; layer < layers; ++layer, ++block) {
        const AttentionActivations<float>& a = model.attention_activations(stack, layer);
        const float scale = model.attention_scale(model.attention_block_params(stack, layer));
        const int64_t B = a.probs.dim(0), H = a.probs.dim(1), Tq = a.probs.dim(2),
                      Sk = a.probs.dim(3);
        const int64_t K = a.q_heads.dim(3);
        for (int64_t b = 0; b < B; ++b) {
          auto query_token = [&](int64_t t) {
            return queries_are_source ? batch.src[static_cast<size_t>(b * batch.src_length + t)]
                                      : batch.tgt_in[static_cast<size_t>(b * batch.tgt_length + t)];
          };
          auto key_token = [&](int64_t s) {
            return keys_are_source ? batch.src[static_cast<size_t>(b * batch.src_length + s)]
                                   : batch.tgt_in[static_cast<size_t>(b * batch.tgt_length + s)];
          };
          int64_t real_keys = 0;
          for (int64_t s = 0; s < Sk; ++s) real_keys += key_token(s) != c.pad_id;
          for (int64_t h = 0; h < H; ++h) {
            HeadSums& head = sums[block * static_cast<size_t>(c.heads) + static_cast<size_t>(h)];
            for (int64_t t = 0; t < Tq; ++t) {
              if (query_token(t) == c.pad_id) continue;
              const float* p = a.probs.data() + ((b * H + h) * Tq + t) * Sk;
              double row_entropy = 0.0;
              for (int64_t s = 0; s < Sk; ++s) {
                if (p[s] > 0.0f) row_entropy -= p[s] * std::log(static_cast<double>(p[s]));
              }
              head.entropy += row_entropy;
              head.rows += 1.0;
              // Uniform attention over the n keys a row sees has entropy log n.
              const int64_t visible = causal ? t + 1 : real_keys;
              if (visible >= 2) {
                head.relative += row_entropy / std::log(static_cast<double>(visible));
                head.relative_rows += 1.0;
              }
              const float* q = a.q_heads.data() + ((b * H + h) * Tq + t) * K;
              for (int64_t s = 0; s < Sk; ++s) {
                if (key_token(s) == c.pad_id || (causal && s > t)) continue;
                const float* k = a.k_heads.data() + ((b * H + h) * Sk + s) * K;
                double dot = 0.0;
                for (int64_t j = 0; j < K; ++j) dot += static_cast<double>(q[j]) * k[j];
                const double logit = scale * dot;
                head.sum += logit;
                head.sum_squares += logit * logit;
                head.pairs += 1.0;
              }
            }
          }
        }
      }
    }
  }
  for (const HeadSums& head : sums) {
    stats.entropy.push_back(head.rows > 0 ? head.entropy / head.rows : 0.0);
    stats.relative_entropy.push_back(head.relative_rows > 0 ? head.relative / head.relative_rows
                                                            : std::nan(""));
    const double mean = head.pairs > 0 ? head.sum / head.pairs : 0.0;
    stats.logit_variance.push_back(head.pairs > 0 ? head.sum_squares / head.pairs - mean * mean
                                                  : 0.0);
  }
  return stats;
}

AttentionStatistics attention_statistics(Transformer<float>& model, const Batch& probe) {
  return attention_statistics(model, std::vector<Batch>{probe});
}

double mean_cross_attention_relative_entropy(const AttentionStatistics& stats) {
  double sum = 0.0;
  int64_t count = 0;
  for (size_t block = 0; block < stats.labels.size(); ++block) {
    if (stats.labels[block].rfind("decoder_cross.", 0) != 0) continue;
    for (int64_t h = 0; h < stats.heads; ++h) {
      const double value =
          stats.relative_entropy[block * static_cast<size_t>(stats.heads) + static_cast<size_t>(h)];
      if (std::isnan(value)) continue;
      sum += value;
      ++count;
    }
  }
  return count > 0 ? sum / static_cast<double>(count) : std::nan("");
}

io::HeadStatistics head_statistics(const AttentionStatistics& stats, int64_t step) {
  io::HeadStatistics result;
  result.labels = stats.labels;
  result.heads = stats.heads;
  result.values = {{"entropy", stats.entropy},
                   {"relative_entropy", stats.relative_entropy},
                   {"logit_variance", stats.logit_variance}};
  result.sentences = stats.sentences;
  result.step = step;
  return result;
}

}  // namespace attnlab
