// Experiment-level cross-field rules, and ModelConfig::validate's errors mapped back to keys.
#include "core/config/rules.h"

#include <sstream>

#include "core/model/param_count.h"
#include "core/util/check.h"

namespace attnlab::config {
namespace {

bool synthetic(const DataConfig& data) { return data.task != DataTask::kCorpus; }

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// 2.77e11 -> "277.1"
std::string billions(double count) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << count / 1e9;
  return out.str();
}

// A fixed budget (cosine, or a cool-down) decays the rate to zero at train.steps, so that every
// run of a table ends on the same schedule; the rules that end a run or cut its rate where its dev
// evaluations stall would bring that dependence back, so they are refused beside it.
std::optional<RuleViolation> check_fixed_budget(const ExperimentConfig& c) {
  const LrConfig& lr = c.train.lr;
  const int64_t steps = c.train.steps;
  if (lr.schedule == LrSchedule::Kind::kCosine && lr.warmup >= steps) {
    return RuleViolation{{"train.lr.warmup", "train.steps"},
                         concat("train.lr.warmup (", lr.warmup, ") must be below train.steps (",
                                steps, ") for the cosine schedule to decay after it")};
  }
  if (lr.schedule == LrSchedule::Kind::kCosine && lr.cooldown > 0) {
    return RuleViolation{{"train.lr.cooldown", "train.lr.schedule"},
                         concat("train.lr.cooldown (", lr.cooldown,
                                ") adds a decay to zero, but the cosine schedule already reaches "
                                "zero at train.steps; set train.lr.cooldown to 0")};
  }
  if (lr.cooldown > 0 && lr.warmup + lr.cooldown > steps) {
    return RuleViolation{
        {"train.lr.cooldown", "train.lr.warmup", "train.steps"},
        concat("train.lr.warmup (", lr.warmup, ") + train.lr.cooldown (", lr.cooldown,
               ") must be <= train.steps (", steps, "): the cool-down starts after warmup")};
  }
  const bool fixed_budget = lr.schedule == LrSchedule::Kind::kCosine || lr.cooldown > 0;
  if (!fixed_budget) return std::nullopt;
  const char* why =
      " ends a fixed-budget schedule (cosine or train.lr.cooldown) before its rate "
      "reaches zero at train.steps";
  if (lr.shrink_patience > 0) {
    return RuleViolation{{"train.lr.shrink_patience", "train.lr.schedule"},
                         concat("train.lr.shrink_patience (", lr.shrink_patience,
                                ") cuts the rate where dev evaluations stall, which a fixed-budget "
                                "schedule (cosine or train.lr.cooldown) is meant not to do; set it "
                                "to 0")};
  }
  if (c.train.stop.patience > 0) {
    return RuleViolation{
        {"train.stop.patience", "train.lr.schedule"},
        concat("train.stop.patience (", c.train.stop.patience, ")", why, "; set it to 0")};
  }
  if (c.train.max_epochs > 0) {
    return RuleViolation{{"train.max_epochs", "train.lr.schedule"},
                         concat("train.max_epochs (", c.train.max_epochs, ")", why,
                                "; set it to 0 and size train.steps instead")};
  }
  return std::nullopt;
}

// A batch of train.batch_tokens must hold one pair of the longest length a run keeps, as
// fairseq's --max-tokens must hold its longest sentence: a smaller budget would make every batch
// one sentence (synthetic tasks) or refuse the data at start (a corpus). The count is the one the
// batchers use: source + target tokens, eos/bos included (a corpus pads both sides to at most
// data.max_length; a synthetic pair is at most data.synthetic.max_length + 1 on each side).
std::optional<RuleViolation> check_batch_holds_longest_pair(const ExperimentConfig& c) {
  const bool corpus = !synthetic(c.data);
  const int64_t length = corpus ? c.data.max_length : c.data.synthetic.max_length;
  const int64_t longest_pair = corpus ? 2 * length : 2 * (length + 1);
  if (c.train.batch_tokens >= longest_pair) return std::nullopt;
  const std::string length_key = corpus ? "data.max_length" : "data.synthetic.max_length";
  return RuleViolation{
      {"train.batch_tokens", length_key},
      concat("train.batch_tokens is ", c.train.batch_tokens, ", below its minimum ", longest_pair,
             ": a batch must hold one pair of the longest length (", length_key, " ", length,
             corpus ? " on each side" : " plus eos on each side",
             "); raise train.batch_tokens or lower ", length_key)};
}

}  // namespace

std::optional<RuleViolation> check_rules(const ExperimentConfig& unresolved) {
  const ExperimentConfig& c = unresolved;
  const ModelConfig& m = c.model;
  for (const char* which : {"d_k", "d_v"}) {
    int64_t width = std::string(which) == "d_k" ? m.d_k : m.d_v;
    if (width == 0 && m.d_model % m.heads != 0) {
      return RuleViolation{
          {"model.d_model", "model.heads", std::string("model.") + which},
          concat("model.d_model (", m.d_model, ") must be divisible by model.heads (", m.heads,
                 ") when model.", which, " is 0 (meaning d_model / heads); set model.", which,
                 " explicitly or change d_model or heads")};
    }
  }
  ModelConfig sized = m;
  sized.resolve_defaults();
  if (const double params = approximate_parameter_count(sized); params > kMaxParameters) {
    return RuleViolation{
        {"model.d_model", "model.d_ff", "model.heads", "model.vocab_size", "model.encoder_layers",
         "model.decoder_layers"},
        concat("the model would have ", billions(params),
               " billion parameters, more than attnlab accepts (", billions(kMaxParameters),
               " billion = 2^36: each rank holds parameters, gradients and two Adam moments, 16 "
               "bytes per parameter)")};
  }
  const SyntheticTaskConfig& s = c.data.synthetic;
  if (synthetic(c.data)) {
    if (m.vocab_size < s.symbols + 3) {
      return RuleViolation{
          {"model.vocab_size", "data.synthetic.symbols", "data.task"},
          concat("model.vocab_size (", m.vocab_size, ") must be >= data.synthetic.symbols + 3 (",
                 s.symbols + 3, ") for the synthetic task '", to_string(c.data.task),
                 "' (pad, bos, eos and the symbols)")};
    }
    if (s.min_length > s.max_length) {
      return RuleViolation{{"data.synthetic.min_length", "data.synthetic.max_length"},
                           concat("data.synthetic.min_length (", s.min_length,
                                  ") must be <= data.synthetic.max_length (", s.max_length, ")")};
    }
    if (m.max_positions < s.max_length + 2) {
      return RuleViolation{{"model.max_positions", "data.synthetic.max_length", "data.task"},
                           concat("model.max_positions (", m.max_positions,
                                  ") must be >= data.synthetic.max_length + 2 (", s.max_length + 2,
                                  ", a sequence with bos/eos)")};
    }
  } else {
    const std::pair<const char*, const std::string*> paths[] = {
        {"data.train.src", &c.data.train.src},
        {"data.train.tgt", &c.data.train.tgt},
        {"data.dev.src", &c.data.dev.src},
        {"data.dev.tgt", &c.data.dev.tgt}};
    for (const auto& [key, value] : paths) {
      if (value->empty()) {
        return RuleViolation{{key, "data.task"},
                             concat(key, " must name a file when data.task is corpus")};
      }
    }
    if (m.max_positions < c.data.max_length + 2) {
      return RuleViolation{
          {"model.max_positions", "data.max_length"},
          concat("model.max_positions (", m.max_positions, ") must be >= data.max_length + 2 (",
                 c.data.max_length + 2, ", a sentence with bos/eos)")};
    }
    if (c.data.tokenizer.type == "sentencepiece" && m.vocab_size != c.data.tokenizer.vocab_size) {
      return RuleViolation{
          {"model.vocab_size", "data.tokenizer.vocab_size"},
          concat("model.vocab_size (", m.vocab_size, ") must equal data.tokenizer.vocab_size (",
                 c.data.tokenizer.vocab_size,
                 ") so that the embedding table covers the shared vocabulary")};
    }
  }
  if (std::optional<RuleViolation> batch = check_batch_holds_longest_pair(c)) return batch;
  const LrConfig& lr = c.train.lr;
  if (lr.schedule == LrSchedule::Kind::kNoam && lr.warmup < 1) {
    return RuleViolation{{"train.lr.warmup", "train.lr.schedule"},
                         concat("train.lr.warmup must be >= 1 for the noam schedule (it divides "
                                "by warmup^1.5), got ",
                                lr.warmup)};
  }
  if (std::optional<RuleViolation> budget = check_fixed_budget(c)) return budget;
  for (const std::string& split : c.eval.decode_splits) {
    if (split != "dev" && split != "test") {
      return RuleViolation{
          {"eval.decode_splits"},
          concat("eval.decode_splits names '", split, "'; the splits are dev and test")};
    }
    if (c.data.task != DataTask::kCorpus) {
      return RuleViolation{{"eval.decode_splits", "data.task"},
                           concat("eval.decode_splits decodes text splits, which only data.task "
                                  "corpus has")};
    }
  }
  if (c.eval.average_last > c.train.keep_checkpoints) {
    return RuleViolation{
        {"eval.average_last", "train.keep_checkpoints"},
        concat("eval.average_last (", c.eval.average_last, ") must be <= train.keep_checkpoints (",
               c.train.keep_checkpoints, "): only kept checkpoints can be averaged")};
  }
  if (c.eval.checkpoint == EvalCheckpoint::kBest && c.eval.average_last > 0) {
    return RuleViolation{{"eval.checkpoint", "eval.average_last"},
                         concat("eval.checkpoint best and eval.average_last (", c.eval.average_last,
                                ") both choose the final parameters; set average_last to 0 or "
                                "checkpoint to newest")};
  }
  if (c.train.stop.patience > 0 && c.eval.every == 0) {
    return RuleViolation{{"train.stop.patience", "eval.every"},
                         concat("train.stop.patience (", c.train.stop.patience,
                                ") counts dev evaluations, but eval.every is 0 (only one at the "
                                "end); set eval.every")};
  }
  if (c.train.lr.shrink_after > 0 && c.train.lr.shrink_patience == 0) {
    return RuleViolation{{"train.lr.shrink_after", "train.lr.shrink_patience"},
                         concat("train.lr.shrink_after (", c.train.lr.shrink_after,
                                ") delays the rate's shrinking, but train.lr.shrink_patience is 0 "
                                "(it never shrinks); set train.lr.shrink_patience")};
  }
  if (c.train.lr.shrink_patience > 0 && c.eval.every == 0) {
    return RuleViolation{{"train.lr.shrink_patience", "eval.every"},
                         concat("train.lr.shrink_patience (", c.train.lr.shrink_patience,
                                ") counts dev evaluations, but eval.every is 0 (only one at the "
                                "end); set eval.every")};
  }
  return std::nullopt;
}

std::optional<RuleViolation> check_model(const ModelConfig& resolved) {
  const std::vector<ModelProblem> problems = resolved.problems();
  if (problems.empty()) return std::nullopt;
  return RuleViolation{problems.front().keys, problems.front().message};
}

}  // namespace attnlab::config
