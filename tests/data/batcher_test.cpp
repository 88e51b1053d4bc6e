// Length-bucketed batcher: every pair once per epoch, the token budget, little padding,
// determinism in the seed, exact resume from a saved position, and the split across ranks.
#include "core/data/batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/data/corpus.h"
#include "core/data/tokenizer.h"
#include "core/util/check.h"
#include "core/util/rng.h"
#include "data/scratch_dir.h"

namespace attnlab {
namespace {

// Pairs with source lengths uniform in [1, max_len] and target lengths within 2 of the source
// (translations have correlated lengths); token t of a side is 3 + t.
std::vector<SequencePair> random_pairs(int64_t count, int64_t max_len, uint64_t seed) {
  Rng rng(seed);
  std::vector<SequencePair> pairs(static_cast<size_t>(count));
  for (auto& pair : pairs) {
    const int64_t src = 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(max_len)));
    const int64_t delta = static_cast<int64_t>(rng.below(5)) - 2;
    const int64_t tgt = std::clamp<int64_t>(src + delta, 1, max_len);
    for (int64_t t = 0; t < src; ++t) pair.src.push_back(static_cast<int32_t>(3 + t));
    for (int64_t t = 0; t < tgt; ++t) pair.tgt.push_back(static_cast<int32_t>(3 + t));
  }
  return pairs;
}

BatcherOptions options_with(int64_t batch_tokens, int64_t max_length, uint64_t seed) {
  BatcherOptions options;
  options.batch_tokens = batch_tokens;
  options.max_length = max_length;
  options.seed = seed;
  return options;
}

TEST(TokenBatcher, EachEpochServesEveryPairOnceWithinTheBudget) {
  TokenBatcher batcher(random_pairs(500, 40, 7), options_with(600, 64, 1));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::multiset<int64_t> seen;
    int64_t real = 0, padded = 0;
    for (int64_t b = 0; b < batcher.batches_per_epoch(); ++b) {
      const auto indices = batcher.batch_indices(epoch, b);
      seen.insert(indices.begin(), indices.end());
      const Batch batch = batcher.next();
      ASSERT_EQ(batch.size, static_cast<int64_t>(indices.size()));
      EXPECT_LE(batch.size * (batch.src_length + batch.tgt_length), 600);
      int64_t expected_tgt = 0;
      for (int64_t i : indices) expected_tgt += batcher.pairs()[i].tgt.size() + 1;
      EXPECT_EQ(batch.tgt_tokens, expected_tgt);
      real += batch.src_tokens + batch.tgt_tokens;
      padded += batch.size * (batch.src_length + batch.tgt_length);
    }
    EXPECT_EQ(seen.size(), 500u);
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 500u);
    // Sorting by length keeps padding low; random batches of these lengths waste about a third.
    EXPECT_GT(static_cast<double>(real) / padded, 0.9);
    EXPECT_EQ(batcher.position().epoch, epoch);
  }
}

TEST(TokenBatcher, BatchesAreFilledNearTheBudget) {
  TokenBatcher batcher(random_pairs(2000, 30, 3), options_with(1000, 32, 1));
  int64_t padded = 0;
  for (int64_t b = 0; b < batcher.batches_per_epoch(); ++b) {
    const Batch batch = batcher.next();
    padded += batch.size * (batch.src_length + batch.tgt_length);
  }
  // A greedy cut leaves at most one row's worth (<= 2 * 31 positions) unused per batch.
  EXPECT_GT(static_cast<double>(padded) / batcher.batches_per_epoch(), 1000 - 62);
}

TEST(TokenBatcher, RowsHoldTheirPairWithEosAndBos) {
  std::vector<SequencePair> pairs(1);
  pairs[0].src = {7, 8, 9};
  pairs[0].tgt = {5, 6};
  TokenBatcher batcher(pairs, options_with(64, 8, 1));
  const Batch batch = batcher.next();
  EXPECT_EQ(batch.src, (std::vector<int32_t>{7, 8, 9, 2}));
  EXPECT_EQ(batch.tgt_in, (std::vector<int32_t>{1, 5, 6}));
  EXPECT_EQ(batch.tgt_out, (std::vector<int32_t>{5, 6, 2}));
  EXPECT_EQ(batch.src_tokens, 4);
  EXPECT_EQ(batch.tgt_tokens, 3);
}

TEST(TokenBatcher, DeterministicInTheSeedAndReshuffledPerEpoch) {
  const auto pairs = random_pairs(300, 20, 11);
  TokenBatcher a(pairs, options_with(400, 32, 5));
  TokenBatcher b(pairs, options_with(400, 32, 5));
  TokenBatcher c(pairs, options_with(400, 32, 6));
  bool differs_from_other_seed = false;
  for (int64_t i = 0; i < 2 * a.batches_per_epoch(); ++i) {
    const Batch x = a.next(), y = b.next(), z = c.next();
    ASSERT_EQ(x.src, y.src);
    ASSERT_EQ(x.tgt_out, y.tgt_out);
    differs_from_other_seed = differs_from_other_seed || x.src != z.src;
  }
  EXPECT_TRUE(differs_from_other_seed);
  EXPECT_NE(a.batch_indices(0, 0), a.batch_indices(1, 0));
}

TEST(TokenBatcher, ResumesExactlyFromASavedPositionAcrossAnEpochBoundary) {
  const auto pairs = random_pairs(200, 25, 13);
  TokenBatcher reference(pairs, options_with(300, 32, 9));
  const int64_t per_epoch = reference.batches_per_epoch();
  const int64_t stop = per_epoch - 2;  // two batches before the end of epoch 0
  for (int64_t i = 0; i < stop; ++i) reference.next();
  const BatchPosition saved = reference.position();
  EXPECT_EQ(saved.epoch, 0);
  EXPECT_EQ(saved.batch, stop);

  TokenBatcher resumed(pairs, options_with(300, 32, 9));
  resumed.seek(saved);
  for (int64_t i = 0; i < 5; ++i) {
    const Batch x = reference.next(), y = resumed.next();
    ASSERT_EQ(x.src, y.src) << "batch " << i << " after resuming";
    ASSERT_EQ(x.tgt_in, y.tgt_in);
  }
  EXPECT_EQ(reference.position().epoch, 1);  // 2 batches end epoch 0, then 3 of epoch 1
  EXPECT_EQ(reference.position().batch, 3);
  EXPECT_EQ(resumed.position().batch, 3);
  EXPECT_THROW(resumed.seek({0, per_epoch + 1}), Error);
  EXPECT_THROW(resumed.seek({-1, 0}), Error);
}

TEST(TokenBatcher, SkipsAndCountsPairsLongerThanMaxLength) {
  std::vector<SequencePair> pairs(4);
  pairs[0].src.assign(7, 5);  // 7 + eos = 8 positions: fits max_length 8
  pairs[0].tgt.assign(3, 5);
  pairs[1].src.assign(8, 5);  // 9 positions: skipped
  pairs[1].tgt.assign(3, 5);
  pairs[2].src.assign(2, 5);
  pairs[2].tgt.assign(8, 5);  // skipped on the target side
  pairs[3].src.assign(1, 5);
  pairs[3].tgt.assign(1, 5);
  TokenBatcher batcher(pairs, options_with(64, 8, 1));
  EXPECT_EQ(batcher.skipped(), 2);
  EXPECT_EQ(batcher.pairs().size(), 2u);
  EXPECT_THROW(TokenBatcher(std::vector<SequencePair>(pairs.begin() + 1, pairs.begin() + 3),
                            options_with(64, 8, 1)),
               Error);
  EXPECT_THROW(TokenBatcher(pairs, options_with(15, 8, 1)), Error);  // cannot hold 8 + 8
}

// A global batch whose rows have target token counts (y + eos) `lengths`, source 2 tokens + eos.
Batch batch_with_target_lengths(const std::vector<int64_t>& lengths) {
  std::vector<SequencePair> pairs;
  std::vector<int64_t> indices;
  for (int64_t length : lengths) {
    SequencePair pair;
    pair.src = {static_cast<int32_t>(10 + pairs.size()), 4};
    for (int64_t t = 0; t + 1 < length; ++t) pair.tgt.push_back(static_cast<int32_t>(20 + t));
    indices.push_back(static_cast<int64_t>(pairs.size()));
    pairs.push_back(pair);
  }
  return make_batch(pairs, indices, 0, 1, 2);
}

TEST(SplitForRank, BalancesTargetTokensByContiguousSentences) {
  // Target tokens 5,1,1,1,4 (total 12): the running count reaches 6 = 12/2 after two rows.
  const Batch global = batch_with_target_lengths({5, 1, 1, 1, 4});
  const Batch first = split_for_rank(global, 0, 2);
  const Batch second = split_for_rank(global, 1, 2);
  EXPECT_EQ(first.size, 2);
  EXPECT_EQ(second.size, 3);
  EXPECT_EQ(first.tgt_tokens, 6);
  EXPECT_EQ(second.tgt_tokens, 6);
  EXPECT_EQ(first.src_tokens + second.src_tokens, global.src_tokens);
  // Rows keep their content; each share is trimmed to its own longest target (5 and 4).
  EXPECT_EQ(first.tgt_length, 5);
  EXPECT_EQ(second.tgt_length, 4);
  EXPECT_EQ(second.src_length, 3);
  EXPECT_EQ(second.src, (std::vector<int32_t>{12, 4, 2, 13, 4, 2, 14, 4, 2}));
  EXPECT_EQ(second.tgt_out, (std::vector<int32_t>{2, 0, 0, 0, 2, 0, 0, 0, 20, 21, 22, 2}));
  EXPECT_EQ(first.tgt_in, (std::vector<int32_t>{1, 20, 21, 22, 23, 1, 0, 0, 0, 0}));
}

TEST(SplitForRank, EveryRankGetsASentenceWhenThereAreEnough) {
  // One long sentence would take all the tokens; still each of 3 ranks gets a row.
  const Batch global = batch_with_target_lengths({40, 1, 1});
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(split_for_rank(global, rank, 3).size, 1);
  // Fewer sentences than ranks: the last rank is left empty.
  const Batch two = batch_with_target_lengths({3, 3});
  EXPECT_EQ(split_for_rank(two, 0, 3).size + split_for_rank(two, 1, 3).size, 2);
  EXPECT_EQ(split_for_rank(two, 2, 3).size, 0);
  EXPECT_EQ(split_for_rank(two, 2, 3).tgt_tokens, 0);
  EXPECT_THROW(split_for_rank(two, 3, 3), Error);
}

TEST(SplitForRank, SharesOfRealBatchesAddUpAndStayBalanced) {
  TokenBatcher batcher(random_pairs(400, 30, 21), options_with(2000, 32, 3));
  for (int64_t b = 0; b < batcher.batches_per_epoch(); ++b) {
    const Batch global = batcher.next();
    for (int world : {1, 2, 3}) {
      int64_t rows = 0, tgt = 0, src = 0, largest = 0;
      for (int rank = 0; rank < world; ++rank) {
        const Batch share = split_for_rank(global, rank, world);
        EXPECT_GE(share.size, 1);
        rows += share.size;
        tgt += share.tgt_tokens;
        src += share.src_tokens;
        largest = std::max(largest, share.tgt_tokens);
      }
      EXPECT_EQ(rows, global.size);
      EXPECT_EQ(tgt, global.tgt_tokens);
      EXPECT_EQ(src, global.src_tokens);
      // Contiguous cuts miss the even share by less than one sentence (<= 32 tokens).
      EXPECT_LE(largest, global.tgt_tokens / world + 32);
    }
  }
}

TEST(TokenBatcher, BatchesTheTokenizedBibleFixture) {
  test::ScratchDir dir;
  TokenizerTraining training;
  training.inputs = {test::bible_fixture("train.en"), test::bible_fixture("train.es")};
  training.vocab_size = 300;
  const Tokenizer tokenizer = Tokenizer::load_or_train(dir.file("spm.model"), training);
  const ParallelText text =
      read_parallel_text(test::bible_fixture("dev.en"), test::bible_fixture("dev.es"));
  std::vector<SequencePair> pairs;
  for (size_t i = 0; i < text.src.size(); ++i) {
    pairs.push_back({tokenizer.encode(text.src[i]), tokenizer.encode(text.tgt[i])});
  }
  TokenBatcher batcher(pairs, options_with(1500, 120, 1));
  int64_t rows = 0;
  for (int64_t b = 0; b < batcher.batches_per_epoch(); ++b) {
    const Batch batch = batcher.next();
    rows += batch.size;
    for (int32_t id : batch.tgt_out) ASSERT_LT(id, tokenizer.vocab_size());
  }
  EXPECT_EQ(rows + batcher.skipped(), static_cast<int64_t>(text.src.size()));
}

}  // namespace
}  // namespace attnlab
