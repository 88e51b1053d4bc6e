// Synthetic copy / reverse / sort tasks and their batching.
#include "core/data/synthetic.h"

#include <algorithm>
#include <set>

#include "core/util/check.h"
#include "core/util/rng.h"

namespace attnlab {
namespace {

SequencePair make_example(SyntheticTask task, Rng& rng, int64_t symbols, int64_t min_length,
                          int64_t max_length) {
  const int64_t length =
      min_length +
      static_cast<int64_t>(rng.below(static_cast<uint64_t>(max_length - min_length + 1)));
  SequencePair pair;
  for (int64_t i = 0; i < length; ++i) {
    pair.src.push_back(kFirstSymbol +
                       static_cast<int32_t>(rng.below(static_cast<uint64_t>(symbols))));
  }
  pair.tgt = pair.src;
  if (task == SyntheticTask::kReverse) std::reverse(pair.tgt.begin(), pair.tgt.end());
  if (task == SyntheticTask::kSort) std::sort(pair.tgt.begin(), pair.tgt.end());
  return pair;
}

}  // namespace

SyntheticSplit make_synthetic_split(SyntheticTask task, int64_t symbols, int64_t min_length,
                                    int64_t max_length, int64_t train_size, int64_t dev_size,
                                    uint64_t seed) {
  CHECK(symbols >= 1) << "data.synthetic.symbols must be >= 1, got " << symbols;
  CHECK(min_length >= 1 && max_length >= min_length)
      << "data.synthetic lengths must satisfy 1 <= min_length <= max_length, got " << min_length
      << " and " << max_length;
  SyntheticSplit split;
  Rng train_rng(rng_key(seed, 0xDA7A, 1));
  std::set<std::vector<int32_t>> seen;
  for (int64_t i = 0; i < train_size; ++i) {
    split.train.push_back(make_example(task, train_rng, symbols, min_length, max_length));
    seen.insert(split.train.back().src);
  }
  Rng dev_rng(rng_key(seed, 0xDA7A, 2));
  // Held out means unseen: skip any source that also occurs in train (bounded attempts).
  for (int64_t attempts = 0; static_cast<int64_t>(split.dev.size()) < dev_size; ++attempts) {
    CHECK(attempts < 100 * (dev_size + 1))
        << "cannot draw " << dev_size << " held-out sequences: the task space is too small";
    SequencePair pair = make_example(task, dev_rng, symbols, min_length, max_length);
    if (seen.count(pair.src) == 0) split.dev.push_back(std::move(pair));
  }
  return split;
}

Batch make_batch(const std::vector<SequencePair>& pairs, const std::vector<int64_t>& indices,
                 int32_t pad_id, int32_t bos_id, int32_t eos_id) {
  Batch batch;
  batch.size = static_cast<int64_t>(indices.size());
  for (int64_t index : indices) {
    const SequencePair& p = pairs[static_cast<size_t>(index)];
    batch.src_length = std::max<int64_t>(batch.src_length, static_cast<int64_t>(p.src.size()) + 1);
    batch.tgt_length = std::max<int64_t>(batch.tgt_length, static_cast<int64_t>(p.tgt.size()) + 1);
  }
  batch.src.assign(static_cast<size_t>(batch.size * batch.src_length), pad_id);
  batch.tgt_in.assign(static_cast<size_t>(batch.size * batch.tgt_length), pad_id);
  batch.tgt_out.assign(static_cast<size_t>(batch.size * batch.tgt_length), pad_id);
  for (int64_t b = 0; b < batch.size; ++b) {
    const SequencePair& p = pairs[static_cast<size_t>(indices[static_cast<size_t>(b)])];
    int32_t* src = batch.src.data() + b * batch.src_length;
    std::copy(p.src.begin(), p.src.end(), src);
    src[p.src.size()] = eos_id;
    int32_t* tgt_in = batch.tgt_in.data() + b * batch.tgt_length;
    int32_t* tgt_out = batch.tgt_out.data() + b * batch.tgt_length;
    tgt_in[0] = bos_id;
    std::copy(p.tgt.begin(), p.tgt.end(), tgt_in + 1);
    std::copy(p.tgt.begin(), p.tgt.end(), tgt_out);
    tgt_out[p.tgt.size()] = eos_id;
    batch.src_tokens += static_cast<int64_t>(p.src.size()) + 1;
    batch.tgt_tokens += static_cast<int64_t>(p.tgt.size()) + 1;
  }
  return batch;
}

SequenceBatcher::SequenceBatcher(const std::vector<SequencePair>* pairs, int64_t batch_tokens,
                                 uint64_t seed)
    : pairs_(pairs), batch_tokens_(batch_tokens), seed_(seed) {
  CHECK(!pairs->empty()) << "cannot batch an empty data set";
  CHECK(batch_tokens >= 1) << "train.batch_tokens must be >= 1, got " << batch_tokens;
  shuffle_epoch();
}

void SequenceBatcher::shuffle_epoch() {
  order_.resize(pairs_->size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
  Rng rng(rng_key(seed_, 0x5EED, static_cast<uint64_t>(epoch_)));
  for (size_t i = order_.size(); i > 1; --i) {  // Fisher-Yates
    std::swap(order_[i - 1], order_[rng.below(i)]);
  }
}

std::vector<int64_t> SequenceBatcher::next() {
  std::vector<int64_t> indices;
  int64_t tokens = 0;
  while (tokens < batch_tokens_) {
    if (offset_ == static_cast<int64_t>(order_.size())) {
      if (!indices.empty()) break;  // a batch never spans two epochs
      ++epoch_;
      offset_ = 0;
      shuffle_epoch();
    }
    const int64_t index = order_[static_cast<size_t>(offset_++)];
    const SequencePair& p = (*pairs_)[static_cast<size_t>(index)];
    tokens += static_cast<int64_t>(p.src.size() + p.tgt.size()) + 2;
    indices.push_back(index);
  }
  return indices;
}

void SequenceBatcher::seek(int64_t epoch, int64_t offset) {
  CHECK(epoch >= 0 && offset >= 0 && offset <= static_cast<int64_t>(pairs_->size()))
      << "data position (epoch " << epoch << ", offset " << offset << ") is out of range";
  epoch_ = epoch;
  shuffle_epoch();
  offset_ = offset;
}

}  // namespace attnlab
