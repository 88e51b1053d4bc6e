// The Transformer's stacks in order: forward (embed, layers, output, loss) and backward in the
// exact reverse order. Each residual sub-layer runs through the Sublayer unit
// (core/model/sublayer.h), which applies its norm, dropout and residual around the sub-layer's
// function: self-attention, cross-attention or the FFN.
// Legend: B batch, S source length, T target length, D d_model, N vocabulary, L stack length.
#include <cstring>
#include <utility>

#include "core/model/transformer.h"
#include "core/tensor/blas.h"
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

}  // namespace

template <typename T>
LayerPass<T> Transformer<T>::layer_pass(bool decoder, bool training, uint64_t seed) const {
  const AttentionStack self = decoder ? AttentionStack::kDecoderSelf : AttentionStack::kEncoderSelf;
  return {decoder,     attention_mask(self), attention_mask(AttentionStack::kDecoderCross),
          enc_.output, forward_pools_,       training,
          seed};
}

template <typename T>
void Transformer<T>::layer_forward(const LayerParams& layer,
                                   std::vector<SublayerActivations<T>>& acts, TensorView<const T> x,
                                   int64_t index, const LayerPass<T>& pass, LayerCache<T>* cache) {
  const int stack = pass.decoder ? 1 : 0;  // dropout streams: 0 encoder, 1 decoder
  const float p_drop = pass.training ? static_cast<float>(config_.dropout) : 0.0f;
  for (size_t j = 0; j < layer.size(); ++j) {
    const SublayerParams& p = layer[j];
    SublayerActivations<T>& s = acts[j];
    TensorView<const T> input = j == 0 ? x : in(acts[j - 1].out);
    const int sub = static_cast<int>(j);
    if (p.kind == SublayerKind::kStackNorm) {
      sublayer_.norm_forward(s.out, s.stats, input, norm_weights(p.norm));
      continue;
    }
    const uint64_t probs_key = site_key(pass.seed, stack, index, sub, kAttentionProbs);
    auto f = [&](TensorView<const T> f_in, TensorView<T> f_out) {
      switch (p.kind) {
        case SublayerKind::kSelfAttention:
          attention_forward(s.attention, p.attention, f_in, f_in, pass.self_mask, f_out, pass.pools,
                            pass.training, probs_key, cache ? &cache->self : nullptr, true);
          break;
        case SublayerKind::kCrossAttention:
          attention_forward(s.attention, p.attention, f_in, pass.memory, pass.cross_mask, f_out,
                            pass.pools, pass.training, probs_key, cache ? &cache->cross : nullptr,
                            false);
          break;
        case SublayerKind::kFeedForward: ffn_forward(s, p.ffn, f_in, f_out); break;
        case SublayerKind::kStackNorm: break;  // no function: handled above
      }
    };
    sublayer_.forward(s, input, norm_weights(p.norm), f, p_drop,
                      site_key(pass.seed, stack, index, sub, kSublayer));
  }
}

template <typename T>
void Transformer<T>::layer_backward(const LayerParams& layer,
                                    std::vector<SublayerActivations<T>>& acts,
                                    TensorView<const T> x, int64_t index, const LayerPass<T>& pass,
                                    StreamGradients<T>& grads) {
  const int stack = pass.decoder ? 1 : 0;
  const float p_drop = pass.training ? static_cast<float>(config_.dropout) : 0.0f;
  for (size_t j = layer.size(); j-- > 0;) {
    const SublayerParams& p = layer[j];
    SublayerActivations<T>& s = acts[j];
    TensorView<const T> input = j == 0 ? x : in(acts[j - 1].out);
    const int sub = static_cast<int>(j);
    if (p.kind == SublayerKind::kStackNorm) {
      sublayer_.norm_backward(grads.spare_a, in(grads.stream), input, s.stats, norm_weights(p.norm),
                              false);
      std::swap(grads.stream, grads.spare_a);
      continue;
    }
    const uint64_t probs_key = site_key(pass.seed, stack, index, sub, kAttentionProbs);
    auto f_backward = [&](TensorView<const T> f_in, TensorView<T> df_out, TensorView<T> df_in,
                          bool accumulate) {
      switch (p.kind) {
        case SublayerKind::kSelfAttention:
          // Queries, keys and values all read f_in: their gradients add up in df_in.
          attention_backward(s.attention, p.attention, f_in, f_in, df_out, df_in, accumulate, df_in,
                             pass.self_mask, pass.training, probs_key);
          break;
        case SublayerKind::kCrossAttention:
          attention_backward(s.attention, p.attention, f_in, pass.memory, df_out, df_in, accumulate,
                             d_enc_output_, pass.cross_mask, pass.training, probs_key);
          break;
        case SublayerKind::kFeedForward:
          ffn_backward(s, p.ffn, f_in, df_out, df_in, accumulate);
          break;
        case SublayerKind::kStackNorm: break;  // no function: handled above
      }
    };
    sublayer_.backward(s, input, norm_weights(p.norm), f_backward, grads, p_drop,
                       site_key(pass.seed, stack, index, sub, kSublayer));
  }
}

template <typename T>
void Transformer<T>::stack_forward(StackActivations<T>& acts,
                                   const std::vector<LayerParams>& layers, bool decoder,
                                   bool training, uint64_t seed) {
  const LayerPass<T> pass = layer_pass(decoder, training, seed);
  for (size_t i = 0; i < layers.size(); ++i) {
    TensorView<const T> x = i == 0 ? acts.embedded : acts.layers[i - 1].back().out;
    layer_forward(layers[i], acts.layers[i], x, static_cast<int64_t>(i), pass, nullptr);
  }
}

// dout holds d(stack output) on entry, in a buffer of shape (B,L,D) the stack may overwrite.
// Returns the buffer holding d(embedded).
template <typename T>
TensorView<T> Transformer<T>::stack_backward(StackActivations<T>& acts,
                                             const std::vector<LayerParams>& layers, bool decoder,
                                             TensorView<T> dout, uint64_t seed) {
  const LayerPass<T> pass = layer_pass(decoder, training_, seed);
  StreamGradients<T> grads{dout, shaped(pool_tmp1_, dout.shape()),
                           shaped(pool_tmp2_, dout.shape())};
  for (size_t i = layers.size(); i-- > 0;) {
    TensorView<const T> x = i == 0 ? acts.embedded : acts.layers[i - 1].back().out;
    layer_backward(layers[i], acts.layers[i], x, static_cast<int64_t>(i), pass, grads);
  }
  return grads.stream;
}

template <typename T>
void Transformer<T>::embed_step(StepWorkspace<T>& w, const int32_t* tokens, int64_t position) {
  embed_forward(w.x, tokens, tgt_embedding_, tgt_positions_, position, 0.0f, 0);
}

template <typename T>
void Transformer<T>::layer_step(StepWorkspace<T>& w, int64_t index, LayerCache<T>& cache,
                                const ops::AttentionMask& cross_mask) {
  // The query at the newest position sees every cached position; no dropout.
  LayerPass<T> pass{true, ops::AttentionMask{}, cross_mask, {}, {}, false, 0};
  const size_t i = static_cast<size_t>(index);
  layer_forward(decoder_[i], w.layers[i], w.x, index, pass, &cache);
}

template <typename T>
std::vector<int> Transformer<T>::step_weights() const {
  std::vector<int> weights;
  for (const LayerParams& layer : decoder_) {
    for (const SublayerParams& sublayer : layer) {
      const AttentionParams& a = sublayer.attention;
      switch (sublayer.kind) {
        case SublayerKind::kSelfAttention:
          weights.insert(weights.end(), {a.q_weight, a.k_weight, a.v_weight, a.out_weight});
          break;
        case SublayerKind::kCrossAttention:
          weights.insert(weights.end(), {a.q_weight, a.out_weight});
          break;
        case SublayerKind::kFeedForward:
          weights.insert(weights.end(), {sublayer.ffn.fc1_weight, sublayer.ffn.fc2_weight});
          break;
        case SublayerKind::kStackNorm: break;
      }
    }
  }
  weights.push_back(output_weight_);
  return weights;
}

template <typename T>
void Transformer<T>::output_step(StepWorkspace<T>& w) {
  output_forward(w.logits, w.layers.back().back().out);
}

template <typename T>
void Transformer<T>::fill_cross_cache(int64_t index, TensorView<const T> memory,
                                      LayerCache<T>& cache) {
  const SublayerParams& cross =
      decoder_[static_cast<size_t>(index)][attention_block(AttentionStack::kDecoderCross)];
  CHECK(cross.kind == SublayerKind::kCrossAttention && cache.cross.length == 0)
      << "decoder layer " << index << " has no empty cross-attention cache to fill";
  cache.cross.length = memory.dim(1);
  // encode() carved the pools for the source's rows.
  project_keys_values(cross.attention, memory, cache.cross.key_view(), cache.cross.value_view(),
                      forward_pools_);
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
  log_probs_kept_ = loss_gradient_ready_ = false;
  probe_.ready = false;
  embed_forward(enc_.embedded, src_.data(), src_embedding_, src_positions_, 0, 0.0f, 0);
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
  CHECK(!(training && keep_log_probs_))
      << "keep_log_probs applies to evaluation forwards: a training forward overwrites the "
         "log-probabilities with their gradient";
  // A new shape, or a loss block that keep_log_probs or set_loss_block_bytes resized.
  if (B != batch_ || S != src_length_ || T_ != tgt_length_ ||
      logits_.dim(0) != loss_block_rows(B * T_)) {
    carve(B, S, T_);
  }
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

  const float p_drop = training ? static_cast<float>(config_.dropout) : 0.0f;
  embed_forward(enc_.embedded, src_.data(), src_embedding_, src_positions_, 0, p_drop,
                site_key(dropout_seed, 0, 0, 0, kEmbedding));
  stack_forward(enc_, encoder_, false, training, dropout_seed);
  embed_forward(dec_.embedded, tgt_in_.data(), tgt_embedding_, tgt_positions_, 0, p_drop,
                site_key(dropout_seed, 1, 0, 0, kEmbedding));
  {
    // In bf16 every decoder layer's key and value products read the encoder output: rounded once.
    const blas::Bf16OperandReuseIfBf16<T> round_memory_once(enc_.output.data(), B * S,
                                                            config_.d_model, config_.d_model);
    stack_forward(dec_, decoder_, true, training, dropout_seed);
  }
  log_probs_kept_ = keep_log_probs_;
  loss_gradient_ready_ = training;
  return loss_blocks(training);
}

template <typename T>
ops::LossSums Transformer<T>::loss_blocks(bool gradient) {
  const int64_t D = config_.d_model, N = config_.vocab_size;
  const int64_t rows = batch_ * tgt_length_, block = logits_.dim(0);
  const TensorView<const T> hidden = in(dec_.output.reshape({rows, D}));
  const TensorView<T> dhidden = d_dec_stream_.reshape({rows, D});
  auto grad = [&](int index) { return table_.view(grads_.data(), index); };
  const TensorView<T> dbias = output_bias_ >= 0 ? grad(output_bias_) : TensorView<T>();
  // In bf16 every block's products read the output weight: it is rounded once for all of them.
  const blas::Bf16OperandReuseIfBf16<T> round_weight_once(param(output_weight_).data(), N, D, D);
  ops::LossSums sums;
  for (int64_t first = 0; first < rows; first += block) {
    const int64_t count = std::min(block, rows - first);
    const TensorView<T> logits(logits_.data(), {count, N});
    const int32_t* targets = tgt_out_.data() + first;
    output_forward(logits, hidden.slice_rows(first, count));
    // In place: the block's logits become their log-probabilities.
    const ops::LossSums block_sums = ops::cross_entropy_forward<T>(
        logits, in(logits), targets, label_smoothing_, config_.pad_id);
    sums.loss += block_sums.loss;
    sums.nll += block_sums.nll;
    sums.tokens += block_sums.tokens;
    if (!gradient) continue;
    // The gradient of the summed loss, in place again; then d(decoder output) for these rows and
    // the output projection's gradient, added block after block in row order.
    ops::cross_entropy_backward<T>(logits, T(1), in(logits), targets, label_smoothing_,
                                   config_.pad_id);
    ops::linear_backward<T>(dhidden.slice_rows(first, count), grad(output_weight_), dbias,
                            in(logits), hidden.slice_rows(first, count), in(param(output_weight_)));
  }
  return sums;
}

template <typename T>
void Transformer<T>::backward() {
  CHECK(loss_gradient_ready_)
      << "backward() needs a training forward() first (forward with training = true begins the "
         "backward pass, and one forward serves one backward)";
  loss_gradient_ready_ = false;
  std::memset(d_enc_output_.data(), 0, static_cast<size_t>(d_enc_output_.numel()) * sizeof(T));
  TensorView<T> ddec = d_dec_stream_;
  TensorView<T> dembedded;
  {
    // In bf16 the weight gradients of every decoder layer's keys and values read the encoder
    // output: rounded once.
    const blas::Bf16OperandReuseIfBf16<T> round_memory_once(
        enc_.output.data(), batch_ * src_length_, config_.d_model, config_.d_model);
    dembedded = stack_backward(dec_, decoder_, true, ddec, dropout_seed_);
  }
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
  template ops::LossSums Transformer<T>::loss_blocks(bool);                                  \
  template void Transformer<T>::backward();                                                  \
  template void Transformer<T>::embed_step(StepWorkspace<T>&, const int32_t*, int64_t);      \
  template void Transformer<T>::layer_step(StepWorkspace<T>&, int64_t, LayerCache<T>&,       \
                                           const ops::AttentionMask&);                       \
  template std::vector<int> Transformer<T>::step_weights() const;                            \
  template void Transformer<T>::output_step(StepWorkspace<T>&);                              \
  template void Transformer<T>::fill_cross_cache(int64_t, TensorView<const T>, LayerCache<T>&);

ATTNLAB_INSTANTIATE_PASSES(float)
ATTNLAB_INSTANTIATE_PASSES(double)

}  // namespace attnlab
