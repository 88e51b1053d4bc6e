// `attnlab inspect RUN.h5|DIR`: what a run is and how far it got — config summary, status,
// steps, last and best metrics, and its checkpoints.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "core/app/cli.h"
#include "core/app/json_text.h"
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

// Every model.* key the run stored, as key=value, wrapped under the "model" label.
void print_model_keys(const io::RunContents& run) {
  constexpr size_t kWidth = 100;
  const std::string indent(19, ' ');
  std::string line = "  model            ";
  bool first = true;
  for (const auto& [name, value] : run.config) {
    if (name.rfind("model.", 0) != 0) continue;
    const std::string item = name.substr(6) + "=" + value;
    if (!first && line.size() + 1 + item.size() > kWidth) {
      std::printf("%s\n", line.c_str());
      line = indent;
      first = true;
    }
    line += (first ? "" : " ") + item;
    first = false;
  }
  std::printf("%s\n", line.c_str());
}

// The last step the run trained: /summary steps for a run that ended (a stop rule ends it
// between logged rows), else the newer of the last logged row and the newest checkpoint.
int64_t last_step(const io::RunContents& run, const io::CheckpointDir& checkpoints) {
  double step = run.train.rows > 0 ? run.train.column("step").back() : 0.0;
  const auto summary = run.summary_numbers.find("steps");
  if (summary != run.summary_numbers.end() && run.status != io::RunStatus::running) {
    step = std::max(step, summary->second);
  }
  const std::vector<int64_t> saved = checkpoints.steps();
  if (!saved.empty()) {
    step = std::max(step, static_cast<double>(*std::max_element(saved.begin(), saved.end())));
  }
  return static_cast<int64_t>(step);
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

std::string json_series(const io::SeriesData& series) {
  std::string out = "{";
  for (size_t c = 0; c < series.columns.size(); ++c) {
    out += (c ? ", " : "") + json_string(series.columns[c]) + ": [";
    for (size_t r = 0; r < series.values[c].size(); ++r) {
      out += (r ? ", " : "") + json_number(series.values[c][r]);
    }
    out += "]";
  }
  return out + "}";
}

// One JSON object: identity, status, flattened config, summary and the /train and /eval series.
std::string run_json(const io::RunContents& run, const std::string& path) {
  std::string out = "{\"path\": " + json_string(path) +
                    ", \"run_id\": " + json_string(run.info.run_id) +
                    ", \"sweep_id\": " + json_string(run.info.sweep_id) +
                    ", \"status\": " + json_string(io::run_status_names().name(run.status)) +
                    ", \"host\": " + json_string(run.info.host) +
                    ", \"git_commit\": " + json_string(run.info.git_commit) + ", \"config\": {";
  for (size_t i = 0; i < run.config.size(); ++i) {
    out += (i ? ", " : "") + json_string(run.config[i].first) + ": " +
           json_string(run.config[i].second);
  }
  out += "}, \"summary\": {";
  bool first = true;
  for (const auto& [name, value] : run.summary_numbers) {
    out += (first ? "" : ", ") + json_string(name) + ": " + json_number(value);
    first = false;
  }
  for (const auto& [name, value] : run.summary_texts) {
    out += (first ? "" : ", ") + json_string(name) + ": " + json_string(value);
    first = false;
  }
  auto json_list = [](const std::vector<std::string>& texts) {
    std::string list = "[";
    for (size_t i = 0; i < texts.size(); ++i) list += (i ? ", " : "") + json_string(texts[i]);
    return list + "]";
  };
  return out + "}, \"train\": " + json_series(run.train) + ", \"eval\": " + json_series(run.eval) +
         ", \"damaged\": " + json_list(run.damaged) + ", \"repairs\": " + json_list(run.repairs) +
         "}";
}

std::string series_csv(const io::SeriesData& series) {
  std::string out;
  for (size_t c = 0; c < series.columns.size(); ++c) out += (c ? "," : "") + series.columns[c];
  out += "\n";
  for (int64_t r = 0; r < series.rows; ++r) {
    for (size_t c = 0; c < series.columns.size(); ++c) {
      char text[40];
      std::snprintf(text, sizeof(text), "%.17g", series.values[c][static_cast<size_t>(r)]);
      out += (c ? "," : "") + std::string(text);
    }
    out += "\n";
  }
  return out;
}

int run_inspect(const std::vector<std::string>& args) {
  po::options_description options("inspect options");
  options.add_options()("run", po::value<std::string>(), "a run.h5 file or a run directory")(
      "json", "print the run as one JSON object (config, summary, /train and /eval series)")(
      "csv", po::value<std::string>(), "print the /train or /eval series as CSV (train|eval)");
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map values;
  if (!parse("inspect", "RUN.h5|RUN_DIR [--json | --csv train|eval]", args, options, positional,
             values))
    return kExitOk;
  if (!values.count("run")) throw UsageError("inspect needs a run file or directory");
  std::string path = values["run"].as<std::string>();
  std::string dir = fs::path(path).parent_path().string();
  if (fs::is_directory(path)) {
    dir = path;
    path = (fs::path(path) / "run.h5").string();
  }
  CHECK(fs::exists(path)) << path << ": no such run file";
  const io::RunContents run = io::read_run(path);
  if (values.count("json")) {
    std::printf("%s\n", run_json(run, path).c_str());
    return kExitOk;
  }
  if (values.count("csv")) {
    const std::string which = values["csv"].as<std::string>();
    if (which != "train" && which != "eval") {
      throw UsageError("--csv takes train or eval, got '" + which + "'");
    }
    std::fputs(series_csv(which == "train" ? run.train : run.eval).c_str(), stdout);
    return kExitOk;
  }

  std::printf("run %s  (%s)\n", run.info.run_id.c_str(), path.c_str());
  std::printf("  status           %s\n", io::run_status_names().name(run.status).c_str());
  for (const std::string& damage : run.damaged) {
    std::printf("  damaged          %s (a resume drops it and defines it again)\n", damage.c_str());
  }
  for (const std::string& repair : run.repairs) {
    std::printf("  repaired         %s\n", repair.c_str());
  }
  const auto failure = run.summary_texts.find("failure");
  if (failure != run.summary_texts.end() && run.status == io::RunStatus::failed) {
    std::printf("  failure          %s\n", failure->second.c_str());
  }
  if (!run.info.sweep_id.empty()) std::printf("  sweep            %s\n", run.info.sweep_id.c_str());
  std::printf("  created          %s on %s, attnlab %s (git %s)\n", run.info.created.c_str(),
              run.info.host.c_str(), run.info.attnlab_version.c_str(), run.info.git_commit.c_str());
  std::printf("  ranks x threads  %ld x %ld, seed %ld\n", static_cast<long>(run.info.world_size),
              static_cast<long>(run.info.threads), static_cast<long>(run.info.seed));
  std::printf("  task             %s\n", config_value(run, "data.task").c_str());
  print_model_keys(run);
  const io::CheckpointDir checkpoints((fs::path(dir) / "ckpt").string());
  std::printf("  steps            %ld of %s\n", static_cast<long>(last_step(run, checkpoints)),
              config_value(run, "train.steps").c_str());
  const std::optional<io::StopReason> reason = run.stop_reason();
  const std::string reason_name = reason ? io::stop_reason_names().name(*reason) : "";
  if (reason && run.status == io::RunStatus::running) {
    // A resumed run keeps its earlier stop's summary until it ends again (as status shows it).
    std::printf("  stopped by       - (running again since its stop by %s)\n", reason_name.c_str());
  } else if (reason) {
    std::printf("  stopped by       %s", reason_name.c_str());
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
