// Transformer: the paper's encoder-decoder with hand-written forward and backward passes.
// Parameters and gradients are flat buffers laid out by ParamTable; activations live in a
// workspace carved for the batch shape and reused across steps.
//
// Legend: B batch, S source length, T target length, D d_model, H heads, K d_k, V d_v, F d_ff,
// N vocabulary.
#pragma once

#include <cstdint>
#include <vector>

#include "core/data/batch.h"
#include "core/model/arena.h"
#include "core/model/attention_stack.h"
#include "core/model/layer.h"
#include "core/model/model_config.h"
#include "core/model/param_table.h"
#include "core/model/sublayer.h"
#include "core/ops/ops.h"

namespace attnlab {

// Saved activations of one attention block. Queries come from a (B,T,D) input, keys and values
// from a (B,S,D) input (the same tensor for self-attention). The projections are kept in the
// heads layout only: their (B,T,H*K) form and the per-head output are transient (workspace
// pools), since backward needs neither.
template <typename T>
struct AttentionActivations {
  TensorView<T> q_heads, k_heads, v_heads;  // (B,H,T,K), (B,H,S,K), (B,H,S,V) projections
  TensorView<T> probs;      // (B,H,T,S) standard kernel (tiled: see attention_probs)
  TensorView<T> logsumexp;  // (B,H,T) tiled kernel
  // (B,T,H*V) the heads' outputs joined: out_proj's input. Saved by the tiled kernel (its
  // backward reads them as O) and by decoding; the standard kernel's training pass keeps them in
  // a pool shared by every block and its backward rebuilds them.
  TensorView<T> combined;
};

// One sub-layer (core/model/layer.h) and what its function f saves. A kStackNorm sub-layer uses
// out and stats only.
template <typename T>
struct SublayerActivations : ResidualActivations<T> {
  AttentionActivations<T> attention;
  TensorView<T> hidden;  // (B,L,F) FFN: activation(fc1(.)), fc2's input
  // (B,L,F) FFN: fc1(.), what the activation's backward reads; one whose backward reads its
  // output (relu) runs in place, and this is then `hidden` itself (ops/activation.h).
  TensorView<T> pre_activation;
};

template <typename T>
struct StackActivations {
  TensorView<T> embedded;  // (B,L,D) scale * embedding + positions, after dropout
  std::vector<std::vector<SublayerActivations<T>>> layers;  // [layer][sublayer]
  TensorView<T> output;  // (B,L,D) the stack's output: the last sub-layer's
};

// Scratch of the forward sub-layer functions: flat pools viewed with the shape of each use.
template <typename T>
struct ForwardPools {
  TensorView<T> q, k, v;            // projections (B*L, H*K) and (B*L, H*V)
  TensorView<T> heads_out;          // (B,H,L,V) the heads' output before they are joined
  TensorView<T> attention_scratch;  // the tiled kernel's per-worker tiles
};

// What the layers of one pass over a stack share.
template <typename T>
struct LayerPass {
  bool decoder = false;
  ops::AttentionMask self_mask, cross_mask;
  TensorView<const T> memory;  // (B,S,D) the encoder output, for cross-attention without a cache
  ForwardPools<T> pools;
  bool training = false;  // dropout on (probabilities and masks keyed by seed)
  uint64_t seed = 0;
};

// Incremental decoding's workspace for B sentences (core/decode/decoder_state.h): one position per
// sentence; every layer's sub-layers of a kind share one set of buffers, and the residual ones
// write their output over their input, x. One position needs no pools: its projections are
// written in the heads layout directly.
template <typename T>
struct StepWorkspace {
  TensorView<T> x;                                          // (B,1,D) the residual stream
  std::vector<std::vector<SublayerActivations<T>>> layers;  // [layer][sublayer]
  TensorView<T> logits;                                     // (B,N)
};

// The loss's block of rows (Transformer::forward) holds at most this many bytes of logits. Each
// block adds its output-projection gradient to the whole (N,D) weight gradient, so small blocks
// cost passes over it; at 64 MiB the paper's base (37,000 logits a row) runs its 2,048 target
// tokens in 5 blocks of 453 rows instead of one 289 MiB buffer: 310 MiB less peak RSS with the
// rebuilt joined heads, about 2% more time per step (docs/results/bench.md); a 4,000-token
// vocabulary runs batches of up to 4,096 target tokens as one block, the arithmetic of one
// buffer.
inline constexpr int64_t kLossBlockBytes = int64_t{64} << 20;

// Elements of a training step's workspace (Transformer::workspace_parts), by what they hold.
struct WorkspaceParts {
  int64_t activations = 0;  // saved for backward: the embeddings and every sub-layer's buffers
  int64_t logits = 0;       // (rows, N) a block of the loss's rows (all B*T if log-probs kept)
  int64_t scratch = 0;      // gradient streams and the pools forward and backward share
  int64_t total() const { return activations + logits + scratch; }
};

template <typename T>
class Transformer {
 public:
  Transformer(const ModelConfig& config, uint64_t init_seed);

  const ModelConfig& config() const { return config_; }
  const ParamTable& table() const { return table_; }
  std::vector<T>& params() { return params_; }
  const std::vector<T>& params() const { return params_; }
  std::vector<T>& grads() { return grads_; }
  TensorView<T> param(int index) { return table_.view(params_.data(), index); }
  TensorView<T> param(const std::string& name) { return param(table_.index_of(name)); }
  TensorView<T> grad(const std::string& name) {
    return table_.view(grads_.data(), table_.index_of(name));
  }
  const std::vector<LayerParams>& encoder_layers() const { return encoder_; }
  const std::vector<LayerParams>& decoder_layers() const { return decoder_; }
  int embedding_index() const { return src_embedding_; }
  int output_weight_index() const { return output_weight_; }

  // Runs encoder, decoder and the loss for a batch; saves what backward needs. The output
  // projection and the loss run a block of rows at a time (loss_block_rows), so no (B*T, N)
  // buffer of logits exists unless keep_log_probs asked for one. When `training`, dropout is
  // active with masks keyed by dropout_seed (derive it from seed, step and rank), and forward
  // begins the backward pass of the summed label-smoothed loss: each block's logit gradient
  // goes at once into grads() (the output projection's weight and bias) and into d(decoder
  // output), which backward() carries on from.
  ops::LossSums forward(const Batch& batch, float label_smoothing, bool training,
                        uint64_t dropout_seed);
  // Completes the gradient of the summed label-smoothed loss of the last training forward,
  // accumulating into grads(); a mean loss's gradient is this times 1 / target tokens
  // (scale_grads).
  void backward();
  // grads() *= factor.
  void scale_grads(T factor);
  void zero_grads();
  // Runs only the encoder (no dropout) on batch.src; the result stays in encoder_output() and the
  // source padding in source_padding(), for incremental decoding.
  TensorView<const T> encode(const Batch& batch);
  const std::vector<uint8_t>& source_padding() const { return src_padding_; }
  // A norm's parameters and gradients as views.
  NormWeights<T> norm_weights(const NormParams& p);

  // The pieces of the decoder that incremental decoding (core/decode/decoder_state.h) runs one
  // position at a time, the same functions training runs over all positions.
  // Carves `w` from `arena` for `batch` sentences of up to `src_length` source tokens and
  // `max_steps` target positions (counting first, then for real).
  void carve_step(Arena<T>& arena, StepWorkspace<T>& w, int64_t batch, int64_t src_length,
                  int64_t max_steps) const;
  // w.x = the embedded target tokens (one per sentence) at position `position`.
  void embed_step(StepWorkspace<T>& w, const int32_t* tokens, int64_t position);
  // Layer `index` of the decoder on w.x, appending to cache.self and attending over cache.cross.
  void layer_step(StepWorkspace<T>& w, int64_t index, LayerCache<T>& cache,
                  const ops::AttentionMask& cross_mask);
  // The parameters (indices) of the weights a step multiplies its rows by (layer_step and
  // output_step): self-attention's four projections, cross-attention's query and output (its keys
  // and values are in the cache), the FFN's two and the output projection. Decoding packs them
  // once per state (blas::PackedWeights).
  std::vector<int> step_weights() const;
  // w.logits = the output projection of the decoder's output.
  void output_step(StepWorkspace<T>& w);
  // Fills cache.cross of decoder layer `index` with the keys and values of `memory` (B,S,D), the
  // output of the last encode().
  void fill_cross_cache(int64_t index, TensorView<const T> memory, LayerCache<T>& cache);

  // Whether the next evaluation forwards keep every position's log-probabilities for
  // log_probs(): one (B*T, N) buffer, for tests, the step dump and scoring. Training forwards
  // never keep them (their buffer holds the logits' gradient).
  void keep_log_probs(bool keep);
  // Log-probabilities of the last forward, (B*T, N); needs keep_log_probs(true) before it.
  TensorView<const T> log_probs() const;
  // The loss's block of rows holds at most this many bytes of logits (at least one row);
  // kLossBlockBytes unless set (tests set small blocks). Like keep_log_probs, it takes effect at
  // the next forward.
  void set_loss_block_bytes(int64_t bytes);
  // Attention probabilities of the last forward, (B,H,T,S). With model.attention = tiled they are
  // not stored by forward: the first request after a forward computes every block's map through the
  // standard kernel from the saved projections (views stay valid until the next forward).
  TensorView<const T> attention_probs(AttentionStack stack, int64_t layer) const;
  // Saved activations of attention block `layer` of `stack` (as for attention_probs) from the
  // last forward: projected heads and probabilities, for diagnostics.
  const AttentionActivations<T>& attention_activations(AttentionStack stack, int64_t layer) const;
  // The masks attention used in the last forward (stack as for attention_probs).
  ops::AttentionMask attention_mask(AttentionStack stack) const;
  // The parameters of that block.
  const AttentionParams& attention_block_params(AttentionStack stack, int64_t layer) const;
  // The scale applied to logits of an attention block (fixed, or the learned parameter).
  T attention_scale(const AttentionParams& p) const;
  // The encoder output of the last forward, (B,S,D).
  TensorView<const T> encoder_output() const { return enc_.output; }
  // Elements of the activation workspace (saved activations and backward scratch) carved for
  // the current batch shape.
  int64_t workspace_elements() const { return arena_.used(); }
  // What a training step over `batch` sentences of these lengths carves, by part (elements);
  // counted without allocating, leaving the current batch's views as they were.
  WorkspaceParts workspace_parts(int64_t batch, int64_t src_length, int64_t tgt_length);

 private:
  void carve(int64_t batch, int64_t src_length, int64_t tgt_length);
  // Rows of the loss's block out of `rows` (B*T): all of them when log-probabilities are kept.
  int64_t loss_block_rows(int64_t rows) const;
  // One pass of carve: counting (no memory) or for real, the loss's block `loss_rows` rows;
  // returns the parts' sizes.
  WorkspaceParts layout(bool counting, int64_t batch, int64_t src_length, int64_t tgt_length,
                        int64_t loss_rows);
  // The carving of one sub-layer's activations over (B,length,D), attending over `keys`
  // positions; `step` carves incremental decoding's buffers (the probabilities as a pool for the
  // longest cache, the standard kernel's whatever model.attention). `sub_out_pool` holds f's
  // output (at least B*length*D elements; see Sublayer::carve). A `combined_pool` (at least
  // B*length*H*V; nullptr: a buffer of their own) holds attention's joined heads: the standard
  // kernel's backward rebuilds them (attention_backward).
  void carve_sublayer(Arena<T>& arena, SublayerActivations<T>& s, SublayerKind kind, int64_t batch,
                      int64_t length, int64_t keys, bool step, TensorView<T> sub_out_pool,
                      const TensorView<T>* combined_pool) const;
  // x (B,L,D) = scale * embedding of tokens + positions from `first_position` on, after dropout
  // p_drop.
  void embed_forward(TensorView<T> x, const int32_t* tokens, int table_index, int positions_index,
                     int64_t first_position, float p_drop, uint64_t key);
  void embed_backward(TensorView<T> dembedded, const int32_t* tokens, int table_index,
                      int positions_index, bool training, uint64_t key);
  // The output projection and the loss over the last forward's decoder output, a block of rows
  // at a time; with `gradient`, each block's gradient of the summed loss too (see forward).
  ops::LossSums loss_blocks(bool gradient);
  // logits (rows,N) = x (rows,D) E^T (+ b).
  void output_forward(TensorView<T> logits, TensorView<const T> x);
  void stack_forward(StackActivations<T>& acts, const std::vector<LayerParams>& layers,
                     bool decoder, bool training, uint64_t seed);
  TensorView<T> stack_backward(StackActivations<T>& acts, const std::vector<LayerParams>& layers,
                               bool decoder, TensorView<T> dout, uint64_t seed);
  LayerPass<T> layer_pass(bool decoder, bool training, uint64_t seed) const;
  // The one decoder (or encoder) layer: its sub-layers in order on x (B,L,D), each writing
  // acts[j].out; the input of sub-layer j is acts[j-1].out. With a cache (decoding, L = 1),
  // self-attention appends the position's keys and values to cache->self and attends over them,
  // and cross-attention attends over cache->cross.
  void layer_forward(const LayerParams& layer, std::vector<SublayerActivations<T>>& acts,
                     TensorView<const T> x, int64_t index, const LayerPass<T>& pass,
                     LayerCache<T>* cache);
  // The exact reverse of layer_forward without a cache: moves grads.stream from d(layer output)
  // to d(x), adding parameter gradients (and cross-attention's to d_enc_output_).
  void layer_backward(const LayerParams& layer, std::vector<SublayerActivations<T>>& acts,
                      TensorView<const T> x, int64_t index, const LayerPass<T>& pass,
                      StreamGradients<T>& grads);
  // k_heads (B,H,L,K), v_heads (B,H,L,V) = the heads of key_value_in (B,L,D)'s projections.
  void project_keys_values(const AttentionParams& p, TensorView<const T> key_value_in,
                           TensorView<T> k_heads, TensorView<T> v_heads,
                           const ForwardPools<T>& pools);
  // out = attention of query_in's queries over key_value_in's keys and values; with a cache,
  // over the cache's (self-attention first appends key_value_in's to it).
  void attention_forward(AttentionActivations<T>& acts, const AttentionParams& p,
                         TensorView<const T> query_in, TensorView<const T> key_value_in,
                         const ops::AttentionMask& mask, TensorView<T> out,
                         const ForwardPools<T>& pools, bool training, uint64_t key,
                         KvCache<T>* cache, bool append);
  void attention_backward(AttentionActivations<T>& acts, const AttentionParams& p,
                          TensorView<const T> query_in, TensorView<const T> key_value_in,
                          TensorView<T> dout, TensorView<T> dquery_in, bool accumulate_query,
                          TensorView<T> dkey_value_in, const ops::AttentionMask& mask,
                          bool training, uint64_t key);
  bool tiled() const { return config_.attention == AttentionKernel::kTiled; }
  // Tiled kernel: fills probe_ with every block's probabilities (once per forward).
  void compute_probe_probabilities() const;
  void ffn_forward(SublayerActivations<T>& s, const FfnParams& p, TensorView<const T> x,
                   TensorView<T> out);
  void ffn_backward(SublayerActivations<T>& s, const FfnParams& p, TensorView<const T> x,
                    TensorView<T> dout, TensorView<T> dx, bool accumulate);

  ModelConfig config_;
  Sublayer<T> sublayer_;
  ParamTable table_;
  std::vector<T> params_, grads_;
  std::vector<LayerParams> encoder_, decoder_;
  int src_embedding_ = -1, tgt_embedding_ = -1, output_weight_ = -1, output_bias_ = -1;
  int src_positions_ = -1, tgt_positions_ = -1;
  Tensor<T> sinusoids_;  // (P,D) fixed table (sinusoidal positions only)

  // Workspace, carved for the current batch shape.
  Arena<T> arena_;
  int64_t batch_ = 0, src_length_ = 0, tgt_length_ = 0;
  std::vector<int32_t> src_, tgt_in_, tgt_out_;
  std::vector<uint8_t> src_padding_, tgt_padding_;
  StackActivations<T> enc_, dec_;
  // (rows, N) for a block of rows of the loss (all B*T rows when keep_log_probs_): logits, then
  // their log-probabilities, then (training) their gradient.
  TensorView<T> logits_;
  int64_t loss_block_bytes_ = kLossBlockBytes;
  bool keep_log_probs_ = false, log_probs_kept_ = false;
  bool loss_gradient_ready_ = false;  // a training forward began backward's pass
  // Backward scratch: flat pools sized for the largest use, viewed with the shape of each use
  // (backward runs one sub-layer at a time, so every sub-layer reuses the same pools).
  TensorView<T> d_enc_stream_, d_dec_stream_, d_enc_output_;
  TensorView<T> pool_sub_out_;  // (B*L*D) every sub-layer's f output (Sublayer::carve)
  TensorView<T> pool_tmp1_, pool_tmp2_, pool_hidden_, pool_q_, pool_k_, pool_v_, pool_combined_;
  TensorView<T> pool_q_heads_, pool_k_heads_, pool_v_heads_, pool_heads_out_;
  TensorView<T> pool_scores_;      // (B*H*L*L) standard kernel's backward scratch
  ForwardPools<T> forward_pools_;  // pool_q_, pool_k_, pool_v_, pool_heads_out_ and the tiles
  bool full_forward_ = false;      // the last pass ran the decoder (forward, not encode)
  // Tiled kernel: probabilities computed on request for attention_probs/attention_activations.
  struct ProbabilityProbe {
    bool ready = false;
    std::vector<T> probs, scratch_out;
    std::vector<AttentionActivations<T>> blocks[3];  // [stack][layer], probs filled in
  };
  mutable ProbabilityProbe probe_;
  float label_smoothing_ = 0.0f;
  bool training_ = false;
  uint64_t dropout_seed_ = 0;
};

}  // namespace attnlab
