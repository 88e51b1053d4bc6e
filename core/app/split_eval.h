// Decoding a corpus run's dev or test split with beam search and scoring it (BLEU, perplexity,
// decoder-encoder attention), written to the run file under /<group> and the hypotheses beside it:
// what `attnlab eval` does, and what `attnlab train` does after a run completes for each split of
// eval.decode_splits.
#pragma once

#include <string>

#include "core/app/decoding_settings.h"

namespace attnlab::cli {

struct SplitEvaluationRequest {
  std::string run_dir;
  std::string split;  // "dev" or "test"
  std::string group;  // run-file group; empty = eval_<split>
  DecodingSettings settings;
  const char* command = "eval";  // names the command in notes on stderr
};

// Decodes, scores, writes /<group> and hyp.<split or group>.txt, and prints the results.
void evaluate_split(const SplitEvaluationRequest& request);

// The step that /<group> of RUN_DIR/run.h5 scored, or -1 when the group is absent.
int64_t evaluated_step(const std::string& run_dir, const std::string& group);

// The step of the parameters `settings` choose in a completed run: /summary best_step for the
// best checkpoint, else its last step (the newest checkpoint, or the newest of those averaged).
int64_t final_parameters_step(const std::string& run_dir, const DecodingSettings& settings);

}  // namespace attnlab::cli
