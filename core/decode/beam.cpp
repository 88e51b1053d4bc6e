// Beam search: per sentence, the 2K best one-token extensions of the K live beams; extensions by
// eos among the first K end a hypothesis, the best K others live on. The scorer's rows are
// regrouped after every step (only unfinished sentences keep rows).
#include "core/decode/beam.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/decode/decoder_state.h"
#include "core/ops/ops.h"
#include "core/util/check.h"

namespace attnlab {
namespace {

constexpr double kNegativeInfinity = -std::numeric_limits<double>::infinity();

struct LiveBeam {
  std::vector<int32_t> tokens;
  double log_prob = kNegativeInfinity;  // -inf: a placeholder row that extends nothing
};

struct SentenceSearch {
  std::vector<LiveBeam> live;  // exactly K entries while searching
  std::vector<BeamHypothesis> finished;
  bool done = false;
};

BeamHypothesis finish(const LiveBeam& beam, double log_prob, bool ended, double alpha) {
  BeamHypothesis h;
  h.tokens = beam.tokens;
  h.log_prob = log_prob;
  h.score = log_prob / length_penalty(static_cast<int64_t>(beam.tokens.size()) + 1, alpha);
  h.ended = ended;
  return h;
}

// The model's next-token log-probabilities through the KV cache.
template <typename T>
class CachedScorer final : public NextTokenScorer {
 public:
  CachedScorer(Transformer<T>& model, const Batch& source, int64_t max_steps)
      : state_(model, source, max_steps), vocab_(model.config().vocab_size) {}
  int64_t vocab_size() const override { return vocab_; }
  const std::vector<double>& step(const std::vector<int32_t>& tokens) override {
    TensorView<const T> logits = state_.step(tokens);  // (rows,N)
    const int64_t rows = static_cast<int64_t>(tokens.size());
    log_probs_.resize(static_cast<size_t>(rows * vocab_));
    // log softmax, x_j - log sum_i exp(x_i), with the loss's log-sum-exp and the subtraction in
    // double: within a row the log-probabilities keep the logits' order, ties and all, so beam 1
    // picks what greedy decoding's argmax picks.
#pragma omp parallel for schedule(guided) if (rows * vocab_ >= ops::kParallelMinElements)
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = logits.data() + r * vocab_;
      double* out = log_probs_.data() + r * vocab_;
      const double log_sum = ops::log_sum_exp(row, vocab_);
      for (int64_t j = 0; j < vocab_; ++j) out[j] = static_cast<double>(row[j]) - log_sum;
    }
    return log_probs_;
  }
  void reorder(const std::vector<int64_t>& rows) override { state_.reorder(rows); }

 private:
  DecoderState<T> state_;
  int64_t vocab_;
  std::vector<double> log_probs_;
};

}  // namespace

bool ranks_before(const Candidate& x, const Candidate& y) {
  if (x.log_prob != y.log_prob) return x.log_prob > y.log_prob;
  if (x.beam != y.beam) return x.beam < y.beam;
  return x.token < y.token;
}

const std::vector<Candidate>& best_extensions(const double* log_probs,
                                              const std::vector<double>& prefixes, int64_t vocab,
                                              int64_t count, const SpecialTokens& special,
                                              std::vector<Candidate>& best) {
  best.clear();
  if (count <= 0) return best;
  // Candidates are met in ranks_before's tie order (beam, then token), so one that only equals
  // the worst kept ranks after every kept one: it enters only when strictly more likely. `best`
  // stays sorted; an entering candidate goes after those at least as likely.
  for (size_t k = 0; k < prefixes.size(); ++k) {
    const double prefix = prefixes[k];
    if (!std::isfinite(prefix)) continue;
    const double* row = log_probs + static_cast<int64_t>(k) * vocab;
    for (int64_t j = 0; j < vocab; ++j) {
      if (j == special.pad_id || j == special.bos_id) continue;
      const double log_prob = prefix + row[j];
      const bool full = static_cast<int64_t>(best.size()) == count;
      if (full && !(log_prob > best.back().log_prob)) continue;
      const Candidate candidate{log_prob, static_cast<int64_t>(k), static_cast<int32_t>(j)};
      if (full) best.pop_back();
      auto at = std::upper_bound(best.begin(), best.end(), candidate, ranks_before);
      best.insert(at, candidate);
    }
  }
  return best;
}

double length_penalty(int64_t length, double alpha) {
  return std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

std::vector<BeamHypothesis> beam_search(NextTokenScorer& scorer, int64_t sentences,
                                        const std::vector<int64_t>& max_tokens,
                                        const BeamOptions& options, const SpecialTokens& special) {
  const int32_t bos_id = special.bos_id, eos_id = special.eos_id;
  const int64_t K = options.beam, N = scorer.vocab_size();
  CHECK(K >= 1) << "beam size must be >= 1, got " << K;
  CHECK(static_cast<int64_t>(max_tokens.size()) == sentences)
      << "beam search needs one length limit per sentence: " << max_tokens.size() << " for "
      << sentences << " sentences";
  std::vector<SentenceSearch> search(static_cast<size_t>(sentences));
  std::vector<int64_t> active;  // sentences with rows in the scorer, K rows each, in this order
  std::vector<int64_t> rows;
  for (int64_t s = 0; s < sentences; ++s) {
    search[static_cast<size_t>(s)].live.assign(static_cast<size_t>(K), LiveBeam{});
    search[static_cast<size_t>(s)].live[0].log_prob = 0.0;  // one real beam to start from
    active.push_back(s);
    for (int64_t k = 0; k < K; ++k) rows.push_back(s);
  }
  if (sentences == 0) return {};
  scorer.reorder(rows);
  std::vector<int32_t> tokens(rows.size(), bos_id);
  std::vector<double> prefixes;
  std::vector<Candidate> extensions;
  for (int64_t t = 0; !active.empty(); ++t) {
    const std::vector<double>& log_probs = scorer.step(tokens);
    CHECK(static_cast<int64_t>(log_probs.size()) == static_cast<int64_t>(tokens.size()) * N)
        << "scorer returned " << log_probs.size() << " log-probabilities for " << tokens.size()
        << " rows of " << N;
    std::vector<int64_t> next_active, next_rows;
    std::vector<int32_t> next_tokens;
    for (size_t a = 0; a < active.size(); ++a) {
      const int64_t s = active[a];
      SentenceSearch& sentence = search[static_cast<size_t>(s)];
      const double* base = log_probs.data() + static_cast<int64_t>(a) * K * N;
      if (t >= max_tokens[static_cast<size_t>(s)]) {
        // Length limit: every live beam ends here, eos forced.
        for (int64_t k = 0; k < K; ++k) {
          const LiveBeam& beam = sentence.live[static_cast<size_t>(k)];
          if (!std::isfinite(beam.log_prob)) continue;
          sentence.finished.push_back(
              finish(beam, beam.log_prob + base[k * N + eos_id], false, options.alpha));
        }
        sentence.done = true;
        continue;
      }
      prefixes.clear();
      for (const LiveBeam& beam : sentence.live) prefixes.push_back(beam.log_prob);
      const std::vector<Candidate>& candidates =
          best_extensions(base, prefixes, N, 2 * K, special, extensions);
      const size_t keep = candidates.size();
      std::vector<LiveBeam> live;
      std::vector<int64_t> parents;
      for (size_t c = 0; c < keep && static_cast<int64_t>(live.size()) < K; ++c) {
        const Candidate& candidate = candidates[c];
        if (!std::isfinite(candidate.log_prob)) break;  // impossible tokens: nothing after is real
        const LiveBeam& parent = sentence.live[static_cast<size_t>(candidate.beam)];
        if (candidate.token == eos_id) {
          if (static_cast<int64_t>(c) < K) {
            sentence.finished.push_back(finish(parent, candidate.log_prob, true, options.alpha));
          }
          continue;
        }
        LiveBeam extended{parent.tokens, candidate.log_prob};
        extended.tokens.push_back(candidate.token);
        live.push_back(std::move(extended));
        parents.push_back(candidate.beam);
      }
      if (static_cast<int64_t>(sentence.finished.size()) >= K || live.empty()) {
        sentence.done = true;
        continue;
      }
      while (static_cast<int64_t>(live.size()) < K) {  // fewer candidates than beams
        live.push_back(LiveBeam{});
        parents.push_back(0);
      }
      sentence.live = std::move(live);
      next_active.push_back(s);
      for (int64_t k = 0; k < K; ++k) {
        next_rows.push_back(static_cast<int64_t>(a) * K + parents[static_cast<size_t>(k)]);
        const LiveBeam& beam = sentence.live[static_cast<size_t>(k)];
        next_tokens.push_back(beam.tokens.empty() ? bos_id : beam.tokens.back());
      }
    }
    active = std::move(next_active);
    if (active.empty()) break;
    scorer.reorder(next_rows);
    tokens = std::move(next_tokens);
  }
  std::vector<BeamHypothesis> best(static_cast<size_t>(sentences));
  for (int64_t s = 0; s < sentences; ++s) {
    const std::vector<BeamHypothesis>& finished = search[static_cast<size_t>(s)].finished;
    CHECK(!finished.empty()) << "beam search ended sentence " << s << " without a hypothesis";
    size_t top = 0;
    for (size_t i = 1; i < finished.size(); ++i) {
      if (finished[i].score > finished[top].score) top = i;
    }
    best[static_cast<size_t>(s)] = finished[top];
  }
  return best;
}

template <typename T>
std::vector<BeamHypothesis> beam_decode(Transformer<T>& model, const Batch& source,
                                        const BeamOptions& options) {
  const ModelConfig& c = model.config();
  CHECK(options.max_len_offset >= 0)
      << "eval.max_len_offset must be >= 0, got " << options.max_len_offset;
  std::vector<int64_t> max_tokens(static_cast<size_t>(source.size));
  int64_t longest = 0;
  for (int64_t b = 0; b < source.size; ++b) {
    int64_t length = 0;  // source words: neither padding nor the appended eos
    for (int64_t s = 0; s < source.src_length; ++s) {
      const int32_t id = source.src[static_cast<size_t>(b * source.src_length + s)];
      length += id != c.pad_id && id != c.eos_id ? 1 : 0;
    }
    // Feeding bos + L tokens takes L + 1 positions.
    const int64_t limit = std::min(length + options.max_len_offset, c.max_positions - 1);
    max_tokens[static_cast<size_t>(b)] = limit;
    longest = std::max(longest, limit);
  }
  if (source.size == 0) return {};
  CachedScorer<T> scorer(model, source, longest + 1);
  return beam_search(scorer, source.size, max_tokens, options, {c.pad_id, c.bos_id, c.eos_id});
}

template std::vector<BeamHypothesis> beam_decode<float>(Transformer<float>&, const Batch&,
                                                        const BeamOptions&);
template std::vector<BeamHypothesis> beam_decode<double>(Transformer<double>&, const Batch&,
                                                         const BeamOptions&);

}  // namespace attnlab
