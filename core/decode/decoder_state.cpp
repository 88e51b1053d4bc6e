// Incremental decoding with a KV cache: one position per call through the model's own decoder
// layer, without recomputing the prefix (tested to equal the full decoder).
// Legend: B batch, S source length, H heads, K d_k, V d_v, P max steps.
#include "core/decode/decoder_state.h"

#include <algorithm>
#include <numeric>
#include <type_traits>

namespace attnlab {

template <typename T>
DecoderState<T>::DecoderState(Transformer<T>& model, const Batch& source, int64_t max_steps)
    : model_(model), batch_(source.size), src_length_(source.src_length), max_steps_(max_steps) {
  const ModelConfig& c = model.config();
  CHECK(max_steps >= 1 && max_steps <= c.max_positions)
      << "decoding " << max_steps << " steps exceeds model.max_positions " << c.max_positions;
  TensorView<const T> memory = model.encode(source);  // (B,S,D)
  src_padding_ = model.source_padding();
  row_sources_.resize(static_cast<size_t>(batch_));
  std::iota(row_sources_.begin(), row_sources_.end(), int64_t{0});
  const int64_t B = batch_, S = src_length_, H = c.heads, K = c.d_k, V = c.d_v;
  model.carve_step(arena_, workspace_, B, S, max_steps);
  if constexpr (std::is_same_v<T, float>) {
    for (const int index : model.step_weights()) {
      const TensorView<const float> weight = model.param(index);
      packed_weights_.add(weight.data(), weight.dim(0), weight.dim(1));
    }
  }
  caches_.resize(model.decoder_layers().size());
  for (size_t l = 0; l < caches_.size(); ++l) {
    caches_[l].self = KvCache<T>(B, H, K, V, max_steps);
    caches_[l].cross = KvCache<T>(B, H, K, V, S);
    model.fill_cross_cache(static_cast<int64_t>(l), memory, caches_[l]);
  }
}

template <typename T>
TensorView<const T> DecoderState<T>::step(const std::vector<int32_t>& tokens) {
  CHECK(static_cast<int64_t>(tokens.size()) == batch_)
      << "decoder step needs " << batch_ << " tokens, got " << tokens.size();
  CHECK(position_ < max_steps_) << "decoder state is full after " << max_steps_ << " steps";
  // Sources hide their padding.
  const ops::AttentionMask cross_mask{src_padding_.data(), false, 0};
  // Every product of a step has one row per sentence: oneDNN's fp32 engine, and the weights
  // packed for it (blas.h says why).
  const blas::Fp32EngineScope engine(blas::Fp32Engine::kOneDnn);
  const blas::PackedWeightsScope packed(packed_weights_);
  model_.embed_step(workspace_, tokens.data(), position_);
  for (size_t l = 0; l < caches_.size(); ++l) {
    model_.layer_step(workspace_, static_cast<int64_t>(l), caches_[l], cross_mask);
  }
  model_.output_step(workspace_);
  ++position_;
  return workspace_.logits;
}

template <typename T>
void DecoderState<T>::reorder(const std::vector<int64_t>& rows) {
  const int64_t S = src_length_;
  const int64_t new_batch = static_cast<int64_t>(rows.size());
  std::vector<int64_t> sources(rows.size());
  bool identity = new_batch == batch_;
  for (int64_t i = 0; i < new_batch; ++i) {
    const int64_t row = rows[static_cast<size_t>(i)];
    CHECK(row >= 0 && row < batch_) << "reorder row " << row << " outside [0, " << batch_ << ")";
    sources[static_cast<size_t>(i)] = row_sources_[static_cast<size_t>(row)];
    identity = identity && row == i;
  }
  if (identity) return;
  for (LayerCache<T>& cache : caches_) cache.self.reorder(rows, reorder_spare_);
  // Rows of one source sentence share its cross-attention keys and values and its padding, so
  // these move only when the rows' sentences change (a sentence leaves the batch), not when a
  // beam search swaps the beams of each sentence (every step of it).
  if (sources != row_sources_) {
    for (LayerCache<T>& cache : caches_) cache.cross.reorder(rows, reorder_spare_);
    std::vector<uint8_t> padding(static_cast<size_t>(new_batch * S));
    for (int64_t i = 0; i < new_batch; ++i) {
      const int64_t row = rows[static_cast<size_t>(i)];
      std::copy(src_padding_.begin() + row * S, src_padding_.begin() + (row + 1) * S,
                padding.begin() + i * S);
    }
    src_padding_.swap(padding);
    row_sources_.swap(sources);
  }
  if (new_batch != batch_) model_.carve_step(arena_, workspace_, new_batch, S, max_steps_);
  batch_ = new_batch;
}

template class DecoderState<float>;
template class DecoderState<double>;

}  // namespace attnlab
