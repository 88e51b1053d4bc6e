// Batched beam search with the GNMT length penalty: every sentence keeps `beam` live prefixes,
// finished hypotheses are ranked by log P(Y|X) / lp(|Y|), lp(n) = ((5 + n) / 6)^alpha (Wu et al.
// 2016), |Y| counting the eos. A sentence stops when `beam` hypotheses have ended (or at its
// length limit); decoding stops when every sentence has. Pad and bos are never produced.
#pragma once

#include <cstdint>
#include <vector>

#include "core/data/batch.h"
#include "core/model/transformer.h"

namespace attnlab {

struct BeamOptions {
  int64_t beam = 4;             // eval.beam; 1 is greedy decoding
  double alpha = 0.6;           // eval.length_penalty
  int64_t max_len_offset = 50;  // eval.max_len_offset: at most source length + offset tokens
};

struct BeamHypothesis {
  std::vector<int32_t> tokens;  // without bos and eos
  double log_prob = 0.0;        // log P(tokens, eos | source), natural log
  double score = 0.0;           // log_prob / length_penalty(tokens + eos)
  bool ended = false;           // false when cut at the length limit (no eos)
};

// ((5 + length) / 6)^alpha.
double length_penalty(int64_t length, double alpha);

// What beam search asks of a model: log-probabilities of the next token of every row given the
// tokens fed so far, and the regrouping of rows when beams are reselected.
class NextTokenScorer {
 public:
  virtual ~NextTokenScorer() = default;
  virtual int64_t vocab_size() const = 0;
  // Feeds one token per row; returns (rows, N) log-probabilities, row-major.
  virtual const std::vector<double>& step(const std::vector<int32_t>& tokens) = 0;
  // Keeps the rows `rows` (repeats allowed), in that order.
  virtual void reorder(const std::vector<int64_t>& rows) = 0;
};

// The special ids: pad and bos are never produced, eos ends a hypothesis.
struct SpecialTokens {
  int32_t pad_id = 0;
  int32_t bos_id = 1;
  int32_t eos_id = 2;
};

// A one-token extension of live beam `beam`: its log-probability log P(prefix) + log P(token).
struct Candidate {
  double log_prob;
  int64_t beam;
  int32_t token;
};

// The search's order of candidates: more likely first; ties go to the lower beam, then the lower
// token id (as greedy decoding's argmax).
bool ranks_before(const Candidate& x, const Candidate& y);

// The `count` first extensions in ranks_before's order (fewer if there are fewer) of the beams
// whose log-probabilities are `prefixes` (a non-finite prefix extends nothing), by any token but
// pad and bos, from `log_probs` (one row of `vocab` per beam), into `best`, which is returned.
// One pass over the rows, without the whole (beams x vocab) candidate list.
const std::vector<Candidate>& best_extensions(const double* log_probs,
                                              const std::vector<double>& prefixes, int64_t vocab,
                                              int64_t count, const SpecialTokens& special,
                                              std::vector<Candidate>& best);

// Beam search over `sentences` rows of `scorer` (row i is sentence i on entry), sentence i
// producing at most max_tokens[i] tokens before its eos (forced at the limit). Only eos
// candidates among a sentence's best K end hypotheses; the sentence stops once K hypotheses have
// ended, so a longer hypothesis that the length penalty would have preferred can be missed
// (fairseq's rule; it keeps beam 1 identical to greedy decoding). Returns the best ended
// hypothesis of each sentence by score.
std::vector<BeamHypothesis> beam_search(NextTokenScorer& scorer, int64_t sentences,
                                        const std::vector<int64_t>& max_tokens,
                                        const BeamOptions& options, const SpecialTokens& special);

// Beam search with the model's KV cache (DecoderState). Sentence i may produce up to its source
// length (non-pad tokens, eos included) + max_len_offset tokens, and never more than the model's
// max_positions allow.
template <typename T>
std::vector<BeamHypothesis> beam_decode(Transformer<T>& model, const Batch& source,
                                        const BeamOptions& options);

}  // namespace attnlab
