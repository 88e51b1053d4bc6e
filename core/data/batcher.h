// Length-bucketed token batcher: sentence pairs of similar length grouped into global batches of
// at most batch_tokens padded source + target tokens, in an order that is a pure function of
// (seed, epoch), so any position can be restored; and the split of a global batch across ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "core/data/batch.h"
#include "core/data/synthetic.h"

namespace attnlab {

struct BatcherOptions {
  int64_t batch_tokens = 4096;  // budget of one global batch: B * (S + T), padding included
  int64_t max_length = 256;     // longest kept side, eos/bos included (S, T <= max_length)
  uint64_t seed = 1;            // the run's seed: shuffles batches differently per epoch
  int32_t pad_id = 0;
  int32_t bos_id = 1;
  int32_t eos_id = 2;
};

// Where the batcher stands: the next batch is batch `batch` of epoch `epoch`. Saved in
// checkpoints; restoring it reproduces the remaining batches exactly.
struct BatchPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
};

class TokenBatcher {
 public:
  // Keeps the pairs whose sides fit max_length (the rest are counted in skipped()).
  // Error if none is left or batch_tokens cannot hold one pair of max_length.
  TokenBatcher(std::vector<SequencePair> pairs, const BatcherOptions& options);

  // The next global batch; after the last batch of an epoch comes the first of the next.
  Batch next();
  // Sentence indices (into pairs()) of batch `batch` of epoch `epoch`, in row order.
  std::vector<int64_t> batch_indices(int64_t epoch, int64_t batch) const;

  BatchPosition position() const { return position_; }
  void seek(const BatchPosition& position);

  // Batches in the current position's epoch (epochs differ by at most a few batches).
  int64_t batches_per_epoch() const { return static_cast<int64_t>(buckets_.size()); }
  int64_t skipped() const { return skipped_; }
  const std::vector<SequencePair>& pairs() const { return pairs_; }

 private:
  // The epoch's batches: pairs sorted by length (ties broken by an epoch-seeded shuffle), cut
  // into batches under the token budget, then the batch order shuffled with the same seed.
  std::vector<std::vector<int64_t>> make_plan(int64_t epoch) const;
  void plan_epoch(int64_t epoch);  // caches make_plan(epoch) in buckets_

  std::vector<SequencePair> pairs_;
  BatcherOptions options_;
  int64_t skipped_ = 0;
  BatchPosition position_;
  int64_t planned_epoch_ = -1;
  std::vector<std::vector<int64_t>> buckets_;  // planned_epoch_'s batches, in serving order
};

// Rank `rank`'s share of a global batch: a contiguous run of its sentences chosen so that the
// ranks' target-token counts are as equal as the sentence boundaries allow; every rank gets at
// least one sentence when global.size >= world (otherwise ranks >= size get an empty batch).
// Each share is trimmed to its own longest source and target.
Batch split_for_rank(const Batch& global, int rank, int world, int32_t pad_id = 0);

}  // namespace attnlab
