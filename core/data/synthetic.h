// Synthetic sequence tasks (copy, reverse, sort) over a small symbol vocabulary, with a seeded
// train/dev split, and the padding that turns token sequences into a Batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/data/batch.h"

namespace attnlab {

// Token ids: 0 pad, 1 bos, 2 eos, symbols start at 3.
inline constexpr int32_t kFirstSymbol = 3;

struct SequencePair {
  std::vector<int32_t> src;  // without eos
  std::vector<int32_t> tgt;  // without bos/eos
};

enum class SyntheticTask { kCopy, kReverse, kSort };

struct SyntheticSplit {
  std::vector<SequencePair> train, dev;
};

// Deterministic in `seed`; no dev source sequence also occurs in train.
SyntheticSplit make_synthetic_split(SyntheticTask task, int64_t symbols, int64_t min_length,
                                    int64_t max_length, int64_t train_size, int64_t dev_size,
                                    uint64_t seed);

// Pads pairs[indices] into a Batch: src = x eos, tgt_in = bos y, tgt_out = y eos.
Batch make_batch(const std::vector<SequencePair>& pairs, const std::vector<int64_t>& indices,
                 int32_t pad_id, int32_t bos_id, int32_t eos_id);

// Walks a shuffled epoch order in groups of about batch_tokens (source + target tokens).
// The position (epoch, offset) fully determines what comes next, so resume is exact.
class SequenceBatcher {
 public:
  SequenceBatcher(const std::vector<SequencePair>* pairs, int64_t batch_tokens, uint64_t seed);
  // Indices of the next global batch.
  std::vector<int64_t> next();
  int64_t epoch() const { return epoch_; }
  int64_t offset() const { return offset_; }
  void seek(int64_t epoch, int64_t offset);

 private:
  void shuffle_epoch();
  const std::vector<SequencePair>* pairs_;
  int64_t batch_tokens_;
  uint64_t seed_;
  int64_t epoch_ = 0, offset_ = 0;
  std::vector<int64_t> order_;
};

}  // namespace attnlab
