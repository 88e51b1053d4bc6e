// `attnlab eval RUN_DIR`: decodes a split of a corpus run with beam search (newest checkpoint, or
// the average of the last K), scores BLEU (sacreBLEU-compatible) and per-piece perplexity,
// writes them to the run file under /eval_<split> and the hypotheses to RUN_DIR/hyp.<split>.txt
// (with --group G: /G and RUN_DIR/hyp.G.txt), with every attention block measured over the
// split under teacher forcing in /<group>/attention (entropy relative to uniform included).
#include "core/app/cli.h"
#include "core/app/decoding_settings.h"
#include "core/app/split_eval.h"
#include "core/train/corpus_source.h"

namespace attnlab::cli {
namespace {

int run_eval(const std::vector<std::string>& args) {
  po::options_description options("eval options");
  options.add_options()("run", po::value<std::string>(), "run directory (holds run.h5 and ckpt/)")(
      "split", po::value<std::string>()->default_value("dev"),
      "dev or test (data.dev / data.test)")(
      "group", po::value<std::string>(),
      "run-file group for the results (default: eval_<split>; also names hyp.<group>.txt)");
  add_decoding_options(options);
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map values;
  if (!parse("eval", "RUN_DIR [--split dev|test] [--beam 4 --alpha 0.6 --average K]", args, options,
             positional, values)) {
    return kExitOk;
  }
  if (!values.count("run")) throw UsageError("eval needs a run directory: attnlab eval RUN_DIR");
  const std::string run_dir = values["run"].as<std::string>();
  const std::string split = values["split"].as<std::string>();
  if (split != "dev" && split != "test") {
    throw UsageError("--split must be dev or test, got '" + split + "'");
  }
  const ExperimentConfig stored = load_run_config(run_dir);
  SplitEvaluationRequest request;
  request.run_dir = run_dir;
  request.split = split;
  if (values.count("group")) request.group = values["group"].as<std::string>();
  request.settings = decoding_settings(values, stored);
  evaluate_split(request);
  return kExitOk;
}

const CommandRegistration kRegister{
    "eval", "beam-search a corpus run's dev/test split: BLEU, perplexity, hypotheses", &run_eval};

}  // namespace
}  // namespace attnlab::cli
