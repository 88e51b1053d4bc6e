// Length-bucketed batching and the per-rank split of a global batch.
#include "core/data/batcher.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/util/check.h"
#include "core/util/rng.h"

namespace attnlab {
namespace {

// Stream purposes for rng_key: tie-breaking inside the length sort, and the batch order.
constexpr uint64_t kTieBreakPurpose = 0xB0C4E7;
constexpr uint64_t kBatchOrderPurpose = 0xBA7C40;

int64_t src_positions(const SequencePair& pair) {
  return static_cast<int64_t>(pair.src.size()) + 1;
}
int64_t tgt_positions(const SequencePair& pair) {
  return static_cast<int64_t>(pair.tgt.size()) + 1;
}

void shuffle(std::vector<int64_t>& values, uint64_t key) {
  Rng rng(key);
  for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[rng.below(i)]);
}

}  // namespace

TokenBatcher::TokenBatcher(std::vector<SequencePair> pairs, const BatcherOptions& options)
    : options_(options) {
  CHECK(options.max_length >= 2) << "data.max_length must be >= 2 (one token plus eos), got "
                                 << options.max_length;
  CHECK(options.batch_tokens >= 2 * options.max_length)
      << "train.batch_tokens (" << options.batch_tokens
      << ") must hold one pair of data.max_length (" << options.max_length << ") on each side";
  for (SequencePair& pair : pairs) {
    if (src_positions(pair) > options.max_length || tgt_positions(pair) > options.max_length) {
      ++skipped_;
    } else {
      pairs_.push_back(std::move(pair));
    }
  }
  CHECK(!pairs_.empty()) << "no sentence pair fits data.max_length " << options.max_length << " ("
                         << skipped_ << " skipped)";
  plan_epoch(0);
}

void TokenBatcher::plan_epoch(int64_t epoch) {
  if (epoch == planned_epoch_) return;
  buckets_ = make_plan(epoch);
  planned_epoch_ = epoch;
}

std::vector<std::vector<int64_t>> TokenBatcher::make_plan(int64_t epoch) const {
  std::vector<int64_t> order(pairs_.size());
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, rng_key(options_.seed, kTieBreakPurpose, static_cast<uint64_t>(epoch)));
  // Sort by the longer side, then the shorter: neighbours pad little on either side.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const SequencePair& x = pairs_[static_cast<size_t>(a)];
    const SequencePair& y = pairs_[static_cast<size_t>(b)];
    const int64_t x_long = std::max(src_positions(x), tgt_positions(x));
    const int64_t y_long = std::max(src_positions(y), tgt_positions(y));
    if (x_long != y_long) return x_long < y_long;
    return src_positions(x) + tgt_positions(x) < src_positions(y) + tgt_positions(y);
  });
  // Cut greedily: a batch grows while rows * (longest source + longest target) stays in budget.
  std::vector<std::vector<int64_t>> buckets;
  std::vector<int64_t> current;
  int64_t longest_src = 0, longest_tgt = 0;
  for (int64_t index : order) {
    const SequencePair& pair = pairs_[static_cast<size_t>(index)];
    const int64_t src = std::max(longest_src, src_positions(pair));
    const int64_t tgt = std::max(longest_tgt, tgt_positions(pair));
    if (!current.empty() &&
        static_cast<int64_t>(current.size() + 1) * (src + tgt) > options_.batch_tokens) {
      buckets.push_back(std::move(current));
      current.clear();
      longest_src = src_positions(pair);
      longest_tgt = tgt_positions(pair);
    } else {
      longest_src = src;
      longest_tgt = tgt;
    }
    current.push_back(index);
  }
  if (!current.empty()) buckets.push_back(std::move(current));
  std::vector<int64_t> batch_order(buckets.size());
  std::iota(batch_order.begin(), batch_order.end(), 0);
  shuffle(batch_order, rng_key(options_.seed, kBatchOrderPurpose, static_cast<uint64_t>(epoch)));
  std::vector<std::vector<int64_t>> ordered;
  ordered.reserve(buckets.size());
  for (int64_t b : batch_order) ordered.push_back(std::move(buckets[static_cast<size_t>(b)]));
  return ordered;
}

std::vector<int64_t> TokenBatcher::batch_indices(int64_t epoch, int64_t batch) const {
  CHECK(epoch >= 0) << "epoch must be >= 0, got " << epoch;
  const std::vector<std::vector<int64_t>> other =
      epoch == planned_epoch_ ? std::vector<std::vector<int64_t>>{} : make_plan(epoch);
  const auto& plan = epoch == planned_epoch_ ? buckets_ : other;
  CHECK(batch >= 0 && batch < static_cast<int64_t>(plan.size()))
      << "batch " << batch << " out of range: epoch " << epoch << " has " << plan.size()
      << " batches";
  return plan[static_cast<size_t>(batch)];
}

Batch TokenBatcher::next() {
  plan_epoch(position_.epoch);
  if (position_.batch >= batches_per_epoch()) {
    position_ = {position_.epoch + 1, 0};
    plan_epoch(position_.epoch);
  }
  const std::vector<int64_t>& indices = buckets_[static_cast<size_t>(position_.batch)];
  ++position_.batch;
  return make_batch(pairs_, indices, options_.pad_id, options_.bos_id, options_.eos_id);
}

void TokenBatcher::seek(const BatchPosition& position) {
  CHECK(position.epoch >= 0 && position.batch >= 0)
      << "data position (epoch " << position.epoch << ", batch " << position.batch
      << ") must not be negative";
  plan_epoch(position.epoch);
  CHECK(position.batch <= batches_per_epoch())
      << "data position (epoch " << position.epoch << ", batch " << position.batch
      << ") is past the end of the epoch (" << batches_per_epoch()
      << " batches): was the checkpoint made with other data or batch_tokens?";
  position_ = position;
}

Batch split_for_rank(const Batch& global, int rank, int world, int32_t pad_id) {
  CHECK(world >= 1 && rank >= 0 && rank < world)
      << "rank " << rank << " is outside a world of " << world;
  const int64_t size = global.size, src_length = global.src_length, tgt_length = global.tgt_length;
  CHECK(static_cast<int64_t>(global.src.size()) == size * src_length &&
        static_cast<int64_t>(global.tgt_in.size()) == size * tgt_length &&
        static_cast<int64_t>(global.tgt_out.size()) == size * tgt_length)
      << "batch buffers do not match its shape (B " << size << ", S " << src_length << ", T "
      << tgt_length << ")";
  auto row_tokens = [pad_id](const std::vector<int32_t>& data, int64_t row, int64_t length) {
    int64_t count = 0;
    for (int64_t t = 0; t < length; ++t)
      count += data[static_cast<size_t>(row * length + t)] != pad_id;
    return count;
  };
  std::vector<int64_t> tgt_tokens(static_cast<size_t>(size));
  std::vector<int64_t> cumulative(static_cast<size_t>(size) + 1, 0);  // tokens in rows [0, i)
  for (int64_t row = 0; row < size; ++row) {
    tgt_tokens[static_cast<size_t>(row)] = row_tokens(global.tgt_out, row, tgt_length);
    cumulative[static_cast<size_t>(row) + 1] =
        cumulative[static_cast<size_t>(row)] + tgt_tokens[static_cast<size_t>(row)];
  }
  // Boundary r (0 < r < world) sits where the running target count is nearest r * total / world,
  // kept inside [previous + 1, size - (world - r)] so that each rank keeps a sentence. With
  // fewer sentences than ranks, rank r < size takes sentence r.
  std::vector<int64_t> boundary(static_cast<size_t>(world) + 1, size);
  boundary[0] = 0;
  const double total = static_cast<double>(cumulative.back());
  for (int r = 1; r < world; ++r) {
    if (size < world) {
      boundary[static_cast<size_t>(r)] = std::min<int64_t>(r, size);
      continue;
    }
    const double goal = total * r / world;
    const int64_t low = boundary[static_cast<size_t>(r) - 1] + 1;
    const int64_t high = size - (world - r);
    int64_t best = low;
    for (int64_t i = low; i <= high; ++i) {
      if (std::abs(static_cast<double>(cumulative[static_cast<size_t>(i)]) - goal) <
          std::abs(static_cast<double>(cumulative[static_cast<size_t>(best)]) - goal)) {
        best = i;
      }
    }
    boundary[static_cast<size_t>(r)] = best;
  }
  const int64_t first = boundary[static_cast<size_t>(rank)];
  const int64_t last = boundary[static_cast<size_t>(rank) + 1];

  Batch share;
  share.size = last - first;
  for (int64_t row = first; row < last; ++row) {
    share.src_length = std::max(share.src_length, row_tokens(global.src, row, src_length));
    share.tgt_length = std::max(share.tgt_length, tgt_tokens[static_cast<size_t>(row)]);
  }
  share.src.assign(static_cast<size_t>(share.size * share.src_length), pad_id);
  share.tgt_in.assign(static_cast<size_t>(share.size * share.tgt_length), pad_id);
  share.tgt_out.assign(static_cast<size_t>(share.size * share.tgt_length), pad_id);
  for (int64_t row = first; row < last; ++row) {
    const int64_t out = row - first;
    // Padding trails the tokens, so the first positions of each row are all that is kept.
    std::copy_n(global.src.begin() + row * src_length, share.src_length,
                share.src.begin() + out * share.src_length);
    std::copy_n(global.tgt_in.begin() + row * tgt_length, share.tgt_length,
                share.tgt_in.begin() + out * share.tgt_length);
    std::copy_n(global.tgt_out.begin() + row * tgt_length, share.tgt_length,
                share.tgt_out.begin() + out * share.tgt_length);
    share.src_tokens += row_tokens(global.src, row, src_length);
    share.tgt_tokens += tgt_tokens[static_cast<size_t>(row)];
  }
  return share;
}

}  // namespace attnlab
