// Transformer construction, workspace layout, and the whole-model forward and backward passes.
// Legend: B batch, S source length, T target length, D d_model, H heads, K d_k, V d_v, F d_ff,
// N vocabulary, L the length of the stack at hand (S or T).
#include "core/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/model/param_names.h"
#include "core/ops/attention_tiled.h"
#include "core/tensor/blas.h"

namespace attnlab {
namespace {

using workspace::in;
using workspace::shaped;

namespace names = param_names;

}  // namespace

template <typename T>
Transformer<T>::Transformer(const ModelConfig& config, uint64_t init_seed)
    : config_(config), sublayer_(config) {
  config_.resolve_defaults();
  config_.validate();
  table_ = ParamTable(config_);
  params_.assign(static_cast<size_t>(table_.size()), T(0));
  grads_.assign(static_cast<size_t>(table_.size()), T(0));
  table_.initialise(params_.data(), config_, init_seed);

  src_embedding_ = table_.index_of(names::token_embedding(false));
  tgt_embedding_ =
      config_.tie_embeddings ? src_embedding_ : table_.index_of(names::token_embedding(true));
  output_weight_ =
      config_.tie_embeddings ? src_embedding_ : table_.index_of(names::output_weight());
  if (config_.output_bias) output_bias_ = table_.index_of(names::output_bias());
  if (config_.positions == PositionKind::kLearned) {
    src_positions_ = table_.index_of(names::position_embedding(false));
    tgt_positions_ = table_.index_of(names::position_embedding(true));
  } else {
    sinusoids_ = Tensor<T>(Shape{config_.max_positions, config_.d_model});
    ops::sinusoidal_table<T>(sinusoids_.view());
  }
  for (bool decoder : {false, true}) {
    const int64_t layers = decoder ? config_.decoder_layers : config_.encoder_layers;
    StackActivations<T>& acts = decoder ? dec_ : enc_;
    // Sized once: carving assigns views into these slots and never allocates.
    acts.layers.resize(static_cast<size_t>(layers));
    for (int64_t i = 0; i < layers; ++i) {
      (decoder ? decoder_ : encoder_).push_back(layer_params(table_, config_, decoder, i));
      acts.layers[static_cast<size_t>(i)].resize((decoder ? decoder_ : encoder_).back().size());
    }
  }
}

template <typename T>
void Transformer<T>::zero_grads() {
  std::memset(grads_.data(), 0, grads_.size() * sizeof(T));
}

template <typename T>
void Transformer<T>::scale_grads(T factor) {
  T* grads = grads_.data();
  const auto size = static_cast<int64_t>(grads_.size());
#pragma omp parallel for schedule(guided) if (size >= ops::kParallelMinElements)
  for (int64_t i = 0; i < size; ++i) grads[i] *= factor;
}

template <typename T>
int64_t Transformer<T>::loss_block_rows(int64_t rows) const {
  if (keep_log_probs_) return rows;
  const int64_t fit = loss_block_bytes_ / (config_.vocab_size * static_cast<int64_t>(sizeof(T)));
  return std::clamp<int64_t>(fit, 1, rows);
}

template <typename T>
void Transformer<T>::set_loss_block_bytes(int64_t bytes) {
  CHECK(bytes > 0) << "the loss's block needs a positive size, got " << bytes << " bytes";
  loss_block_bytes_ = bytes;
}

template <typename T>
void Transformer<T>::keep_log_probs(bool keep) {
  keep_log_probs_ = keep;
}

template <typename T>
TensorView<const T> Transformer<T>::log_probs() const {
  CHECK(log_probs_kept_) << "log_probs() needs keep_log_probs(true) before an evaluation forward";
  return logits_;
}

template <typename T>
NormWeights<T> Transformer<T>::norm_weights(const NormParams& p) {
  NormWeights<T> weights{param(p.weight), {}, table_.view(grads_.data(), p.weight), {}};
  if (p.bias >= 0) {
    weights.bias = param(p.bias);
    weights.dbias = table_.view(grads_.data(), p.bias);
  }
  return weights;
}

template <typename T>
T Transformer<T>::attention_scale(const AttentionParams& p) const {
  if (p.scale >= 0) return params_[static_cast<size_t>(table_.entry(p.scale).offset)];
  return static_cast<T>(config_.attention_scale.initial_value(config_.d_k));
}

template <typename T>
TensorView<const T> Transformer<T>::attention_probs(AttentionStack stack, int64_t layer) const {
  return attention_activations(stack, layer).probs;
}

template <typename T>
const AttentionActivations<T>& Transformer<T>::attention_activations(AttentionStack stack,
                                                                     int64_t layer) const {
  const auto& layers = in_decoder(stack) ? dec_.layers : enc_.layers;
  CHECK(layer >= 0 && layer < static_cast<int64_t>(layers.size()))
      << to_string(stack) << " attention layer " << layer << " out of range [0, " << layers.size()
      << ")";
  const size_t index = static_cast<size_t>(layer);
  if (!tiled()) return layers[index][attention_block(stack)].attention;
  compute_probe_probabilities();
  return probe_.blocks[static_cast<int>(stack)][index];
}

template <typename T>
ops::AttentionMask Transformer<T>::attention_mask(AttentionStack stack) const {
  // Keys are source tokens except in decoder self-attention, which is also causal.
  if (stack == AttentionStack::kDecoderSelf)
    return ops::AttentionMask{tgt_padding_.data(), true, 0};
  return ops::AttentionMask{src_padding_.data(), false, 0};
}

template <typename T>
void Transformer<T>::compute_probe_probabilities() const {
  if (probe_.ready) return;
  CHECK(batch_ > 0) << "attention probabilities need a forward() first";
  // encode() runs the encoder only: its maps are computed, the decoder's left empty.
  auto computed = [&](AttentionStack stack) {
    return full_forward_ || stack == AttentionStack::kEncoderSelf;
  };
  size_t total = 0, largest_out = 0;
  for (AttentionStack stack : kAttentionStacks) {
    if (!computed(stack)) continue;
    for (const auto& layer : in_decoder(stack) ? dec_.layers : enc_.layers) {
      const AttentionActivations<T>& a = layer[attention_block(stack)].attention;
      const int64_t B = a.q_heads.dim(0), H = a.q_heads.dim(1), Tq = a.q_heads.dim(2);
      total += static_cast<size_t>(B * H * Tq * a.k_heads.dim(2));
      largest_out = std::max(largest_out, static_cast<size_t>(B * H * Tq * a.v_heads.dim(3)));
    }
  }
  probe_.probs.assign(total, T(0));
  probe_.scratch_out.assign(largest_out, T(0));
  size_t used = 0;
  for (AttentionStack stack : kAttentionStacks) {
    const auto& layers = in_decoder(stack) ? dec_.layers : enc_.layers;
    const std::vector<LayerParams>& params = in_decoder(stack) ? decoder_ : encoder_;
    std::vector<AttentionActivations<T>>& blocks = probe_.blocks[static_cast<int>(stack)];
    blocks.clear();
    for (size_t i = 0; i < layers.size(); ++i) {
      AttentionActivations<T> a = layers[i][attention_block(stack)].attention;
      if (computed(stack)) {
        const int64_t B = a.q_heads.dim(0), H = a.q_heads.dim(1), Tq = a.q_heads.dim(2);
        const Shape probs_shape({B, H, Tq, a.k_heads.dim(2)});
        a.probs = TensorView<T>(probe_.probs.data() + used, probs_shape);
        used += static_cast<size_t>(probs_shape.numel());
        // The standard kernel on the saved projections, without dropout (maps are read after
        // evaluation forwards).
        const AttentionParams& p = params[i][attention_block(stack)].attention;
        ops::attention_forward<T>(
            TensorView<T>(probe_.scratch_out.data(), Shape({B, H, Tq, a.v_heads.dim(3)})), a.probs,
            a.q_heads, a.k_heads, a.v_heads, attention_mask(stack), attention_scale(p));
      }
      blocks.push_back(a);
    }
  }
  probe_.ready = true;
}

template <typename T>
const AttentionParams& Transformer<T>::attention_block_params(AttentionStack stack,
                                                              int64_t layer) const {
  attention_probs(stack, layer);  // checks the layer
  const LayerParams& p = (in_decoder(stack) ? decoder_ : encoder_)[static_cast<size_t>(layer)];
  return p[attention_block(stack)].attention;
}

template <typename T>
void Transformer<T>::carve_sublayer(Arena<T>& arena, SublayerActivations<T>& s, SublayerKind kind,
                                    int64_t batch, int64_t length, int64_t keys, bool step,
                                    TensorView<T> sub_out_pool,
                                    const TensorView<T>* combined_pool) const {
  const ModelConfig& c = config_;
  const int64_t B = batch, D = c.d_model, H = c.heads, K = c.d_k, V = c.d_v;
  if (kind == SublayerKind::kStackNorm) {
    s.out = arena.take({B, length, D});
    s.stats = sublayer_.carve_stats(arena, B * length);
    return;
  }
  sublayer_.carve(arena, s, {B, length, D}, sub_out_pool);
  if (kind == SublayerKind::kFeedForward) {
    s.hidden = arena.take({B, length, c.d_ff});
    s.pre_activation = ops::activation_backward_reads_input(c.activation)
                           ? arena.take({B, length, c.d_ff})
                           : s.hidden;
    return;
  }
  AttentionActivations<T>& a = s.attention;
  a.q_heads = arena.take({B, H, length, K});
  // Decoding projects the new position's keys and values only (self-attention appends them to
  // its cache; cross-attention reads its cache alone); the probabilities span the cache.
  int64_t projected = keys;
  if (step) projected = kind == SublayerKind::kCrossAttention ? 0 : length;
  a.k_heads = arena.take({B, H, projected, K});
  a.v_heads = arena.take({B, H, projected, V});
  if (tiled() && !step) {
    a.logsumexp = arena.take({B, H, length});
  } else {
    a.probs = arena.take({B, H, length, keys});
  }
  a.combined = combined_pool == nullptr ? arena.take({B, length, H * V})
                                        : shaped(*combined_pool, {B, length, H * V});
}

template <typename T>
WorkspaceParts Transformer<T>::layout(bool counting, int64_t batch, int64_t src_length,
                                      int64_t tgt_length, int64_t loss_rows) {
  const ModelConfig& c = config_;
  const int64_t B = batch, S = src_length, T_ = tgt_length, D = c.d_model, H = c.heads;
  const int64_t K = c.d_k, V = c.d_v, F = c.d_ff, N = c.vocab_size;
  const int64_t L = S > T_ ? S : T_;
  auto carve_stack = [&](StackActivations<T>& st, const std::vector<LayerParams>& layers,
                         int64_t length) {
    st.embedded = arena_.take({B, length, D});
    for (size_t i = 0; i < layers.size(); ++i) {
      for (size_t j = 0; j < layers[i].size(); ++j) {
        const SublayerKind kind = layers[i][j].kind;
        carve_sublayer(arena_, st.layers[i][j], kind, B, length,
                       kind == SublayerKind::kCrossAttention ? S : length, false, pool_sub_out_,
                       tiled() ? nullptr : &pool_combined_);
      }
    }
    st.output = st.layers.back().back().out;
  };
  WorkspaceParts parts;
  arena_.begin(counting);
  pool_sub_out_ = arena_.take({B * L * D});
  pool_combined_ = arena_.take({B * L * H * V});
  const int64_t before_stacks = arena_.used();
  carve_stack(enc_, encoder_, S);
  carve_stack(dec_, decoder_, T_);
  parts.activations = arena_.used() - before_stacks;
  // One block of the loss's rows: logits, overwritten by their log-probabilities, overwritten
  // (training) by their gradient.
  logits_ = arena_.take({loss_rows, N});
  parts.logits = arena_.used() - before_stacks - parts.activations;
  d_enc_stream_ = arena_.take({B, S, D});
  d_dec_stream_ = arena_.take({B, T_, D});
  d_enc_output_ = arena_.take({B, S, D});
  pool_tmp1_ = arena_.take({B * L * D});
  pool_tmp2_ = arena_.take({B * L * D});
  pool_hidden_ = arena_.take({B * L * F});
  pool_q_ = arena_.take({B * L * H * K});
  pool_k_ = arena_.take({B * L * H * K});
  pool_v_ = arena_.take({B * L * H * V});
  pool_q_heads_ = arena_.take({B * L * H * K});
  pool_k_heads_ = arena_.take({B * L * H * K});
  pool_v_heads_ = arena_.take({B * L * H * V});
  pool_heads_out_ = arena_.take({B * L * H * V});
  forward_pools_ = {pool_q_, pool_k_, pool_v_, pool_heads_out_, {}};
  if (tiled()) {
    forward_pools_.attention_scratch =
        arena_.take({ops::attention_tiled_scratch_elements(ops::attention_tiled_workers())});
  } else {
    pool_scores_ = arena_.take({B * H * L * L});
  }
  parts.scratch = arena_.used() - parts.activations - parts.logits;
  return parts;
}

template <typename T>
void Transformer<T>::carve(int64_t batch, int64_t src_length, int64_t tgt_length) {
  const int64_t loss_rows = loss_block_rows(batch * tgt_length);
  layout(true, batch, src_length, tgt_length, loss_rows);
  arena_.reserve(arena_.used());
  layout(false, batch, src_length, tgt_length, loss_rows);
  batch_ = batch;
  src_length_ = src_length;
  tgt_length_ = tgt_length;
}

template <typename T>
WorkspaceParts Transformer<T>::workspace_parts(int64_t batch, int64_t src_length,
                                               int64_t tgt_length) {
  const int64_t live_loss_rows = batch_ > 0 ? logits_.dim(0) : 0;
  const WorkspaceParts parts =
      layout(true, batch, src_length, tgt_length, loss_block_rows(batch * tgt_length));
  // Counting left views without memory: carve the current shape's again (no allocation).
  if (batch_ > 0) layout(false, batch_, src_length_, tgt_length_, live_loss_rows);
  return parts;
}

template <typename T>
void Transformer<T>::carve_step(Arena<T>& arena, StepWorkspace<T>& w, int64_t batch,
                                int64_t src_length, int64_t max_steps) const {
  const ModelConfig& c = config_;
  const int64_t B = batch, S = src_length, D = c.d_model;
  w.layers.resize(decoder_.size());
  auto layout = [&](bool counting) {
    arena.begin(counting);
    w.x = arena.take({B, 1, D});
    // One set of buffers per kind, shared by every layer.
    SublayerActivations<T> shared[4];
    for (SublayerKind kind : {SublayerKind::kSelfAttention, SublayerKind::kCrossAttention,
                              SublayerKind::kFeedForward, SublayerKind::kStackNorm}) {
      const int64_t keys = kind == SublayerKind::kCrossAttention ? S : max_steps;
      SublayerActivations<T>& s = shared[static_cast<int>(kind)];
      carve_sublayer(arena, s, kind, B, 1, keys, true, arena.take({B, 1, D}), nullptr);
      // Residual sub-layers write over their input; the stack norm into a buffer of its own.
      if (kind != SublayerKind::kStackNorm) s.out = w.x;
    }
    for (size_t i = 0; i < decoder_.size(); ++i) {
      w.layers[i].clear();
      for (const SublayerParams& p : decoder_[i])
        w.layers[i].push_back(shared[static_cast<int>(p.kind)]);
    }
    w.logits = arena.take({B, c.vocab_size});
  };
  layout(true);
  arena.reserve(arena.used());
  layout(false);
}

template <typename T>
void Transformer<T>::embed_forward(TensorView<T> x, const int32_t* tokens, int table_index,
                                   int positions_index, int64_t first_position, float p_drop,
                                   uint64_t key) {
  const int64_t D = config_.d_model;
  ops::embedding_forward<T>(x.reshape({x.dim(0) * x.dim(1), D}), tokens, in(param(table_index)),
                            static_cast<T>(std::sqrt(static_cast<double>(D))));
  TensorView<const T> positions =
      positions_index >= 0 ? in(param(positions_index)) : sinusoids_.view();
  ops::add_positions_forward<T>(x, positions, first_position);
  ops::dropout_forward<T>(x, in(x), p_drop, key);
}

template <typename T>
void Transformer<T>::output_forward(TensorView<T> logits, TensorView<const T> x) {
  const int64_t D = config_.d_model;
  TensorView<const T> bias = output_bias_ >= 0 ? in(param(output_bias_)) : TensorView<const T>();
  ops::linear_forward<T>(logits, x.reshape({x.numel() / D, D}), in(param(output_weight_)), bias);
}

template <typename T>
void Transformer<T>::embed_backward(TensorView<T> dembedded, const int32_t* tokens, int table_index,
                                    int positions_index, bool training, uint64_t key) {
  const int64_t D = config_.d_model;
  const float p = training ? static_cast<float>(config_.dropout) : 0.0f;
  ops::dropout_backward<T>(dembedded, in(dembedded), p, key);
  if (positions_index >= 0) {
    ops::add_positions_backward<T>(table_.view(grads_.data(), positions_index), in(dembedded));
  }
  const int64_t rows = dembedded.numel() / D;
  ops::embedding_backward<T>(table_.view(grads_.data(), table_index),
                             in(dembedded.reshape({rows, D})), tokens,
                             static_cast<T>(std::sqrt(static_cast<double>(D))));
}

template <typename T>
void Transformer<T>::project_keys_values(const AttentionParams& p, TensorView<const T> key_value_in,
                                         TensorView<T> k_heads, TensorView<T> v_heads,
                                         const ForwardPools<T>& pools) {
  const int64_t B = key_value_in.dim(0), keys = key_value_in.dim(1);
  const int64_t D = config_.d_model, H = config_.heads, K = config_.d_k, V = config_.d_v;
  // One position per sentence (decoding): (B,1,H*W) already is the (B,H,1,W) heads layout.
  const bool one_position = keys == 1;
  TensorView<T> k = one_position ? k_heads.reshape({B, H * K}) : shaped(pools.k, {B * keys, H * K});
  TensorView<T> v = one_position ? v_heads.reshape({B, H * V}) : shaped(pools.v, {B * keys, H * V});
  // In bf16 the two products round their shared input once.
  const blas::Bf16OperandReuseIfBf16<T> round_input_once(key_value_in.data(), B * keys, D, D);
  ops::linear_forward<T>(k, key_value_in.reshape({B * keys, D}), in(param(p.k_weight)),
                         in(param(p.k_bias)));
  ops::linear_forward<T>(v, key_value_in.reshape({B * keys, D}), in(param(p.v_weight)),
                         in(param(p.v_bias)));
  if (one_position) return;
  ops::split_heads<T>(k_heads, in(k.reshape({B, keys, H * K})));
  ops::split_heads<T>(v_heads, in(v.reshape({B, keys, H * V})));
}

template <typename T>
void Transformer<T>::attention_forward(AttentionActivations<T>& a, const AttentionParams& p,
                                       TensorView<const T> query_in,
                                       TensorView<const T> key_value_in,
                                       const ops::AttentionMask& mask, TensorView<T> out,
                                       const ForwardPools<T>& pools, bool training, uint64_t key,
                                       KvCache<T>* cache, bool append) {
  const int64_t D = config_.d_model;
  const int64_t B = query_in.dim(0), queries = query_in.dim(1);
  const int64_t H = config_.heads, K = config_.d_k, V = config_.d_v;
  // Projections (B,L,H*K) pass through the pools on their way to the heads layout, except with
  // one query per sentence (decoding), where (B,1,H*K) already is the (B,H,1,K) heads layout and
  // the (B,H,1,V) heads' output the joined (B,1,H*V).
  const bool one_query = queries == 1;
  TensorView<T> q =
      one_query ? a.q_heads.reshape({B, H * K}) : shaped(pools.q, {B * queries, H * K});
  // In bf16 self-attention's q, k and v products round their shared input once (the scope in
  // project_keys_values covers k and v, and cross-attention's memory).
  const blas::Bf16OperandReuseIfBf16<T> round_query_in_once(query_in.data(), B * queries, D, D);
  ops::linear_forward<T>(q, query_in.reshape({B * queries, D}), in(param(p.q_weight)),
                         in(param(p.q_bias)));
  if (!one_query) ops::split_heads<T>(a.q_heads, in(q.reshape({B, queries, H * K})));
  TensorView<T> keys = a.k_heads, values = a.v_heads;
  if (cache == nullptr || append) {
    project_keys_values(p, key_value_in, a.k_heads, a.v_heads, pools);
  }
  if (cache != nullptr) {
    if (append) cache->append(in(a.k_heads), in(a.v_heads));
    keys = cache->key_view();
    values = cache->value_view();
  }
  const float p_drop = training ? static_cast<float>(config_.attention_dropout) : 0.0f;
  TensorView<T> heads_out =
      one_query ? a.combined.reshape({B, H, 1, V}) : shaped(pools.heads_out, {B, H, queries, V});
  // Decoding has one query per sentence: the standard kernel, whose (B,H,1,keys) probabilities are
  // small, whatever model.attention says (carve_sublayer carves its buffers).
  if (tiled() && cache == nullptr) {
    ops::attention_tiled_forward<T>(heads_out, a.logsumexp, pools.attention_scratch, in(a.q_heads),
                                    in(keys), in(values), mask, attention_scale(p), p_drop, key);
  } else {
    ops::attention_forward<T>(heads_out, shaped(a.probs, {B, H, queries, keys.dim(2)}),
                              in(a.q_heads), in(keys), in(values), mask, attention_scale(p), p_drop,
                              key);
  }
  if (!one_query) ops::combine_heads<T>(a.combined, in(heads_out));
  ops::linear_forward<T>(out.reshape({B * queries, D}),
                         in(a.combined.reshape({B * queries, H * V})), in(param(p.out_weight)),
                         in(param(p.out_bias)));
}

template <typename T>
void Transformer<T>::attention_backward(AttentionActivations<T>& a, const AttentionParams& p,
                                        TensorView<const T> query_in,
                                        TensorView<const T> key_value_in, TensorView<T> dout,
                                        TensorView<T> dquery_in, bool accumulate_query,
                                        TensorView<T> dkey_value_in, const ops::AttentionMask& mask,
                                        bool training, uint64_t key) {
  const int64_t D = config_.d_model, H = config_.heads, K = config_.d_k, V = config_.d_v;
  const int64_t queries = query_in.dim(1), keys = key_value_in.dim(1);
  auto grad = [&](int index) { return table_.view(grads_.data(), index); };
  const float p_drop = training ? static_cast<float>(config_.attention_dropout) : 0.0f;
  // out_proj's input, the joined heads: the tiled kernel keeps them (its O); the standard kernel's
  // live in a pool shared by every block, so they are rebuilt from the saved probabilities and
  // values by forward's own product, bit for bit, into pools free until dheads_out and dv below.
  TensorView<T> combined = a.combined;
  if (!tiled()) {
    TensorView<T> heads_out = shaped(pool_heads_out_, {batch_, H, queries, V});
    ops::attention_values<T>(heads_out, in(a.probs), in(a.v_heads), p_drop, key);
    combined = shaped(pool_v_, {batch_, queries, H * V});
    ops::combine_heads<T>(combined, in(heads_out));
  }
  TensorView<T> dcombined = shaped(pool_combined_, {batch_ * queries, H * V});
  ops::linear_backward<T>(dcombined, grad(p.out_weight), grad(p.out_bias),
                          in(dout.reshape({batch_ * queries, D})),
                          in(combined.reshape({batch_ * queries, H * V})), in(param(p.out_weight)));
  TensorView<T> dheads_out = shaped(pool_heads_out_, {batch_, H, queries, V});
  ops::split_heads<T>(dheads_out, in(dcombined.reshape({batch_, queries, H * V})));
  TensorView<T> dq_heads = shaped(pool_q_heads_, {batch_, H, queries, K});
  TensorView<T> dk_heads = shaped(pool_k_heads_, {batch_, H, keys, K});
  TensorView<T> dv_heads = shaped(pool_v_heads_, {batch_, H, keys, V});
  T* dscale = p.scale >= 0 ? grad(p.scale).data() : nullptr;
  if (tiled()) {
    // The heads' output O, rebuilt from its joined copy into a pool free until dv below.
    TensorView<T> heads_out = shaped(pool_v_, {batch_, H, queries, V});
    ops::split_heads<T>(heads_out, in(a.combined));
    ops::attention_tiled_backward<T>(dq_heads, dk_heads, dv_heads, dscale, in(dheads_out),
                                     in(a.q_heads), in(a.k_heads), in(a.v_heads), in(heads_out),
                                     in(a.logsumexp), forward_pools_.attention_scratch, mask,
                                     attention_scale(p), p_drop, key);
  } else {
    ops::attention_backward<T>(dq_heads, dk_heads, dv_heads, dscale, in(dheads_out), in(a.q_heads),
                               in(a.k_heads), in(a.v_heads), in(a.probs),
                               shaped(pool_scores_, a.probs.shape()), attention_scale(p), p_drop,
                               key);
  }
  TensorView<T> dq = shaped(pool_q_, {batch_, queries, H * K});
  TensorView<T> dk = shaped(pool_k_, {batch_, keys, H * K});
  TensorView<T> dv = shaped(pool_v_, {batch_, keys, H * V});
  ops::combine_heads<T>(dq, in(dq_heads));
  ops::combine_heads<T>(dk, in(dk_heads));
  ops::combine_heads<T>(dv, in(dv_heads));
  auto rows = [&](TensorView<T> v, int64_t n) { return v.reshape({batch_ * n, v.dim(2)}); };
  // In bf16 the weight gradients' products round their shared inputs once: the query input for
  // q (and, in self-attention, k and v), the key-value input for k and v.
  const blas::Bf16OperandReuseIfBf16<T> round_query_in_once(query_in.data(), batch_ * queries, D,
                                                            D);
  const blas::Bf16OperandReuseIfBf16<T> round_key_value_in_once(key_value_in.data(), batch_ * keys,
                                                                D, D);
  ops::linear_backward<T>(rows(dquery_in, queries), grad(p.q_weight), grad(p.q_bias),
                          in(rows(dq, queries)), query_in.reshape({batch_ * queries, D}),
                          in(param(p.q_weight)), accumulate_query);
  // Keys and values read the same input: their input gradients add up (and, for self-attention,
  // add to the query path's).
  ops::linear_backward<T>(rows(dkey_value_in, keys), grad(p.k_weight), grad(p.k_bias),
                          in(rows(dk, keys)), key_value_in.reshape({batch_ * keys, D}),
                          in(param(p.k_weight)), true);
  ops::linear_backward<T>(rows(dkey_value_in, keys), grad(p.v_weight), grad(p.v_bias),
                          in(rows(dv, keys)), key_value_in.reshape({batch_ * keys, D}),
                          in(param(p.v_weight)), true);
}

template <typename T>
void Transformer<T>::ffn_forward(SublayerActivations<T>& s, const FfnParams& p,
                                 TensorView<const T> x, TensorView<T> out) {
  const int64_t D = config_.d_model, F = config_.d_ff;
  const int64_t rows = x.numel() / D;
  TensorView<T> hidden = s.hidden.reshape({rows, F});
  TensorView<T> pre_activation = s.pre_activation.reshape({rows, F});
  ops::linear_forward<T>(pre_activation, x.reshape({rows, D}), in(param(p.fc1_weight)),
                         in(param(p.fc1_bias)));
  ops::activation_forward<T>(config_.activation, hidden, in(pre_activation));
  ops::linear_forward<T>(out.reshape({rows, D}), in(hidden), in(param(p.fc2_weight)),
                         in(param(p.fc2_bias)));
}

template <typename T>
void Transformer<T>::ffn_backward(SublayerActivations<T>& s, const FfnParams& p,
                                  TensorView<const T> x, TensorView<T> dout, TensorView<T> dx,
                                  bool accumulate) {
  const int64_t D = config_.d_model, F = config_.d_ff;
  const int64_t rows = x.numel() / D;
  auto grad = [&](int index) { return table_.view(grads_.data(), index); };
  TensorView<T> hidden = s.hidden.reshape({rows, F});
  TensorView<T> dhidden = shaped(pool_hidden_, {rows, F});
  ops::linear_backward<T>(dhidden, grad(p.fc2_weight), grad(p.fc2_bias),
                          in(dout.reshape({rows, D})), in(hidden), in(param(p.fc2_weight)));
  // The activation's backward reads fc1's output (kept apart) or its own output (in place).
  ops::activation_backward<T>(config_.activation, dhidden, in(dhidden),
                              in(s.pre_activation.reshape({rows, F})));
  ops::linear_backward<T>(dx.reshape({rows, D}), grad(p.fc1_weight), grad(p.fc1_bias), in(dhidden),
                          x.reshape({rows, D}), in(param(p.fc1_weight)), accumulate);
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace attnlab
