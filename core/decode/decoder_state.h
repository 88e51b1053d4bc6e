// DecoderState: incremental decoding with a KV cache. Self-attention keys/values of past positions
// are kept per layer; cross-attention keys/values are computed once per source.
// Legend: B batch, S source length, H heads, K d_k, V d_v, D d_model, N vocabulary, P max steps.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/transformer.h"

namespace attnlab {

template <typename T>
class DecoderState {
 public:
  // Encodes batch.src and prepares caches for up to max_steps target positions.
  DecoderState(Transformer<T>& model, const Batch& source, int64_t max_steps);

  // Feeds one token per sentence at the next position; returns logits (B,N), valid until the
  // next call.
  TensorView<const T> step(const std::vector<int32_t>& tokens);
  int64_t position() const { return position_; }
  int64_t batch_size() const { return batch_; }
  int64_t source_length() const { return src_length_; }
  // Keeps only the sentences (beams) at `rows`, in that order (rows may repeat): for beam search.
  void reorder(const std::vector<int64_t>& rows);

 private:
  // out (B,D) = the output projection of attention from the projected queries q_ (B,H*K) over
  // keys (B,H,L,K) and values (B,H,L,V) under `mask`.
  void attend_and_project(const AttentionParams& p, TensorView<const T> keys,
                          TensorView<const T> values, const ops::AttentionMask& mask,
                          TensorView<T> out);

  Transformer<T>& model_;
  int64_t batch_, src_length_, max_steps_, position_ = 0;
  std::vector<uint8_t> src_padding_;  // (B,S)
  // Per layer, the keys and values of the positions so far, (B,H,t,K) and (B,H,t,V), in buffers
  // with room for P positions.
  std::vector<std::vector<T>> self_k_, self_v_;
  std::vector<std::vector<T>> cross_k_, cross_v_;  // per layer (B,H,S,K) and (B,H,S,V)
  std::vector<T> x_, normed_, q_, k_, v_, attended_, sub_, hidden_, logits_, mean_, rstd_;
  std::vector<T> probs_;  // (B,H,1,max(P,S)): one query's attention probabilities per head
};

}  // namespace attnlab
