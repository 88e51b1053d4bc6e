// `attnlab inspect RUN.h5|DIR`: what a run is and how far it got — config summary, status,
// steps, last and best metrics, and its checkpoints.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/app/cli.h"
#include "core/io/checkpoint_dir.h"
#include "core/io/run_log.h"
#include "core/util/check.h"

namespace attnlab::cli {
namespace {

namespace fs = std::filesystem;

std::string config_value(const io::RunContents& run, const std::string& key) {
  for (const auto& [name, value] : run.config) {
    if (name == key) return value;
  }
  return "?";
}

// "last 1.2345 (step 800), best 1.1000 (step 600)" for one eval or train column.
void print_metric(const io::SeriesData& series, const std::string& column, bool lower_is_better) {
  if (series.rows == 0) return;
  const auto present = std::find(series.columns.begin(), series.columns.end(), column);
  if (present == series.columns.end()) return;
  const std::vector<double>& values = series.column(column);
  const std::vector<double>& steps = series.column("step");
  size_t best = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    if (lower_is_better ? values[i] < values[best] : values[i] > values[best]) best = i;
  }
  std::printf("  %-16s last %.4f (step %.0f), best %.4f (step %.0f)\n", column.c_str(),
              values.back(), steps.back(), values[best], steps[best]);
}

int run_inspect(const std::vector<std::string>& args) {
  po::options_description options("inspect options");
  options.add_options()("run", po::value<std::string>(), "a run.h5 file or a run directory");
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map values;
  if (!parse("inspect", "RUN.h5|RUN_DIR", args, options, positional, values)) return kExitOk;
  if (!values.count("run")) throw UsageError("inspect needs a run file or directory");
  std::string path = values["run"].as<std::string>();
  std::string dir = fs::path(path).parent_path().string();
  if (fs::is_directory(path)) {
    dir = path;
    path = (fs::path(path) / "run.h5").string();
  }
  CHECK(fs::exists(path)) << path << ": no such run file";
  const io::RunContents run = io::read_run(path);

  std::printf("run %s  (%s)\n", run.info.run_id.c_str(), path.c_str());
  std::printf("  status           %s\n", io::to_string(run.status));
  if (!run.info.sweep_id.empty()) std::printf("  sweep            %s\n", run.info.sweep_id.c_str());
  std::printf("  created          %s on %s, attnlab %s (git %s)\n", run.info.created.c_str(),
              run.info.host.c_str(), run.info.attnlab_version.c_str(), run.info.git_commit.c_str());
  std::printf("  ranks x threads  %ld x %ld, seed %ld\n", static_cast<long>(run.info.world_size),
              static_cast<long>(run.info.threads), static_cast<long>(run.info.seed));
  std::printf("  task             %s\n", config_value(run, "data.task").c_str());
  std::printf(
      "  model            N=%s+%s d_model=%s d_ff=%s h=%s d_k=%s d_v=%s norm=%s "
      "positions=%s scale=%s\n",
      config_value(run, "model.encoder_layers").c_str(),
      config_value(run, "model.decoder_layers").c_str(), config_value(run, "model.d_model").c_str(),
      config_value(run, "model.d_ff").c_str(), config_value(run, "model.heads").c_str(),
      config_value(run, "model.d_k").c_str(), config_value(run, "model.d_v").c_str(),
      config_value(run, "model.norm").c_str(), config_value(run, "model.positions").c_str(),
      config_value(run, "model.attention_scale").c_str());
  const double last_step = run.train.rows > 0 ? run.train.column("step").back() : 0.0;
  std::printf("  steps            %.0f of %s\n", last_step,
              config_value(run, "train.steps").c_str());
  const auto reason = run.summary_texts.find("stop_reason");
  if (reason != run.summary_texts.end()) {
    std::printf("  stopped by       %s", reason->second.c_str());
    const auto epochs = run.summary_numbers.find("epochs");
    if (epochs != run.summary_numbers.end()) std::printf(" after %.2f epochs", epochs->second);
    const auto final_checkpoint = run.summary_texts.find("final_checkpoint");
    if (final_checkpoint != run.summary_texts.end()) {
      std::printf("; final evaluation on the %s parameters", final_checkpoint->second.c_str());
    }
    std::printf("\n");
  }
  std::printf("metrics\n");
  print_metric(run.train, "loss", true);
  print_metric(run.eval, "ppl", true);
  print_metric(run.eval, "accuracy", false);
  print_metric(run.eval, "bleu", false);
  if (!run.summary_numbers.empty()) {
    std::printf("summary\n");
    for (const auto& [name, value] : run.summary_numbers) {
      std::printf("  %-28s %.6g\n", name.c_str(), value);
    }
  }
  const io::CheckpointDir checkpoints((fs::path(dir) / "ckpt").string());
  const std::vector<int64_t> steps = checkpoints.steps();
  const fs::path best = fs::path(dir) / "ckpt" / "best.h5";
  const bool has_best = fs::exists(best);
  std::printf("checkpoints (%zu)\n", steps.size() + (has_best ? 1 : 0));
  for (int64_t step : steps) {
    std::printf("  %s%s\n", checkpoints.path_for(step).c_str(),
                checkpoints.is_kept(step) ? "  (kept)" : "");
  }
  if (has_best) std::printf("  %s  (best dev loss)\n", best.string().c_str());
  return kExitOk;
}

const CommandRegistration kRegister{
    "inspect", "summarise a run: config, status, steps, last/best metrics, checkpoints",
    &run_inspect};

}  // namespace
}  // namespace attnlab::cli
