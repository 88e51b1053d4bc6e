// `attnlab train`: trains one run (or resumes it, or does nothing when it is complete), under
// mpirun/srun as well as alone.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "core/app/cli.h"
#include "core/app/decoding_settings.h"
#include "core/app/split_eval.h"
#include "core/cluster/shared_cores.h"
#include "core/config/config.h"
#include "core/dist/abort.h"
#include "core/dist/comm.h"
#include "core/train/corpus_source.h"
#include "core/train/precision.h"
#include "core/train/run.h"
#include "core/util/path_name.h"

namespace attnlab::cli {
namespace {

// eval.decode_splits of a completed run: each split that /eval_<split> has not yet scored at the
// parameters of the run's final evaluation is decoded, so a run killed while decoding decodes
// again when trained again, and a finished one is not decoded twice.
void decode_splits(const std::string& run_dir) {
  const ExperimentConfig stored = load_run_config(run_dir);
  if (stored.eval.decode_splits.empty()) return;
  const DecodingSettings settings = decoding_settings(po::variables_map(), stored);
  const int64_t final_step = final_parameters_step(run_dir, settings);
  for (const std::string& split : stored.eval.decode_splits) {
    if (evaluated_step(run_dir, "eval_" + split) == final_step) continue;
    SplitEvaluationRequest request{run_dir, split, "", settings, "train"};
    evaluate_split(request);
  }
}

int run_train(const std::vector<std::string>& args) {
  // First, so that a stop request during start-up (MPI, data, tokenizer) becomes a checkpoint
  // after the first step instead of USR1's default action, death.
  install_stop_signals();
  po::options_description options("train options");
  add_config_options(options);
  add_out_option(options, "", "the run directory (default: <log.dir>/<name>)");
  options.add_options()("force", "train a completed run again, in a new directory <out>.<n>")(
      "quiet,q", "no progress output")("run-id", po::value<std::string>(), "run id for the log")(
      "sweep-id", po::value<std::string>(), "sweep id for the log");
  po::positional_options_description positional;
  positional.add("config", -1);
  po::variables_map values;
  if (!parse("train", "-c FILE [-c FILE ...] [--set KEY=VALUE ...] [--out DIR] [--force]", args,
             options, positional, values)) {
    return kExitOk;
  }
  RunRequest request;
  const std::vector<std::string> files = strings(values, "config");
  if (files.empty()) throw UsageError("train needs an experiment file: attnlab train -c FILE");
  request.config = config::load(files, strings(values, "set"));
  // Recorded absolute (run.h5, checkpoints), and checked before any file is written.
  config::make_paths_absolute(request.config, std::filesystem::current_path().string());
  config::check_data_files_exist(request.config);
  // Probes are text; only a corpus has the tokenizer to encode them (checked before any file).
  if (!request.config.log.attention_probes.empty() &&
      request.config.data.task != DataTask::kCorpus) {
    throw ConfigError(
        "log.attention_probes are source sentences and need a text corpus (data.task "
        "corpus); the synthetic task '" +
        to_string(request.config.data.task) + "' has no tokenizer");
  }
  const std::string out = values.count("out") ? values["out"].as<std::string>() : std::string();
  if (out.empty()) {
    // The name becomes a directory only here (sweeps name run directories by id).
    if (const std::string problem = path_name_problem(request.config.name); !problem.empty()) {
      throw ConfigError("name (the run's directory under log.dir; or give --out DIR): " + problem);
    }
  }
  request.out_dir = out.empty() ? request.config.log.dir + "/" + request.config.name : out;
  request.force = values.count("force") != 0;
  request.quiet = values.count("quiet") != 0;
  if (values.count("run-id")) request.run_id = values["run-id"].as<std::string>();
  if (values.count("sweep-id")) request.sweep_id = values["sweep-id"].as<std::string>();
  request.command_line = "attnlab train";
  for (const std::string& word : args) request.command_line += " " + word;
  request.after_completion = decode_splits;

  // Before MPI starts, as for a missing data file: a rank on a CPU without native bf16 ends the
  // job with the usage exit code instead of leaving the others waiting in a collective.
  use_precision(request.config.train.precision, "train.precision");

  std::unique_ptr<dist::Comm> comm = dist::make_comm();
  // A run asking for several ranks but started alone would train on one rank in silence.
  if (comm->size() == 1 && request.config.cluster.ranks > 1) {
    const std::string ranks = std::to_string(request.config.cluster.ranks);
    throw UsageError("cluster.ranks is " + ranks +
                     " but this process runs alone (no mpirun or srun started it): start it as "
                     "`mpirun -np " +
                     ranks + " attnlab train ...` (or `srun -n " + ranks +
                     "`, or through `attnlab sweep`), or train on one rank with --set "
                     "cluster.ranks=1, which the run records");
  }
  // A one-process run of several threads says so when other processes keep its cores busy (the
  // ranks of a multi-rank run start together and would count one another).
  if (comm->size() == 1 && request.config.cluster.threads_per_rank > 1) {
    const std::string shared = cluster::check_shared_cores(request.config.cluster.threads_per_rank,
                                                           std::chrono::milliseconds(200));
    if (!shared.empty()) std::fprintf(stderr, "attnlab: warning: %s\n", shared.c_str());
  }
  dist::AbortOnTerminate abort_on_terminate(*comm);
  return dist::run_or_abort(*comm, [&] { return run_training(request, *comm); });
}

const CommandRegistration kRegister{"train", "train one run (resumes an unfinished one)",
                                    &run_train};

}  // namespace
}  // namespace attnlab::cli
