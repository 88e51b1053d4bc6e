// Greedy decoding.
#include "core/decode/greedy.h"

#include <algorithm>
#include <numeric>

#include "core/decode/decoder_state.h"

namespace attnlab {
namespace {

// Logits are scanned in blocks of this many: the block maxima vectorise, and only the block that
// holds the maximum is searched for its first position.
constexpr int64_t kArgmaxBlock = 256;

// The first j of the row with the largest value, ignoring j = pad and j = bos (the same choice
// as a sequential scan with a strict `>`).
template <typename T>
int32_t most_likely_token(const T* row, int64_t vocab, int32_t pad, int32_t bos) {
  auto excluded = [&](int64_t j) { return j == pad || j == bos; };
  // Pass 1: the largest value and the first block that holds it (block maxima in SIMD lanes).
  T best_value = row[0];
  int64_t best_block = 0;
  for (int64_t start = 0; start < vocab; start += kArgmaxBlock) {
    const int64_t end = std::min(start + kArgmaxBlock, vocab);
    T block_max = row[start];
#pragma omp simd reduction(max : block_max)
    for (int64_t j = start; j < end; ++j) block_max = row[j] > block_max ? row[j] : block_max;
    if (block_max > best_value) {
      best_value = block_max;
      best_block = start;
    }
  }
  // Pass 2: its first position in that block, unless the maximum sits on pad or bos only.
  const int64_t end = std::min(best_block + kArgmaxBlock, vocab);
  for (int64_t j = best_block; j < end; ++j) {
    if (row[j] == best_value && !excluded(j)) return static_cast<int32_t>(j);
  }
  // The rare case (pad or bos holds the maximum, or the row has NaNs): a plain scan.
  int32_t best = -1;
  T best_logit = T(0);
  for (int64_t j = 0; j < vocab; ++j) {
    if (excluded(j)) continue;
    if (best < 0 || row[j] > best_logit) {
      best = static_cast<int32_t>(j);
      best_logit = row[j];
    }
  }
  return best;
}

}  // namespace

template <typename T>
std::vector<std::vector<int32_t>> greedy_decode(Transformer<T>& model, const Batch& source,
                                                int64_t max_length) {
  const ModelConfig& c = model.config();
  const int64_t steps = std::min<int64_t>(max_length + 1, c.max_positions);
  DecoderState<T> state(model, source, steps);
  std::vector<std::vector<int32_t>> outputs(static_cast<size_t>(source.size));
  // At most max_length tokens per sentence (fewer when max_positions is shorter); the step after
  // the last token can only end the sentence.
  const int64_t longest = steps - 1 < max_length ? steps : max_length;
  // State row i decodes sentence sentence_of[i]. Sentences that have ended leave the state once
  // they are at least an eighth of its rows (their cache rows are dropped by one reorder): the
  // steps after cost only the sentences still decoding, and a batch whose sentences end one by
  // one is compacted a few times rather than at every step.
  std::vector<int64_t> sentence_of(static_cast<size_t>(source.size));
  std::iota(sentence_of.begin(), sentence_of.end(), 0);
  std::vector<int32_t> tokens(static_cast<size_t>(source.size), c.bos_id);
  std::vector<bool> ended(static_cast<size_t>(source.size), false);
  int64_t ended_rows = 0;
  for (int64_t t = 0; t < steps && ended_rows < state.batch_size(); ++t) {
    TensorView<const T> logits = state.step(tokens);
    for (int64_t i = 0; i < state.batch_size(); ++i) {
      if (ended[static_cast<size_t>(i)]) continue;
      // The most likely token; pad and bos are never generated.
      const int32_t best =
          most_likely_token(logits.data() + i * c.vocab_size, c.vocab_size, c.pad_id, c.bos_id);
      tokens[static_cast<size_t>(i)] = best;
      std::vector<int32_t>& output =
          outputs[static_cast<size_t>(sentence_of[static_cast<size_t>(i)])];
      if (best != c.eos_id) output.push_back(best);
      if (best == c.eos_id || static_cast<int64_t>(output.size()) == longest) {
        ended[static_cast<size_t>(i)] = true;
        ++ended_rows;
      }
    }
    if (ended_rows == state.batch_size() || ended_rows * 8 < state.batch_size()) continue;
    std::vector<int64_t> rows;
    std::vector<int64_t> next_sentence_of;
    std::vector<int32_t> next_tokens;
    for (int64_t i = 0; i < state.batch_size(); ++i) {
      if (ended[static_cast<size_t>(i)]) continue;
      rows.push_back(i);
      next_sentence_of.push_back(sentence_of[static_cast<size_t>(i)]);
      next_tokens.push_back(tokens[static_cast<size_t>(i)]);
    }
    state.reorder(rows);
    sentence_of.swap(next_sentence_of);
    tokens.swap(next_tokens);
    ended.assign(rows.size(), false);
    ended_rows = 0;
  }
  return outputs;
}

template std::vector<std::vector<int32_t>> greedy_decode<float>(Transformer<float>&, const Batch&,
                                                                int64_t);
template std::vector<std::vector<int32_t>> greedy_decode<double>(Transformer<double>&, const Batch&,
                                                                 int64_t);

}  // namespace attnlab
