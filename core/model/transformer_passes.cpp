// The Transformer's stacks in order: forward (embed, layers, output, loss) and backward in the
// exact reverse order. Each residual sub-layer runs through the Sublayer unit
// (core/model/sublayer.h), which applies its norm, dropout and residual around the sub-layer's
// function: self-attention, cross-attention or the FFN.
// Legend: B batch, S source length, T target length, D d_model, N vocabulary, L stack length.
#include <cstring>
#include <utility>

#include "core/model/transformer.h"
#include "core/util/rng.h"

namespace attnlab {
namespace {

using workspace::in;
using workspace::shaped;

enum DropoutKind : uint64_t { kEmbedding = 1, kSublayer = 2, kAttentionProbs = 3 };
uint64_t site_key(uint64_t seed, int stack, int64_t layer, int sublayer, DropoutKind kind) {
  return rng_key(seed, static_cast<uint64_t>(stack), static_cast<uint64_t>(layer * 8 + sublayer),
                 kind);
}

// The input x of sub-layer `sub` of layer `layer`: the previous sub-layer's output.
template <typename T>
TensorView<T> sublayer_input(StackActivations<T>& acts, size_t layer, size_t sub) {
  if (sub > 0) return acts.layers[layer][sub - 1].out;
  if (layer > 0) return acts.layers[layer - 1].back().out;
  return acts.embedded;
}

// The norm of a layer's self-attention, cross-attention or FFN sub-layer.
const NormParams& sublayer_norm(const LayerParams& p, bool is_ffn, bool is_cross) {
  return is_ffn ? p.final_norm : (is_cross ? p.cross_attn_norm : p.self_attn_norm);
}

}  // namespace

template <typename T>
void Transformer<T>::stack_forward(StackActivations<T>& acts,
                                   const std::vector<LayerParams>& layers, bool decoder,
                                   bool training, uint64_t seed) {
  const AttentionStack self = decoder ? AttentionStack::kDecoderSelf : AttentionStack::kEncoderSelf;
  const int stack = decoder ? 1 : 0;  // dropout streams: 0 encoder, 1 decoder
  const float p_drop = training ? static_cast<float>(config_.dropout) : 0.0f;
  const ops::AttentionMask self_mask = attention_mask(self);
  const ops::AttentionMask cross_mask = attention_mask(AttentionStack::kDecoderCross);
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerParams& p = layers[i];
    const size_t sublayers = acts.layers[i].size();
    for (size_t j = 0; j < sublayers; ++j) {
      SublayerActivations<T>& s = acts.layers[i][j];
      const bool is_ffn = j + 1 == sublayers;
      const bool is_cross = decoder && j == 1;
      const int64_t layer = static_cast<int64_t>(i);
      const int sub = static_cast<int>(j);
      const uint64_t probs_key = site_key(seed, stack, layer, sub, kAttentionProbs);
      auto f = [&](TensorView<const T> f_in, TensorView<T> f_out) {
        if (is_ffn) {
          ffn_forward(s, p.ffn, f_in, f_out);
        } else if (is_cross) {
          attention_forward(s.attention, p.cross_attn, f_in, in(enc_.output), cross_mask, f_out,
                            training, probs_key);
        } else {
          attention_forward(s.attention, p.self_attn, f_in, f_in, self_mask, f_out, training,
                            probs_key);
        }
      };
      sublayer_.forward(s, in(sublayer_input(acts, i, j)),
                        norm_weights(sublayer_norm(p, is_ffn, is_cross)), f, p_drop,
                        site_key(seed, stack, layer, sub, kSublayer));
    }
  }
  if (sublayer_.pre_norm()) {
    sublayer_.norm_forward(acts.final_normed, acts.final_stats, in(acts.layers.back().back().out),
                           norm_weights(final_norm(decoder)));
  }
}

// dout holds d(stack output) on entry, in a buffer of shape (B,L,D) the stack may overwrite.
// Returns the buffer holding d(embedded).
template <typename T>
TensorView<T> Transformer<T>::stack_backward(StackActivations<T>& acts,
                                             const std::vector<LayerParams>& layers, bool decoder,
                                             TensorView<T> dout, uint64_t seed) {
  const AttentionStack self = decoder ? AttentionStack::kDecoderSelf : AttentionStack::kEncoderSelf;
  const int stack = decoder ? 1 : 0;  // dropout streams: 0 encoder, 1 decoder
  const float p_drop = training_ ? static_cast<float>(config_.dropout) : 0.0f;
  const ops::AttentionMask self_mask = attention_mask(self);
  const ops::AttentionMask cross_mask = attention_mask(AttentionStack::kDecoderCross);
  StreamGradients<T> grads{dout, shaped(pool_tmp1_, dout.shape()),
                           shaped(pool_tmp2_, dout.shape())};
  if (sublayer_.pre_norm()) {
    sublayer_.norm_backward(grads.spare_a, in(grads.stream), in(acts.layers.back().back().out),
                            acts.final_stats, norm_weights(final_norm(decoder)), false);
    std::swap(grads.stream, grads.spare_a);
  }
  for (size_t i = layers.size(); i-- > 0;) {
    const LayerParams& p = layers[i];
    const size_t sublayers = acts.layers[i].size();
    for (size_t j = sublayers; j-- > 0;) {
      SublayerActivations<T>& s = acts.layers[i][j];
      const bool is_ffn = j + 1 == sublayers;
      const bool is_cross = decoder && j == 1;
      const int64_t layer = static_cast<int64_t>(i);
      const int sub = static_cast<int>(j);
      const uint64_t probs_key = site_key(seed, stack, layer, sub, kAttentionProbs);
      auto f_backward = [&](TensorView<const T> f_in, TensorView<T> df_out, TensorView<T> df_in,
                            bool accumulate) {
        if (is_ffn) {
          ffn_backward(s, p.ffn, f_in, df_out, df_in, accumulate);
        } else if (is_cross) {
          attention_backward(s.attention, p.cross_attn, f_in, in(enc_.output), df_out, df_in,
                             accumulate, d_enc_output_, cross_mask, training_, probs_key);
        } else {
          // Queries, keys and values all read f_in: their gradients add up in df_in.
          attention_backward(s.attention, p.self_attn, f_in, f_in, df_out, df_in, accumulate, df_in,
                             self_mask, training_, probs_key);
        }
      };
      sublayer_.backward(s, in(sublayer_input(acts, i, j)),
                         norm_weights(sublayer_norm(p, is_ffn, is_cross)), f_backward, grads,
                         p_drop, site_key(seed, stack, layer, sub, kSublayer));
    }
  }
  return grads.stream;
}

template <typename T>
TensorView<const T> Transformer<T>::encode(const Batch& batch) {
  const int64_t B = batch.size, S = batch.src_length;
  CHECK(B > 0 && S > 0 && static_cast<int64_t>(batch.src.size()) == B * S)
      << "encode: source buffer of " << batch.src.size() << " ids does not match (B=" << B
      << ", S=" << S << ")";
  CHECK(S <= config_.max_positions)
      << "source length " << S << " exceeds model.max_positions " << config_.max_positions;
  if (B != batch_ || S != src_length_ || tgt_length_ != 1) carve(B, S, 1);
  src_.assign(batch.src.begin(), batch.src.end());
  src_padding_.resize(src_.size());
  for (size_t i = 0; i < src_.size(); ++i) src_padding_[i] = src_[i] == config_.pad_id;
  training_ = false;
  full_forward_ = false;
  probe_.ready = false;
  embed_forward(enc_, src_.data(), S, src_embedding_, src_positions_, false, 0);
  stack_forward(enc_, encoder_, false, false, 0);
  return enc_.output;
}

template <typename T>
ops::LossSums Transformer<T>::forward(const Batch& batch, float label_smoothing, bool training,
                                      uint64_t dropout_seed) {
  const int64_t B = batch.size, S = batch.src_length, T_ = batch.tgt_length;
  CHECK(B > 0 && S > 0 && T_ > 0) << "empty batch (" << B << " sentences, source length " << S
                                  << ", target length " << T_ << ")";
  CHECK(static_cast<int64_t>(batch.src.size()) == B * S &&
        static_cast<int64_t>(batch.tgt_in.size()) == B * T_ &&
        static_cast<int64_t>(batch.tgt_out.size()) == B * T_)
      << "batch buffers do not match its shape (B=" << B << ", S=" << S << ", T=" << T_ << ")";
  CHECK(S <= config_.max_positions && T_ <= config_.max_positions)
      << "batch lengths (source " << S << ", target " << T_ << ") exceed model.max_positions "
      << config_.max_positions;
  if (B != batch_ || S != src_length_ || T_ != tgt_length_) carve(B, S, T_);
  src_.assign(batch.src.begin(), batch.src.end());
  tgt_in_.assign(batch.tgt_in.begin(), batch.tgt_in.end());
  tgt_out_.assign(batch.tgt_out.begin(), batch.tgt_out.end());
  src_padding_.resize(src_.size());
  tgt_padding_.resize(tgt_in_.size());
  for (size_t i = 0; i < src_.size(); ++i) src_padding_[i] = src_[i] == config_.pad_id;
  for (size_t i = 0; i < tgt_in_.size(); ++i) tgt_padding_[i] = tgt_in_[i] == config_.pad_id;
  label_smoothing_ = label_smoothing;
  training_ = training;
  dropout_seed_ = dropout_seed;
  full_forward_ = true;
  probe_.ready = false;

  embed_forward(enc_, src_.data(), S, src_embedding_, src_positions_, training,
                site_key(dropout_seed, 0, 0, 0, kEmbedding));
  stack_forward(enc_, encoder_, false, training, dropout_seed);
  embed_forward(dec_, tgt_in_.data(), T_, tgt_embedding_, tgt_positions_, training,
                site_key(dropout_seed, 1, 0, 0, kEmbedding));
  stack_forward(dec_, decoder_, true, training, dropout_seed);
  // logits (B*T,N) = decoder output (B*T,D) E^T (+ b)
  TensorView<const T> bias = output_bias_ >= 0 ? in(param(output_bias_)) : TensorView<const T>();
  ops::linear_forward<T>(logits_, in(dec_.output.reshape({B * T_, config_.d_model})),
                         in(param(output_weight_)), bias);
  return ops::cross_entropy_forward<T>(log_probs_, in(logits_), tgt_out_.data(), label_smoothing,
                                       config_.pad_id);
}

template <typename T>
void Transformer<T>::backward(T dloss) {
  CHECK(batch_ > 0) << "backward() needs a forward() first";
  const int64_t D = config_.d_model;
  const int64_t B = batch_, T_ = tgt_length_;
  auto grad = [&](int index) { return table_.view(grads_.data(), index); };
  // The log-probabilities' (and logits') buffer takes their gradient, row by row.
  TensorView<T> dlogits = logits_;
  ops::cross_entropy_backward<T>(dlogits, dloss, in(log_probs_), tgt_out_.data(), label_smoothing_,
                                 config_.pad_id);
  TensorView<T> ddec = d_dec_stream_;
  TensorView<T> dbias = output_bias_ >= 0 ? grad(output_bias_) : TensorView<T>();
  ops::linear_backward<T>(ddec.reshape({B * T_, D}), grad(output_weight_), dbias, in(dlogits),
                          in(dec_.output.reshape({B * T_, D})), in(param(output_weight_)));
  std::memset(d_enc_output_.data(), 0, static_cast<size_t>(d_enc_output_.numel()) * sizeof(T));
  TensorView<T> dembedded = stack_backward(dec_, decoder_, true, ddec, dropout_seed_);
  embed_backward(dembedded, tgt_in_.data(), tgt_embedding_, tgt_positions_, training_,
                 site_key(dropout_seed_, 1, 0, 0, kEmbedding));
  std::memcpy(d_enc_stream_.data(), d_enc_output_.data(),
              static_cast<size_t>(d_enc_output_.numel()) * sizeof(T));
  dembedded = stack_backward(enc_, encoder_, false, d_enc_stream_, dropout_seed_);
  embed_backward(dembedded, src_.data(), src_embedding_, src_positions_, training_,
                 site_key(dropout_seed_, 0, 0, 0, kEmbedding));
}

#define ATTNLAB_INSTANTIATE_PASSES(T)                                                        \
  template void Transformer<T>::stack_forward(                                               \
      StackActivations<T>&, const std::vector<LayerParams>&, bool, bool, uint64_t);          \
  template TensorView<T> Transformer<T>::stack_backward(                                     \
      StackActivations<T>&, const std::vector<LayerParams>&, bool, TensorView<T>, uint64_t); \
  template ops::LossSums Transformer<T>::forward(const Batch&, float, bool, uint64_t);       \
  template TensorView<const T> Transformer<T>::encode(const Batch&);                         \
  template void Transformer<T>::backward(T);

ATTNLAB_INSTANTIATE_PASSES(float)
ATTNLAB_INSTANTIATE_PASSES(double)

}  // namespace attnlab
