// A layer's sub-layer list (the placement of the pre-LN stack norm) and the KV cache of
// incremental decoding.
// Legend: B batch, H heads, K d_k, V d_v, W K or V, n new positions, t cached positions.
#include "core/model/layer.h"

#include <algorithm>
#include <utility>

#include "core/model/decode_buffers.h"
#include "core/model/param_names.h"

namespace attnlab {
namespace {

namespace names = param_names;

AttentionParams attention_params(const ParamTable& t, const std::string& prefix, bool learned) {
  AttentionParams p{t.index_of(names::q_weight(prefix)),   t.index_of(names::q_bias(prefix)),
                    t.index_of(names::k_weight(prefix)),   t.index_of(names::k_bias(prefix)),
                    t.index_of(names::v_weight(prefix)),   t.index_of(names::v_bias(prefix)),
                    t.index_of(names::out_weight(prefix)), t.index_of(names::out_bias(prefix))};
  if (learned) p.scale = t.index_of(names::scale(prefix));
  return p;
}

FfnParams ffn_params(const ParamTable& t, const std::string& prefix) {
  return {t.index_of(names::fc1_weight(prefix)), t.index_of(names::fc1_bias(prefix)),
          t.index_of(names::fc2_weight(prefix)), t.index_of(names::fc2_bias(prefix))};
}

// Moves a (G,t,W) block layout to (G,t+n,W) in place and writes the n new rows of each group g
// after its t old ones. The last group moves first, so that no group is overwritten before it
// has moved.
template <typename T>
void append_rows(std::vector<T>& buffer, const T* fresh, int64_t groups, int64_t t, int64_t n,
                 int64_t width) {
  T* data = buffer.data();
  for (int64_t g = groups - 1; g >= 0; --g) {
    if (g > 0) {
      std::copy_backward(data + g * t * width, data + (g + 1) * t * width,
                         data + g * (t + n) * width + t * width);
    }
    std::copy_n(fresh + g * n * width, n * width, data + (g * (t + n) + t) * width);
  }
}

}  // namespace

LayerParams layer_params(const ParamTable& table, const ModelConfig& config, bool decoder,
                         int64_t index) {
  const bool learned = config.attention_scale.learned();
  LayerParams layer;
  layer.push_back({SublayerKind::kSelfAttention,
                   norm_params(table, names::self_attention_norm(decoder, index)),
                   attention_params(table, names::self_attention(decoder, index), learned),
                   {}});
  if (decoder) {
    layer.push_back({SublayerKind::kCrossAttention,
                     norm_params(table, names::cross_attention_norm(index)),
                     attention_params(table, names::cross_attention(index), learned),
                     {}});
  }
  layer.push_back({SublayerKind::kFeedForward,
                   norm_params(table, names::final_norm(decoder, index)),
                   {},
                   ffn_params(table, names::layer(decoder, index))});
  // Pre-LN leaves the residual stream unnormalised: the stack ends with a norm of its own.
  const int64_t layers = decoder ? config.decoder_layers : config.encoder_layers;
  if (config.norm == NormPlacement::kPre && index + 1 == layers) {
    layer.push_back(
        {SublayerKind::kStackNorm, norm_params(table, names::stack_norm(decoder)), {}, {}});
  }
  return layer;
}

template <typename T>
KvCache<T>::KvCache(int64_t batch, int64_t heads, int64_t key_width, int64_t value_width,
                    int64_t capacity)
    : keys(kv_buffers::take<T>(batch * heads * capacity * key_width)),
      values(kv_buffers::take<T>(batch * heads * capacity * value_width)),
      batch(batch),
      heads(heads),
      key_width(key_width),
      value_width(value_width),
      capacity(capacity) {}

template <typename T>
KvCache<T>::~KvCache() {
  kv_buffers::give_back(std::move(keys));
  kv_buffers::give_back(std::move(values));
}

template <typename T>
void KvCache<T>::append(TensorView<const T> new_keys, TensorView<const T> new_values) {
  const int64_t n = new_keys.dim(2);
  CHECK(new_keys.dim(0) == batch && new_keys.dim(1) == heads && new_keys.dim(3) == key_width &&
        new_values.dim(0) == batch && new_values.dim(1) == heads && new_values.dim(2) == n &&
        new_values.dim(3) == value_width)
      << "cannot append keys " << new_keys.shape().str() << " and values "
      << new_values.shape().str() << " to a cache of " << batch << " sentences and " << heads
      << " heads";
  CHECK(length + n <= capacity) << "KV cache of " << capacity << " positions cannot hold "
                                << length + n;
  append_rows(keys, new_keys.data(), batch * heads, length, n, key_width);
  append_rows(values, new_values.data(), batch * heads, length, n, value_width);
  length += n;
}

template <typename T>
void KvCache<T>::reorder(const std::vector<int64_t>& rows, std::vector<T>& spare) {
  const int64_t new_batch = static_cast<int64_t>(rows.size());
  for (const int64_t row : rows) {
    CHECK(row >= 0 && row < batch) << "reorder row " << row << " outside [0, " << batch << ")";
  }
  // Each kept sentence's part of the (B,H,length,W) tensor, into room for `capacity` positions.
  // The spare only grows: a buffer larger than the batch needs is never read past its end.
  auto gather = [&](std::vector<T>& buffer, int64_t width) {
    const int64_t per_sentence = heads * length * width;
    const auto needed = static_cast<size_t>(new_batch * heads * capacity * width);
    if (spare.size() < needed) spare.resize(needed);
    for (int64_t i = 0; i < new_batch; ++i) {
      std::copy_n(buffer.begin() + rows[static_cast<size_t>(i)] * per_sentence, per_sentence,
                  spare.begin() + i * per_sentence);
    }
    buffer.swap(spare);
  };
  gather(keys, key_width);
  gather(values, value_width);
  batch = new_batch;
}

template struct KvCache<float>;
template struct KvCache<double>;

}  // namespace attnlab
