// DecoderState: incremental decoding with a KV cache. Each step runs the model's decoder layer
// (Transformer::layer_step, the layer training runs) on one position per sentence; self-attention
// keys and values of past positions are kept per layer, cross-attention's are computed once per
// source.
// Legend: B batch, S source length, N vocabulary, P max steps.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/transformer.h"
#include "core/tensor/blas.h"

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
  Transformer<T>& model_;
  int64_t batch_, src_length_, max_steps_, position_ = 0;
  std::vector<uint8_t> src_padding_;   // (B,S)
  std::vector<int64_t> row_sources_;   // (B): the sentence of the source batch each row decodes
  std::vector<LayerCache<T>> caches_;  // per decoder layer
  std::vector<T> reorder_spare_;       // the buffer KvCache::reorder gathers into, kept
  // The weights a step multiplies by (Transformer::step_weights), packed once per state for the
  // few-row products of every step (float only; blas.h says why).
  blas::PackedWeights packed_weights_;
  Arena<T> arena_;
  StepWorkspace<T> workspace_;  // carved from arena_ for batch_ sentences
};

}  // namespace attnlab
