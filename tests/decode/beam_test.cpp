// Beam search: the length penalty's arithmetic, a hand-built distribution where beam 2 finds a
// better sequence than greedy, beam 1 against greedy decoding, and length limits.
#include "core/decode/beam.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "core/decode/greedy.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

constexpr int32_t kPad = 0, kBos = 1, kEos = 2, kA = 3, kB = 4;
const SpecialTokens kSpecial{kPad, kBos, kEos};

// A next-token distribution given the prefix (bos excluded), written out by hand; prefixes not
// listed end at once (eos with probability 1).
class TableScorer final : public NextTokenScorer {
 public:
  explicit TableScorer(std::map<std::vector<int32_t>, std::vector<double>> table)
      : table_(std::move(table)) {}
  int64_t vocab_size() const override { return 5; }
  const std::vector<double>& step(const std::vector<int32_t>& tokens) override {
    EXPECT_EQ(tokens.size(), prefixes_.size());
    out_.clear();
    for (size_t r = 0; r < tokens.size(); ++r) {
      if (tokens[r] != kBos) prefixes_[r].push_back(tokens[r]);
      auto it = table_.find(prefixes_[r]);
      std::vector<double> p = it == table_.end() ? std::vector<double>{0, 0, 1, 0, 0} : it->second;
      for (double v : p) out_.push_back(std::log(v));
    }
    return out_;
  }
  void reorder(const std::vector<int64_t>& rows) override {
    std::vector<std::vector<int32_t>> kept;
    for (int64_t r : rows) kept.push_back(prefixes_[static_cast<size_t>(r)]);
    prefixes_ = kept;
  }
  void start(int64_t sentences) { prefixes_.assign(static_cast<size_t>(sentences), {}); }

 private:
  std::map<std::vector<int32_t>, std::vector<double>> table_;
  std::vector<std::vector<int32_t>> prefixes_;
  std::vector<double> out_;
};

// P(A) = 0.6 > P(B) = 0.4 first, but every continuation of A is poor: after A, eos 0.3, A 0.35,
// B 0.35; after B, eos 1. Greedy: A A eos (0.6 * 0.35 = 0.21); the best sequence is B eos (0.4).
TableScorer garden_path() {
  return TableScorer(
      {{{}, {0, 0, 0, 0.6, 0.4}}, {{kA}, {0, 0, 0.3, 0.35, 0.35}}, {{kB}, {0, 0, 1.0, 0, 0}}});
}

TEST(LengthPenalty, GnmtFormula) {
  EXPECT_DOUBLE_EQ(length_penalty(1, 0.6), 1.0);  // (5 + 1) / 6 = 1
  EXPECT_DOUBLE_EQ(length_penalty(7, 1.0), 2.0);  // 12 / 6
  EXPECT_NEAR(length_penalty(7, 0.5), std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(length_penalty(10, 0.6), std::pow(2.5, 0.6), 1e-15);
  EXPECT_DOUBLE_EQ(length_penalty(40, 0.0), 1.0);  // alpha 0: raw log-probabilities
}

TEST(BeamSearch, BeamTwoFindsTheSequenceGreedyMisses) {
  TableScorer scorer = garden_path();
  BeamOptions options;
  options.alpha = 0.0;
  options.beam = 1;
  scorer.start(1);
  const auto greedy = beam_search(scorer, 1, {10}, options, kSpecial);
  EXPECT_EQ(greedy[0].tokens, (std::vector<int32_t>{kA, kA}));
  EXPECT_NEAR(greedy[0].log_prob, std::log(0.6 * 0.35), 1e-12);

  options.beam = 2;
  scorer.start(1);
  const auto beam = beam_search(scorer, 1, {10}, options, kSpecial);
  EXPECT_EQ(beam[0].tokens, (std::vector<int32_t>{kB}));
  EXPECT_NEAR(beam[0].log_prob, std::log(0.4), 1e-12);
  EXPECT_TRUE(beam[0].ended);
  EXPECT_GT(beam[0].score, greedy[0].score);
}

TEST(BeamSearch, ScoreIsLogProbOverLengthPenaltyCountingEos) {
  TableScorer scorer = garden_path();
  BeamOptions options;
  options.beam = 2;
  options.alpha = 0.6;
  scorer.start(1);
  const auto best = beam_search(scorer, 1, {10}, options, kSpecial);
  ASSERT_EQ(best[0].tokens, (std::vector<int32_t>{kB}));
  // |Y| = 2 (B, eos): lp = (7/6)^0.6.
  EXPECT_NEAR(best[0].score, std::log(0.4) / std::pow(7.0 / 6.0, 0.6), 1e-12);
}

TEST(BeamSearch, LengthPenaltyDecidesBetweenEndedHypotheses) {
  // Ended hypotheses: "A eos" 0.6 * 0.5 = 0.3 (|Y| 2), "A A eos" 0.6 * 0.45 = 0.27 and
  // "B A eos" 0.4 * 0.5 = 0.2 (|Y| 3).
  TableScorer scorer({{{}, {0, 0, 0, 0.6, 0.4}},
                      {{kA}, {0, 0, 0.5, 0.45, 0.05}},
                      {{kA, kA}, {0, 0, 1.0, 0, 0}},
                      {{kB}, {0, 0, 0.5, 0.5, 0}},
                      {{kB, kA}, {0, 0, 1.0, 0, 0}}});
  BeamOptions options;
  options.beam = 2;
  options.alpha = 0.0;
  scorer.start(1);
  const auto plain = beam_search(scorer, 1, {10}, options, kSpecial);
  EXPECT_EQ(plain[0].tokens, (std::vector<int32_t>{kA}));  // the most probable
  EXPECT_NEAR(plain[0].score, std::log(0.3), 1e-12);
  // alpha 1: log 0.3 / (7/6) = -1.0320 loses to log 0.27 / (8/6) = -0.9820.
  options.alpha = 1.0;
  scorer.start(1);
  const auto normalised = beam_search(scorer, 1, {10}, options, kSpecial);
  EXPECT_EQ(normalised[0].tokens, (std::vector<int32_t>{kA, kA}));
  EXPECT_NEAR(normalised[0].score, std::log(0.27) / (8.0 / 6.0), 1e-12);
}

TEST(BeamSearch, StopsOnceBeamHypothesesHaveEnded) {
  // With beam 2, "B eos" and "A eos" end at step 2, so "A A A eos" is never reached although a
  // strong length reward (alpha 5) would rank it first: the documented fairseq stopping rule.
  TableScorer scorer({{{}, {0, 0, 0, 0.5, 0.5}},
                      {{kA}, {0, 0, 0.5, 0.5, 0}},
                      {{kA, kA}, {0, 0, 0.5, 0.5, 0}},
                      {{kA, kA, kA}, {0, 0, 1.0, 0, 0}},
                      {{kB}, {0, 0, 1.0, 0, 0}}});
  BeamOptions options;
  options.beam = 2;
  options.alpha = 5.0;
  scorer.start(1);
  const auto best = beam_search(scorer, 1, {10}, options, kSpecial);
  EXPECT_EQ(best[0].tokens, (std::vector<int32_t>{kB}));
  EXPECT_NEAR(best[0].score, std::log(0.5) / std::pow(7.0 / 6.0, 5.0), 1e-12);
}

TEST(BeamSearch, LengthLimitForcesEos) {
  TableScorer scorer({{{}, {0, 0, 0.1, 0.9, 0}},
                      {{kA}, {0, 0, 0.1, 0.9, 0}},
                      {{kA, kA}, {0, 0, 0.1, 0.9, 0}},
                      {{kA, kA, kA}, {0, 0, 0.1, 0.9, 0}}});
  BeamOptions options;
  options.beam = 1;
  options.alpha = 0.0;
  scorer.start(2);
  // Sentence 0 may produce 2 tokens, sentence 1 none.
  const auto out = beam_search(scorer, 2, {2, 0}, options, kSpecial);
  EXPECT_EQ(out[0].tokens, (std::vector<int32_t>{kA, kA}));
  EXPECT_FALSE(out[0].ended);
  EXPECT_NEAR(out[0].log_prob, std::log(0.9 * 0.9 * 0.1), 1e-12);  // eos forced at the limit
  EXPECT_TRUE(out[1].tokens.empty());
  EXPECT_NEAR(out[1].log_prob, std::log(0.1), 1e-12);
}

// best_extensions against the whole candidate list sorted by ranks_before: log-probabilities
// from a few levels, so that many candidates tie and the tie order decides who is kept; beams
// that extend nothing (-inf), impossible tokens (-inf), and counts from 1 to past the number of
// candidates.
TEST(BeamSearch, BestExtensionsAreTheFirstOfTheWholeSortedCandidateList) {
  std::mt19937 rng(7);
  const double levels[] = {-0.5, -1.0, -1.0, -2.0, -std::numeric_limits<double>::infinity()};
  std::uniform_int_distribution<int> level(0, 4);
  const int64_t vocab = 9;
  std::vector<Candidate> best;
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t beams = 1 + trial % 4;
    std::vector<double> prefixes(static_cast<size_t>(beams)), log_probs;
    for (double& prefix : prefixes) prefix = level(rng) == 4 ? levels[4] : -0.25 * level(rng);
    for (int64_t i = 0; i < beams * vocab; ++i) log_probs.push_back(levels[level(rng)]);
    std::vector<Candidate> all;
    for (int64_t k = 0; k < beams; ++k) {
      if (!std::isfinite(prefixes[static_cast<size_t>(k)])) continue;
      for (int32_t j = 0; j < vocab; ++j) {
        if (j == kPad || j == kBos) continue;
        all.push_back({prefixes[static_cast<size_t>(k)] + log_probs[k * vocab + j], k, j});
      }
    }
    std::sort(all.begin(), all.end(), ranks_before);
    const int64_t count = 1 + trial % 30;
    best_extensions(log_probs.data(), prefixes, vocab, count, kSpecial, best);
    const size_t expected = std::min(all.size(), static_cast<size_t>(count));
    ASSERT_EQ(best.size(), expected) << "trial " << trial;
    for (size_t c = 0; c < expected; ++c) {
      EXPECT_EQ(best[c].log_prob, all[c].log_prob) << "trial " << trial << ", place " << c;
      EXPECT_EQ(best[c].beam, all[c].beam) << "trial " << trial << ", place " << c;
      EXPECT_EQ(best[c].token, all[c].token) << "trial " << trial << ", place " << c;
    }
  }
}

// The shared tiny model at twice its width, d_k = d_v = d_model / heads: the seeds of the tests
// below were chosen for these sizes.
ModelConfig tiny_model() {
  ModelConfig c = test::tiny_model_config();
  c.d_model = 16;
  c.d_ff = 32;
  c.d_k = 8;
  c.d_v = 8;
  c.max_positions = 40;  // sources of up to 5 tokens plus the length limits tried
  return c;
}

Batch three_sources() {
  Batch source;
  source.size = 3;
  source.src_length = 5;
  source.src = {3, 4, 5, 6, 2, 7, 8, 2, 0, 0, 9, 10, 3, 2, 0};
  return source;
}

// Greedy decoding by re-running the full decoder on every prefix: an oracle that shares no code
// with the KV cache or the beam bookkeeping.
std::vector<int32_t> greedy_without_cache(Transformer<double>& model, const Batch& source,
                                          int64_t row, int64_t max_tokens) {
  Batch one;
  one.size = 1;
  one.src_length = source.src_length;
  one.src.assign(source.src.begin() + row * source.src_length,
                 source.src.begin() + (row + 1) * source.src_length);
  std::vector<int32_t> prefix = {kBos}, out;
  const int64_t vocab = model.config().vocab_size;
  while (static_cast<int64_t>(out.size()) < max_tokens) {
    one.tgt_length = static_cast<int64_t>(prefix.size());
    one.tgt_in = prefix;
    one.tgt_out = prefix;
    model.keep_log_probs(true);
    model.forward(one, 0.0f, false, 0);
    const double* last = model.log_probs().data() + (one.tgt_length - 1) * vocab;
    int32_t best = kEos;  // pad and bos are never produced
    for (int64_t j = 0; j < vocab; ++j) {
      if (j != kPad && j != kBos && last[j] > last[best]) best = static_cast<int32_t>(j);
    }
    if (best == kEos) break;
    out.push_back(best);
    prefix.push_back(best);
  }
  return out;
}

TEST(BeamDecode, BeamOneEqualsGreedy) {
  int compared = 0;
  for (uint64_t seed : {3u, 17u, 29u}) {
    Transformer<double> model(tiny_model(), seed);
    const Batch source = three_sources();
    BeamOptions options;
    options.beam = 1;
    options.max_len_offset = 6;
    const auto beam = beam_decode(model, source, options);
    const auto greedy = greedy_decode(model, source, 30);
    const int64_t words[] = {4, 2, 3};  // source tokens before eos
    for (int64_t b = 0; b < 3; ++b) {
      const int64_t limit = words[b] + options.max_len_offset;
      EXPECT_EQ(beam[static_cast<size_t>(b)].tokens, greedy_without_cache(model, source, b, limit))
          << "seed " << seed << " row " << b;
      // greedy_decode may pick pad or bos, which beam search never produces: compare the rows
      // where it did not, up to the length limit.
      std::vector<int32_t> expected = greedy[static_cast<size_t>(b)];
      if (static_cast<int64_t>(expected.size()) > limit)
        expected.resize(static_cast<size_t>(limit));
      if (std::count(expected.begin(), expected.end(), kPad) +
              std::count(expected.begin(), expected.end(), kBos) >
          0) {
        continue;
      }
      ++compared;
      EXPECT_EQ(beam[static_cast<size_t>(b)].tokens, expected) << "seed " << seed << " row " << b;
    }
  }
  EXPECT_GE(compared, 3) << "too few rows to compare with greedy_decode";
}

// Sentences that end leave greedy_decode's batch (DecoderState::reorder); the others go on from
// their own rows of the caches. Every sentence must still be the oracle's greedy decoding, and the
// seeds must include batches whose sentences end at different steps before the limit, so that
// rows really left the batch while others were decoding.
TEST(GreedyDecode, SentencesThatEndLeaveTheBatchAndTheRestDecodeAsAlone) {
  Batch source;
  source.size = 6;
  source.src_length = 5;
  source.src = {3, 4, 5, 6, 2, 7,  8, 2, 0, 0, 9, 10, 3, 2, 0,
                5, 5, 6, 7, 2, 10, 3, 2, 0, 0, 4, 9,  8, 7, 2};
  constexpr int64_t kLimit = 12;
  int staggered = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    Transformer<double> model(tiny_model(), seed);
    const auto outputs = greedy_decode(model, source, kLimit);
    std::vector<size_t> ended_early;
    for (int64_t b = 0; b < source.size; ++b) {
      const std::vector<int32_t>& output = outputs[static_cast<size_t>(b)];
      ASSERT_EQ(output, greedy_without_cache(model, source, b, kLimit))
          << "seed " << seed << " sentence " << b;
      if (static_cast<int64_t>(output.size()) < kLimit) ended_early.push_back(output.size());
    }
    std::sort(ended_early.begin(), ended_early.end());
    const auto distinct = std::unique(ended_early.begin(), ended_early.end()) - ended_early.begin();
    staggered += distinct >= 2 ? 1 : 0;
  }
  EXPECT_GE(staggered, 3) << "too few batches whose sentences end at different steps";
}

TEST(BeamDecode, ReportsTheModelsLogProbabilityWithinTheLengthLimit) {
  Transformer<double> model(tiny_model(), 5);
  const Batch source = three_sources();
  BeamOptions options;
  options.alpha = 0.0;
  options.max_len_offset = 4;
  options.beam = 4;
  const auto wide = beam_decode(model, source, options);
  const int64_t words[] = {4, 2, 3};
  for (size_t b = 0; b < 3; ++b) {
    EXPECT_LE(static_cast<int64_t>(wide[b].tokens.size()), words[b] + 4) << "row " << b;
    EXPECT_DOUBLE_EQ(wide[b].score, wide[b].log_prob) << "alpha 0: no length penalty";
  }
  // Re-score the best hypothesis of row 0 with a teacher-forced forward pass.
  Batch one;
  one.size = 1;
  one.src_length = source.src_length;
  one.src.assign(source.src.begin(), source.src.begin() + source.src_length);
  std::vector<int32_t> in = {kBos}, out = wide[0].tokens;
  in.insert(in.end(), wide[0].tokens.begin(), wide[0].tokens.end());
  out.push_back(kEos);
  one.tgt_length = static_cast<int64_t>(in.size());
  one.tgt_in = in;
  one.tgt_out = out;
  const double nll = model.forward(one, 0.0f, false, 0).nll;
  EXPECT_NEAR(wide[0].log_prob, -nll, 1e-9);
}

}  // namespace
}  // namespace attnlab
