// Greedy decoding.
#include "core/decode/greedy.h"

#include "core/decode/decoder_state.h"

namespace attnlab {

template <typename T>
std::vector<std::vector<int32_t>> greedy_decode(Transformer<T>& model, const Batch& source,
                                                int64_t max_length) {
  const ModelConfig& c = model.config();
  const int64_t steps = std::min<int64_t>(max_length + 1, c.max_positions);
  DecoderState<T> state(model, source, steps);
  std::vector<std::vector<int32_t>> outputs(static_cast<size_t>(source.size));
  std::vector<int32_t> tokens(static_cast<size_t>(source.size), c.bos_id);
  std::vector<bool> finished(static_cast<size_t>(source.size), false);
  int64_t unfinished = source.size;
  for (int64_t t = 0; t < steps && unfinished > 0; ++t) {
    TensorView<const T> logits = state.step(tokens);
    for (int64_t b = 0; b < source.size; ++b) {
      const T* row = logits.data() + b * c.vocab_size;
      int32_t best = 0;
      for (int64_t j = 1; j < c.vocab_size; ++j) {
        if (row[j] > row[best]) best = static_cast<int32_t>(j);
      }
      tokens[static_cast<size_t>(b)] = best;
      if (finished[static_cast<size_t>(b)]) continue;
      if (best == c.eos_id || t + 1 == steps) {
        finished[static_cast<size_t>(b)] = true;
        --unfinished;
        if (best == c.eos_id) continue;
      }
      outputs[static_cast<size_t>(b)].push_back(best);
    }
  }
  return outputs;
}

template std::vector<std::vector<int32_t>> greedy_decode<float>(Transformer<float>&, const Batch&,
                                                                int64_t);
template std::vector<std::vector<int32_t>> greedy_decode<double>(Transformer<double>&, const Batch&,
                                                                 int64_t);

}  // namespace attnlab
