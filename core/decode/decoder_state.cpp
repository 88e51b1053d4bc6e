// Incremental decoding with a KV cache: one position per call, the same arithmetic as the full
// decoder (tested to agree to 1e-5), without recomputing the prefix.
// Legend: B batch, S source length, H heads, K d_k, V d_v, D d_model, F d_ff, N vocabulary,
// P max steps.
#include "core/decode/decoder_state.h"

#include <algorithm>
#include <cmath>

namespace attnlab {
namespace {

template <typename T>
TensorView<T> view(std::vector<T>& values, Shape shape) {
  CHECK(static_cast<int64_t>(values.size()) >= shape.numel())
      << "decoder buffer of " << values.size() << " cannot hold " << shape.str();
  return TensorView<T>(values.data(), shape);
}

}  // namespace

template <typename T>
DecoderState<T>::DecoderState(Transformer<T>& model, const Batch& source, int64_t max_steps)
    : model_(model), batch_(source.size), src_length_(source.src_length), max_steps_(max_steps) {
  const ModelConfig& c = model.config();
  CHECK(max_steps >= 1 && max_steps <= c.max_positions)
      << "decoding " << max_steps << " steps exceeds model.max_positions " << c.max_positions;
  TensorView<const T> memory = model.encode(source);  // (B,S,D)
  src_padding_ = model.source_padding();
  const int64_t B = batch_, S = src_length_, H = c.heads, K = c.d_k, V = c.d_v, D = c.d_model;
  const size_t layers = model.decoder_layers().size();
  self_k_.assign(layers, std::vector<T>(static_cast<size_t>(B * H * max_steps * K)));
  self_v_.assign(layers, std::vector<T>(static_cast<size_t>(B * H * max_steps * V)));
  cross_k_.resize(layers);
  cross_v_.resize(layers);
  std::vector<T> projected(static_cast<size_t>(B * S * H * (K > V ? K : V)));
  for (size_t l = 0; l < layers; ++l) {
    const AttentionParams& p = model.decoder_layers()[l].cross_attn;
    cross_k_[l].resize(static_cast<size_t>(B * H * S * K));
    cross_v_[l].resize(static_cast<size_t>(B * H * S * V));
    TensorView<const T> rows = memory.reshape({B * S, D});
    ops::linear_forward<T>(view(projected, {B * S, H * K}), rows, model.param(p.k_weight),
                           model.param(p.k_bias));
    ops::split_heads<T>(view(cross_k_[l], {B, H, S, K}),
                        TensorView<const T>(projected.data(), {B, S, H * K}));
    ops::linear_forward<T>(view(projected, {B * S, H * V}), rows, model.param(p.v_weight),
                           model.param(p.v_bias));
    ops::split_heads<T>(view(cross_v_[l], {B, H, S, V}),
                        TensorView<const T>(projected.data(), {B, S, H * V}));
  }
  const int64_t widest = std::max<int64_t>({D, H * K, H * V, c.d_ff});
  for (std::vector<T>* buffer : {&x_, &normed_, &q_, &k_, &v_, &attended_, &sub_}) {
    buffer->assign(static_cast<size_t>(B * widest), T(0));
  }
  hidden_.assign(static_cast<size_t>(B * c.d_ff), T(0));
  logits_.assign(static_cast<size_t>(B * c.vocab_size), T(0));
  mean_.assign(static_cast<size_t>(B), T(0));
  rstd_.assign(static_cast<size_t>(B), T(0));
  scores_.assign(static_cast<size_t>(std::max(max_steps, S)), T(0));
}

// out (V) = softmax(scale * q . keys[s] over visible s) values: one query against a cache.
template <typename T>
void DecoderState<T>::attend(const T* q, const T* keys, const T* values, int64_t key_count,
                             int64_t key_stride, const uint8_t* padding, T scale, T* scores,
                             T* out) const {
  const ModelConfig& c = model_.config();
  T max_score = -INFINITY;
  for (int64_t s = 0; s < key_count; ++s) {
    if (padding != nullptr && padding[s] != 0) continue;
    T dot = T(0);
    for (int64_t j = 0; j < c.d_k; ++j) dot += q[j] * keys[s * key_stride + j];
    scores[s] = scale * dot;
    if (scores[s] > max_score) max_score = scores[s];
  }
  for (int64_t j = 0; j < c.d_v; ++j) out[j] = T(0);
  if (max_score == -INFINITY) return;
  T sum = T(0);
  for (int64_t s = 0; s < key_count; ++s) {
    if (padding != nullptr && padding[s] != 0) {
      scores[s] = T(0);
      continue;
    }
    scores[s] = std::exp(scores[s] - max_score);
    sum += scores[s];
  }
  for (int64_t s = 0; s < key_count; ++s) {
    const T weight = scores[s] / sum;
    if (weight == T(0)) continue;
    for (int64_t j = 0; j < c.d_v; ++j) out[j] += weight * values[s * c.d_v + j];
  }
}

template <typename T>
TensorView<const T> DecoderState<T>::step(const std::vector<int32_t>& tokens) {
  const ModelConfig& c = model_.config();
  const int64_t B = batch_, S = src_length_, H = c.heads, K = c.d_k, V = c.d_v, D = c.d_model;
  const int64_t t = position_;
  CHECK(static_cast<int64_t>(tokens.size()) == B)
      << "decoder step needs " << B << " tokens, got " << tokens.size();
  CHECK(t < max_steps_) << "decoder state is full after " << max_steps_ << " steps";
  const bool pre = c.norm == NormPlacement::kPre;
  const T eps = static_cast<T>(c.layer_norm_eps);
  TensorView<T> x = view(x_, {B, 1, D});
  ops::embedding_forward<T>(x.reshape({B, D}), tokens.data(),
                            model_.param(model_.target_embedding_index()),
                            static_cast<T>(std::sqrt(static_cast<double>(D))));
  const int positions = model_.position_index(true);
  ops::add_positions_forward<T>(
      x, positions >= 0 ? TensorView<const T>(model_.param(positions)) : model_.sinusoids(), t);
  TensorView<T> rows_x = x.reshape({B, D});
  auto layer_norm = [&](TensorView<T> out, TensorView<const T> inp, const LayerNormParams& p) {
    ops::layernorm_forward<T>(out, view(mean_, {B}), view(rstd_, {B}), inp, model_.param(p.weight),
                              model_.param(p.bias), eps);
  };
  for (size_t l = 0; l < model_.decoder_layers().size(); ++l) {
    const LayerParams& layer = model_.decoder_layers()[l];
    for (int sub_index = 0; sub_index < 3; ++sub_index) {
      const LayerNormParams& norm = sub_index == 0   ? layer.self_attn_norm
                                    : sub_index == 1 ? layer.cross_attn_norm
                                                     : layer.final_norm;
      TensorView<T> f_in = rows_x;
      if (pre) {
        f_in = view(normed_, {B, D});
        layer_norm(f_in, rows_x, norm);
      }
      TensorView<T> sub = view(sub_, {B, D});
      if (sub_index == 2) {
        TensorView<T> hidden = view(hidden_, {B, c.d_ff});
        ops::linear_forward<T>(hidden, f_in, model_.param(layer.ffn.fc1_weight),
                               model_.param(layer.ffn.fc1_bias));
        ops::relu_forward<T>(hidden, hidden);
        ops::linear_forward<T>(sub, hidden, model_.param(layer.ffn.fc2_weight),
                               model_.param(layer.ffn.fc2_bias));
      } else {
        const AttentionParams& p = sub_index == 0 ? layer.self_attn : layer.cross_attn;
        const T scale = model_.attention_scale(p);
        TensorView<T> q = view(q_, {B, H * K});
        ops::linear_forward<T>(q, f_in, model_.param(p.q_weight), model_.param(p.q_bias));
        if (sub_index == 0) {
          ops::linear_forward<T>(view(k_, {B, H * K}), f_in, model_.param(p.k_weight),
                                 model_.param(p.k_bias));
          ops::linear_forward<T>(view(v_, {B, H * V}), f_in, model_.param(p.v_weight),
                                 model_.param(p.v_bias));
          for (int64_t b = 0; b < B; ++b) {
            for (int64_t h = 0; h < H; ++h) {
              T* key_slot = self_k_[l].data() + ((b * H + h) * max_steps_ + t) * K;
              T* value_slot = self_v_[l].data() + ((b * H + h) * max_steps_ + t) * V;
              for (int64_t j = 0; j < K; ++j)
                key_slot[j] = k_[static_cast<size_t>(b * H * K + h * K + j)];
              for (int64_t j = 0; j < V; ++j)
                value_slot[j] = v_[static_cast<size_t>(b * H * V + h * V + j)];
            }
          }
        }
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t h = 0; h < H; ++h) {
            const T* query = q_.data() + b * H * K + h * K;
            T* out = attended_.data() + b * H * V + h * V;
            if (sub_index == 0) {
              const size_t head = static_cast<size_t>((b * H + h) * max_steps_);
              attend(query, self_k_[l].data() + head * static_cast<size_t>(K),
                     self_v_[l].data() + head * static_cast<size_t>(V), t + 1, K, nullptr, scale,
                     scores_.data(), out);
            } else {
              const size_t head = static_cast<size_t>((b * H + h) * S);
              attend(query, cross_k_[l].data() + head * static_cast<size_t>(K),
                     cross_v_[l].data() + head * static_cast<size_t>(V), S, K,
                     src_padding_.data() + b * S, scale, scores_.data(), out);
            }
          }
        }
        ops::linear_forward<T>(sub, view(attended_, {B, H * V}), model_.param(p.out_weight),
                               model_.param(p.out_bias));
      }
      // pre: x = x + sub; post: x = LN(x + sub).
      if (pre) {
        ops::residual_forward<T>(rows_x, rows_x, sub);
      } else {
        TensorView<T> sum = view(normed_, {B, D});
        ops::residual_forward<T>(sum, rows_x, sub);
        layer_norm(rows_x, sum, norm);
      }
    }
  }
  TensorView<T> final_x = rows_x;
  if (pre) {
    final_x = view(normed_, {B, D});
    layer_norm(final_x, rows_x, model_.final_norm(true));
  }
  const int bias_index = model_.output_bias_index();
  ops::linear_forward<T>(
      view(logits_, {B, c.vocab_size}), final_x, model_.param(model_.output_weight_index()),
      bias_index >= 0 ? TensorView<const T>(model_.param(bias_index)) : TensorView<const T>());
  ++position_;
  return TensorView<const T>(logits_.data(), {B, c.vocab_size});
}

template <typename T>
void DecoderState<T>::reorder(const std::vector<int64_t>& rows) {
  const ModelConfig& c = model_.config();
  const int64_t H = c.heads, K = c.d_k, V = c.d_v, S = src_length_;
  const int64_t new_batch = static_cast<int64_t>(rows.size());
  auto gather = [&](std::vector<T>& buffer, int64_t per_sentence) {
    std::vector<T> gathered(static_cast<size_t>(new_batch * per_sentence));
    for (int64_t i = 0; i < new_batch; ++i) {
      const int64_t row = rows[static_cast<size_t>(i)];
      CHECK(row >= 0 && row < batch_) << "reorder row " << row << " outside [0, " << batch_ << ")";
      std::copy(buffer.begin() + row * per_sentence, buffer.begin() + (row + 1) * per_sentence,
                gathered.begin() + i * per_sentence);
    }
    buffer.swap(gathered);
  };
  for (size_t l = 0; l < self_k_.size(); ++l) {
    gather(self_k_[l], H * max_steps_ * K);
    gather(self_v_[l], H * max_steps_ * V);
    gather(cross_k_[l], H * S * K);
    gather(cross_v_[l], H * S * V);
  }
  std::vector<uint8_t> padding(static_cast<size_t>(new_batch * S));
  for (int64_t i = 0; i < new_batch; ++i) {
    std::copy(src_padding_.begin() + rows[static_cast<size_t>(i)] * S,
              src_padding_.begin() + (rows[static_cast<size_t>(i)] + 1) * S,
              padding.begin() + i * S);
  }
  src_padding_.swap(padding);
  if (new_batch > batch_) {
    const int64_t widest = static_cast<int64_t>(x_.size()) / batch_;
    for (std::vector<T>* buffer : {&x_, &normed_, &q_, &k_, &v_, &attended_, &sub_}) {
      buffer->assign(static_cast<size_t>(new_batch * widest), T(0));
    }
    hidden_.assign(static_cast<size_t>(new_batch * c.d_ff), T(0));
    logits_.assign(static_cast<size_t>(new_batch * c.vocab_size), T(0));
    mean_.assign(static_cast<size_t>(new_batch), T(0));
    rstd_.assign(static_cast<size_t>(new_batch), T(0));
  }
  batch_ = new_batch;
}

template class DecoderState<float>;
template class DecoderState<double>;

}  // namespace attnlab
