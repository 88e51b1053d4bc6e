// One layer of either stack as data: its sub-layers in order, each with its kind, its norm and its
// function's parameters. The encoder layer is self-attention then the FFN; the decoder layer puts
// cross-attention between them; after the last layer of a pre-LN stack comes the stack's own norm,
// a sub-layer of kind kStackNorm. layer_params is the one place that decides this order, so the
// model's forward, backward, workspace layout and incremental decoding all walk the same list.
// Legend: B batch, H heads, K d_k, V d_v, D d_model.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model_config.h"
#include "core/model/param_table.h"
#include "core/model/sublayer.h"

namespace attnlab {

// What a sub-layer computes. The three residual kinds are y = x + drop(f(.)) around their f with
// the norm where model.norm puts it (core/model/sublayer.h); kStackNorm is the norm alone, y =
// N(x).
enum class SublayerKind { kSelfAttention, kCrossAttention, kFeedForward, kStackNorm };

// Entry indices of one attention block's parameters (scale = -1 unless learned).
struct AttentionParams {
  int q_weight, q_bias, k_weight, k_bias, v_weight, v_bias, out_weight, out_bias, scale = -1;
};
struct FfnParams {
  int fc1_weight, fc1_bias, fc2_weight, fc2_bias;
};

struct SublayerParams {
  SublayerKind kind;
  NormParams norm;
  AttentionParams attention{};  // kSelfAttention, kCrossAttention
  FfnParams ffn{};              // kFeedForward
};

// The sub-layers of one layer in order. The attention blocks sit at attention_block(stack)
// (core/model/attention_stack.h): self-attention first, cross-attention second.
using LayerParams = std::vector<SublayerParams>;

// Layer `index` of the encoder or decoder stack of a model with table `table`.
LayerParams layer_params(const ParamTable& table, const ModelConfig& config, bool decoder,
                         int64_t index);

// Incremental decoding: the keys and values an attention block has seen, `length` positions in
// the (B,H,length,K) and (B,H,length,V) layout at the start of buffers with room for `capacity`
// positions. Self-attention appends each step's position; cross-attention is filled once with
// the source's.
template <typename T>
struct KvCache {
  std::vector<T> keys, values;
  int64_t batch = 0, heads = 0, key_width = 0, value_width = 0, capacity = 0, length = 0;

  KvCache() = default;
  // The buffers come from, and go back to, the kept ones while a DecodeBufferReuse lives
  // (decode_buffers.h); their contents past `length` positions are never read.
  KvCache(int64_t batch, int64_t heads, int64_t key_width, int64_t value_width, int64_t capacity);
  KvCache(const KvCache&) = default;
  KvCache& operator=(const KvCache&) = default;
  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;
  ~KvCache();
  TensorView<T> key_view() { return TensorView<T>(keys.data(), {batch, heads, length, key_width}); }
  TensorView<T> value_view() {
    return TensorView<T>(values.data(), {batch, heads, length, value_width});
  }
  // Appends n positions, (B,H,n,K) and (B,H,n,V).
  void append(TensorView<const T> new_keys, TensorView<const T> new_values);
  // Keeps only the sentences at `rows`, in that order (rows may repeat): for beam search. The
  // kept sentences are gathered into `spare`, which then holds the old buffer: a caller that
  // reorders every step passes the same spare each time and allocates nothing after the first.
  void reorder(const std::vector<int64_t>& rows, std::vector<T>& spare);
};

// A layer's caches: self-attention's and, in the decoder, cross-attention's.
template <typename T>
struct LayerCache {
  KvCache<T> self, cross;
};

}  // namespace attnlab
