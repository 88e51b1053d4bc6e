// decoding_settings: one reading of the flags eval and translate share.
#include "core/app/decoding_settings.h"

#include <cstdio>
#include <optional>
#include <string>

#include "core/app/cli.h"
#include "core/config/options.h"
#include "core/tensor/blas.h"
#include "core/train/precision.h"
#include "core/util/check.h"

namespace attnlab::cli {

void add_decoding_options(boost::program_options::options_description& options) {
  namespace po = boost::program_options;
  // The numeric flags are read as text and checked by the option table's rule of the key they
  // override (overridden_eval).
  options.add_options()("beam", po::value<std::string>(),
                        "beam size (default: eval.beam of the run)")(
      "alpha", po::value<std::string>(), "length penalty alpha (default: eval.length_penalty)")(
      "max-len-offset", po::value<std::string>(),
      "output length <= source length + this (default: eval.max_len_offset of the run)")(
      "average", po::value<std::string>(),
      "average the last K checkpoints (default: eval.average_last; 0 = newest only)")(
      "checkpoint", po::value<std::string>(),
      (eval_checkpoint_names().choices() +
       " (best: ckpt/best.h5, the lowest dev loss; default: eval.checkpoint of the run)")
          .c_str())("threads", po::value<int>(),
                    "BLAS threads (default: cluster.threads_per_rank)")(
      "precision", po::value<std::string>(),
      (blas::precision_names().choices() + " matrix products (default: train.precision of the run)")
          .c_str());
}

namespace {

// The run's eval section with --beam, --alpha, --max-len-offset and --average applied, each
// through the option table's rule for the key it overrides, so that a flag accepts exactly what
// the key accepts in a config (--alpha -1 is refused as eval.length_penalty: -1 is).
EvalConfig overridden_eval(const boost::program_options::variables_map& values,
                           const ExperimentConfig& stored) {
  static const std::pair<const char*, const char*> kFlagKeys[] = {
      {"beam", "eval.beam"},
      {"alpha", "eval.length_penalty"},
      {"max-len-offset", "eval.max_len_offset"},
      {"average", "eval.average_last"}};
  ExperimentConfig config = stored;
  for (const auto& [flag, key] : kFlagKeys) {
    if (!values.count(flag)) continue;
    const config::Option* option = config::find_option(key);
    CHECK(option != nullptr) << "no option " << key;
    config::RawValue value;
    value.kind = config::RawValue::Kind::kScalar;
    value.text = values[flag].as<std::string>();
    const std::string problem = option->assign(config, value);
    if (!problem.empty()) {
      throw UsageError(std::string("--") + flag + " sets " + key + ", which " + problem);
    }
  }
  return config.eval;
}

// The value of --<flag>, named in the key's own table, or the run's stored value without it.
template <typename Enum>
Enum flag_or_stored(const boost::program_options::variables_map& values, const char* flag,
                    const EnumNames<Enum>& names, Enum stored) {
  if (!values.count(flag)) return stored;
  const std::string text = values[flag].as<std::string>();
  const std::optional<Enum> value = names.find(text);
  if (!value) {
    throw UsageError(std::string("--") + flag + " must be one of " + names.choices() + ", got '" +
                     text + "'");
  }
  return *value;
}

}  // namespace

DecodingSettings decoding_settings(const boost::program_options::variables_map& values,
                                   const ExperimentConfig& stored) {
  DecodingSettings settings;
  const EvalConfig eval = overridden_eval(values, stored);
  settings.best = flag_or_stored(values, "checkpoint", eval_checkpoint_names(),
                                 stored.eval.checkpoint) == EvalCheckpoint::kBest;
  if (settings.best && values.count("average")) {
    throw UsageError("--average averages the newest checkpoints; it does not go with best");
  }
  settings.average = values.count("average") || !settings.best ? eval.average_last : 0;
  settings.beam = BeamOptions{eval.beam, eval.length_penalty, eval.max_len_offset};
  blas::set_threads(values.count("threads") ? values["threads"].as<int>()
                                            : static_cast<int>(stored.cluster.threads_per_rank));
  if (values.count("precision")) {
    use_precision(
        flag_or_stored(values, "precision", blas::precision_names(), stored.train.precision),
        "--precision");
  } else {
    use_precision(stored.train.precision, "train.precision (the run's; --precision overrides it)");
  }
  return settings;
}

void note_truncation(const char* command, const std::string& what, const EvalSet& set,
                     const ExperimentConfig& config) {
  if (set.truncated == 0) return;
  std::fprintf(stderr,
               "attnlab %s: %ld of %ld %s are longer than the run's data.max_length (%ld pieces "
               "with eos) and are cut to it\n",
               command, static_cast<long>(set.truncated), static_cast<long>(set.sentences),
               what.c_str(), static_cast<long>(config.data.max_length));
}

void note_skipped_checkpoints(const char* command, const RunModel& run) {
  if (run.skipped.empty()) return;
  std::fprintf(stderr, "attnlab %s: using %s (step %ld), not the newest checkpoint:\n", command,
               run.checkpoints.front().c_str(), static_cast<long>(run.step));
  for (const std::string& reason : run.skipped) {
    std::fprintf(stderr, "  skipped %s\n", reason.c_str());
  }
}

}  // namespace attnlab::cli
