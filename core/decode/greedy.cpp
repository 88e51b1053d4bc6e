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
  // At most max_length tokens per sentence (fewer when max_positions is shorter); the step after
  // the last token can only end the sentence.
  const int64_t longest = steps - 1 < max_length ? steps : max_length;
  for (int64_t t = 0; t < steps && unfinished > 0; ++t) {
    TensorView<const T> logits = state.step(tokens);
    for (int64_t b = 0; b < source.size; ++b) {
      const T* row = logits.data() + b * c.vocab_size;
      // The most likely token; pad and bos are never generated.
      int32_t best = -1;
      T best_logit = T(0);
      for (int64_t j = 0; j < c.vocab_size; ++j) {
        if (j == c.pad_id || j == c.bos_id) continue;
        if (best < 0 || row[j] > best_logit) {
          best = static_cast<int32_t>(j);
          best_logit = row[j];
        }
      }
      tokens[static_cast<size_t>(b)] = best;
      std::vector<int32_t>& output = outputs[static_cast<size_t>(b)];
      if (finished[static_cast<size_t>(b)]) continue;
      if (best != c.eos_id) output.push_back(best);
      if (best == c.eos_id || static_cast<int64_t>(output.size()) == longest) {
        finished[static_cast<size_t>(b)] = true;
        --unfinished;
      }
    }
  }
  return outputs;
}

template std::vector<std::vector<int32_t>> greedy_decode<float>(Transformer<float>&, const Batch&,
                                                                int64_t);
template std::vector<std::vector<int32_t>> greedy_decode<double>(Transformer<double>&, const Batch&,
                                                                 int64_t);

}  // namespace attnlab
