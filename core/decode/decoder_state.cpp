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

// The self-attention cache of a layer holds positions 0..t-1 as one contiguous (B,H,t,W) tensor,
// which ops::attention_forward reads directly. Appending position t (rows (B*H,W) in `fresh`)
// moves each head's block to its place in the (B,H,t+1,W) layout, the last head first so that no
// block is overwritten before it has moved, and writes the new row after it.
template <typename T>
void append_position(std::vector<T>& cache, const std::vector<T>& fresh, int64_t heads, int64_t t,
                     int64_t width) {
  CHECK(static_cast<int64_t>(cache.size()) >= heads * (t + 1) * width)
      << "decoder cache of " << cache.size() << " cannot hold " << t + 1 << " positions";
  T* data = cache.data();
  for (int64_t head = heads - 1; head >= 0; --head) {
    if (head > 0) {
      std::copy_backward(data + head * t * width, data + (head + 1) * t * width,
                         data + head * (t + 1) * width + t * width);
    }
    std::copy_n(fresh.data() + head * width, width, data + (head * (t + 1) + t) * width);
  }
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
  probs_.assign(static_cast<size_t>(B * H * std::max(max_steps, S)), T(0));
}

template <typename T>
void DecoderState<T>::attend_and_project(const AttentionParams& p, TensorView<const T> keys,
                                         TensorView<const T> values, const ops::AttentionMask& mask,
                                         TensorView<T> out) {
  const ModelConfig& c = model_.config();
  const int64_t B = batch_, H = c.heads, K = c.d_k, V = c.d_v;
  // One query per sentence: its (B,H*K) projection is already the (B,H,1,K) heads layout, and the
  // (B,H,1,V) heads' output is the (B,H*V) input of the output projection.
  TensorView<T> heads_out = view(attended_, {B, H, 1, V});
  ops::attention_forward<T>(heads_out, view(probs_, {B, H, 1, keys.dim(2)}), view(q_, {B, H, 1, K}),
                            keys, values, mask, model_.attention_scale(p));
  ops::linear_forward<T>(out, heads_out.reshape({B, H * V}), model_.param(p.out_weight),
                         model_.param(p.out_bias));
}

template <typename T>
TensorView<const T> DecoderState<T>::step(const std::vector<int32_t>& tokens) {
  const ModelConfig& c = model_.config();
  const int64_t B = batch_, S = src_length_, H = c.heads, K = c.d_k, V = c.d_v, D = c.d_model;
  const int64_t P = max_steps_, t = position_;
  CHECK(static_cast<int64_t>(tokens.size()) == B)
      << "decoder step needs " << B << " tokens, got " << tokens.size();
  CHECK(t < P) << "decoder state is full after " << P << " steps";
  TensorView<T> x = view(x_, {B, 1, D});
  ops::embedding_forward<T>(x.reshape({B, D}), tokens.data(),
                            model_.param(model_.target_embedding_index()),
                            static_cast<T>(std::sqrt(static_cast<double>(D))));
  const int positions = model_.position_index(true);
  ops::add_positions_forward<T>(
      x, positions >= 0 ? TensorView<const T>(model_.param(positions)) : model_.sinusoids(), t);
  TensorView<T> rows_x = x.reshape({B, D});
  const Sublayer<T>& sublayer = model_.sublayer();
  const StepBuffers<T> buffers{
      view(normed_, {B, D}), view(sub_, {B, D}), {view(mean_, {B}), view(rstd_, {B})}};
  // The query at position t sees every cached position 0..t; sources hide their padding.
  const ops::AttentionMask self_mask{};
  const ops::AttentionMask cross_mask{src_padding_.data(), false, 0};
  for (size_t l = 0; l < model_.decoder_layers().size(); ++l) {
    const LayerParams& layer = model_.decoder_layers()[l];
    auto self_attention = [&](TensorView<const T> f_in, TensorView<T> out) {
      const AttentionParams& p = layer.self_attn;
      ops::linear_forward<T>(view(q_, {B, H * K}), f_in, model_.param(p.q_weight),
                             model_.param(p.q_bias));
      ops::linear_forward<T>(view(k_, {B, H * K}), f_in, model_.param(p.k_weight),
                             model_.param(p.k_bias));
      ops::linear_forward<T>(view(v_, {B, H * V}), f_in, model_.param(p.v_weight),
                             model_.param(p.v_bias));
      append_position(self_k_[l], k_, B * H, t, K);
      append_position(self_v_[l], v_, B * H, t, V);
      attend_and_project(p, view(self_k_[l], {B, H, t + 1, K}), view(self_v_[l], {B, H, t + 1, V}),
                         self_mask, out);
    };
    auto cross_attention = [&](TensorView<const T> f_in, TensorView<T> out) {
      const AttentionParams& p = layer.cross_attn;
      ops::linear_forward<T>(view(q_, {B, H * K}), f_in, model_.param(p.q_weight),
                             model_.param(p.q_bias));
      attend_and_project(p, view(cross_k_[l], {B, H, S, K}), view(cross_v_[l], {B, H, S, V}),
                         cross_mask, out);
    };
    auto ffn = [&](TensorView<const T> f_in, TensorView<T> out) {
      TensorView<T> hidden = view(hidden_, {B, c.d_ff});
      ops::linear_forward<T>(hidden, f_in, model_.param(layer.ffn.fc1_weight),
                             model_.param(layer.ffn.fc1_bias));
      ops::relu_forward<T>(hidden, hidden);
      ops::linear_forward<T>(out, hidden, model_.param(layer.ffn.fc2_weight),
                             model_.param(layer.ffn.fc2_bias));
    };
    sublayer.step(rows_x, model_.norm_weights(layer.self_attn_norm), self_attention, buffers);
    sublayer.step(rows_x, model_.norm_weights(layer.cross_attn_norm), cross_attention, buffers);
    sublayer.step(rows_x, model_.norm_weights(layer.final_norm), ffn, buffers);
  }
  TensorView<T> final_x = rows_x;
  if (sublayer.pre_norm()) {
    final_x = buffers.norm_io;
    sublayer.norm_forward(final_x, buffers.stats, rows_x,
                          model_.norm_weights(model_.final_norm(true)));
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
  // Copies each kept sentence's `per_sentence` values (its part of a contiguous (B,...) tensor)
  // into a buffer with room for `capacity` values per sentence.
  auto gather = [&](std::vector<T>& buffer, int64_t per_sentence, int64_t capacity) {
    std::vector<T> gathered(static_cast<size_t>(new_batch * capacity));
    for (int64_t i = 0; i < new_batch; ++i) {
      const int64_t row = rows[static_cast<size_t>(i)];
      CHECK(row >= 0 && row < batch_) << "reorder row " << row << " outside [0, " << batch_ << ")";
      std::copy(buffer.begin() + row * per_sentence, buffer.begin() + (row + 1) * per_sentence,
                gathered.begin() + i * per_sentence);
    }
    buffer.swap(gathered);
  };
  for (size_t l = 0; l < self_k_.size(); ++l) {
    gather(self_k_[l], H * position_ * K, H * max_steps_ * K);
    gather(self_v_[l], H * position_ * V, H * max_steps_ * V);
    gather(cross_k_[l], H * S * K, H * S * K);
    gather(cross_v_[l], H * S * V, H * S * V);
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
    probs_.assign(static_cast<size_t>(new_batch * H * std::max(max_steps_, S)), T(0));
  }
  batch_ = new_batch;
}

template class DecoderState<float>;
template class DecoderState<double>;

}  // namespace attnlab
