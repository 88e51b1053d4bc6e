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
#include "core/model/model_config.h"
#include "core/model/param_table.h"
#include "core/model/sublayer.h"
#include "core/ops/ops.h"

namespace attnlab {

// Entry indices of one attention block's parameters (scale = -1 unless learned).
struct AttentionParams {
  int q_weight, q_bias, k_weight, k_bias, v_weight, v_bias, out_weight, out_bias, scale = -1;
};
struct FfnParams {
  int fc1_weight, fc1_bias, fc2_weight, fc2_bias;
};
struct LayerParams {
  AttentionParams self_attn;
  NormParams self_attn_norm;
  AttentionParams cross_attn;  // decoder only
  NormParams cross_attn_norm;
  FfnParams ffn;
  NormParams final_norm;
};

// Saved activations of one attention block. Queries come from a (B,T,D) input, keys and values
// from a (B,S,D) input (the same tensor for self-attention). The projections are kept in the
// heads layout only: their (B,T,H*K) form and the per-head output are transient (workspace
// pools), since backward needs neither.
template <typename T>
struct AttentionActivations {
  TensorView<T> q_heads, k_heads, v_heads;  // (B,H,T,K), (B,H,S,K), (B,H,S,V) projections
  TensorView<T> probs;      // (B,H,T,S) standard kernel (tiled: see attention_probs)
  TensorView<T> logsumexp;  // (B,H,T) tiled kernel
  TensorView<T> combined;   // (B,T,H*V) the heads' outputs joined: out_proj's input
};

// One residual sub-layer (core/model/sublayer.h) and what its function f saves.
template <typename T>
struct SublayerActivations : ResidualActivations<T> {
  AttentionActivations<T> attention;
  TensorView<T> hidden;  // (B,L,F) FFN: relu(fc1(.))
};

template <typename T>
struct StackActivations {
  TensorView<T> embedded;  // (B,L,D) scale * embedding + positions, after dropout
  std::vector<std::vector<SublayerActivations<T>>> layers;  // [layer][sublayer]
  TensorView<T> final_normed;                               // (B,L,D) pre-LN final norm
  NormStats<T> final_stats;
  TensorView<T> output;  // (B,L,D) the stack's output (a view of one of the above)
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
  int target_embedding_index() const { return tgt_embedding_; }
  int output_weight_index() const { return output_weight_; }
  int output_bias_index() const { return output_bias_; }
  int position_index(bool decoder) const { return decoder ? tgt_positions_ : src_positions_; }
  TensorView<const T> sinusoids() const { return sinusoids_.view(); }

  // Runs encoder, decoder and the loss for a batch; saves what backward needs. Dropout is active
  // when `training`, with masks keyed by dropout_seed (derive it from seed, step and rank).
  ops::LossSums forward(const Batch& batch, float label_smoothing, bool training,
                        uint64_t dropout_seed);
  // Accumulates into grads() the gradient of dloss * (summed label-smoothed loss of the last
  // forward), e.g. dloss = 1 / target tokens for the mean loss.
  void backward(T dloss);
  void zero_grads();
  // Runs only the encoder (no dropout) on batch.src; the result stays in encoder_output() and the
  // source padding in source_padding(), for incremental decoding.
  TensorView<const T> encode(const Batch& batch);
  const std::vector<uint8_t>& source_padding() const { return src_padding_; }
  const NormParams& final_norm(bool decoder) const {
    return decoder ? decoder_final_norm_ : encoder_final_norm_;
  }
  // The residual sub-layer unit: norm placement and type.
  const Sublayer<T>& sublayer() const { return sublayer_; }
  // A norm's parameters and gradients as views.
  NormWeights<T> norm_weights(const NormParams& p);

  // Logits of the last forward, (B*T, N) as log-probabilities.
  TensorView<const T> log_probs() const { return log_probs_; }
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

 private:
  void carve(int64_t batch, int64_t src_length, int64_t tgt_length);
  void embed_forward(StackActivations<T>& acts, const int32_t* tokens, int64_t length,
                     int table_index, int positions_index, bool training, uint64_t key);
  void embed_backward(TensorView<T> dembedded, const int32_t* tokens, int table_index,
                      int positions_index, bool training, uint64_t key);
  void stack_forward(StackActivations<T>& acts, const std::vector<LayerParams>& layers,
                     bool decoder, bool training, uint64_t seed);
  TensorView<T> stack_backward(StackActivations<T>& acts, const std::vector<LayerParams>& layers,
                               bool decoder, TensorView<T> dout, uint64_t seed);
  void attention_forward(AttentionActivations<T>& acts, const AttentionParams& p,
                         TensorView<const T> query_in, TensorView<const T> key_value_in,
                         const ops::AttentionMask& mask, TensorView<T> out, bool training,
                         uint64_t key);
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
  NormParams encoder_final_norm_, decoder_final_norm_;
  Tensor<T> sinusoids_;  // (P,D) fixed table (sinusoidal positions only)

  // Workspace, carved for the current batch shape.
  Arena<T> arena_;
  int64_t batch_ = 0, src_length_ = 0, tgt_length_ = 0;
  std::vector<int32_t> src_, tgt_in_, tgt_out_;
  std::vector<uint8_t> src_padding_, tgt_padding_;
  StackActivations<T> enc_, dec_;
  TensorView<T> logits_, log_probs_;
  // Backward scratch: flat pools sized for the largest use, viewed with the shape of each use
  // (backward runs one sub-layer at a time, so every sub-layer reuses the same pools).
  TensorView<T> d_enc_stream_, d_dec_stream_, d_enc_output_, d_logits_;
  TensorView<T> pool_tmp1_, pool_tmp2_, pool_hidden_, pool_q_, pool_k_, pool_v_, pool_combined_;
  TensorView<T> pool_q_heads_, pool_k_heads_, pool_v_heads_, pool_heads_out_;
  TensorView<T> pool_scores_;             // (B*H*L*L) standard kernel's backward scratch
  TensorView<T> pool_attention_scratch_;  // tiled kernel's per-worker tiles
  bool full_forward_ = false;             // the last pass ran the decoder (forward, not encode)
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
