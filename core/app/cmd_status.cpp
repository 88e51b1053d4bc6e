// `attnlab status runs/<sweep>`: one line per run (Slurm state when the sweep was submitted there,
// the run's own status, step/total, last dev perplexity and accuracy, and for a completed run
// how much its decoder attends to the source), a summary, and the run time left as the sweep's
// completed runs measured it.
#include "core/app/cmd_status.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>

#include "core/app/cli.h"
#include "core/cluster/local_launcher.h"
#include "core/cluster/records.h"
#include "core/cluster/run_length.h"
#include "core/cluster/slurm.h"
#include "core/io/run_log.h"
#include "core/util/dir_lock.h"

namespace attnlab::cli {
namespace fs = std::filesystem;

cluster::RunProgress progress_of(const io::RunContents& run) {
  cluster::RunProgress progress;
  progress.exists = true;
  progress.status = io::to_string(run.status);
  for (const auto& [key, value] : run.config) {
    if (key == "train.steps") progress.total = std::stoll(value);
  }
  const auto reason = run.summary_texts.find("stop_reason");
  // A resumed run still holds the reason of its earlier stop until it ends again.
  if (reason != run.summary_texts.end() && run.status != io::RunStatus::running) {
    progress.stop_reason = reason->second;
  }
  // A series a kill left half-defined: the run is damaged (a resume repairs it), never empty.
  for (const std::string& damage : run.damaged) {
    progress.problem += (progress.problem.empty() ? "" : "; ") + damage;
  }
  if (run.train.rows > 0) progress.step = static_cast<int64_t>(run.train.column("step").back());
  if (run.eval.rows > 0) {
    for (size_t c = 0; c < run.eval.columns.size(); ++c) {
      if (run.eval.columns[c] == "ppl") progress.dev_ppl = run.eval.values[c].back();
      if (run.eval.columns[c] == "accuracy") progress.dev_accuracy = run.eval.values[c].back();
    }
  }
  if (run.status != io::RunStatus::completed) return progress;
  // What a completed run's /summary says of it; /train logs every log.every steps, so its steps
  // say where it ended.
  auto summary = [&](const char* key) -> std::optional<double> {
    const auto found = run.summary_numbers.find(key);
    if (found == run.summary_numbers.end()) return std::nullopt;
    return found->second;
  };
  if (const auto steps = summary("steps")) progress.step = static_cast<int64_t>(*steps);
  progress.final_dev_ppl = summary("final_dev_ppl");
  progress.train_seconds = summary("train_seconds");
  progress.dev_cross_attention = summary("dev_cross_attention_entropy");
  return progress;
}

namespace {

// run.h5's status, step, train.steps and last dev metrics (exists = false without a readable file).
cluster::RunProgress read_run_file(const fs::path& path) {
  cluster::RunProgress progress;
  std::error_code error;
  if (!fs::exists(path, error)) return progress;
  try {
    progress = progress_of(io::read_run(path.string()));
  } catch (const std::exception& error) {
    // Being created right now (no complete file yet), or damaged: read_run_progress tells them
    // apart by the run directory's lock.
    progress = cluster::RunProgress{};
    progress.problem = error.what();
  }
  return progress;
}

}  // namespace

cluster::RunProgress read_run_progress(const std::string& run_dir) {
  cluster::RunProgress progress = read_run_file(fs::path(run_dir) / "run.h5");
  // A file that exists but cannot be read, with no trainer writing it, is damaged: `sweep`
  // relaunches the run, which keeps the file aside and resumes from its newest checkpoint.
  if (!progress.problem.empty() && directory_lock_holder(run_dir) == 0) {
    progress.status = "damaged";
  }
  // "running" in the file is only true while a trainer holds the directory's lock.
  if (progress.status == "running") {
    const int64_t holder = directory_lock_holder(run_dir);
    progress.alive = holder != 0;
    if (holder == 0) progress.status = "interrupted";
  }
  // A launch that ended in an error (not 0, not kExitStopped) marks the run failed, even when
  // it failed before writing run.h5.
  std::ifstream last_exit(fs::path(run_dir) / cluster::kLastExitFile);
  int code = 0;
  if (last_exit >> code) progress.exit_code = code;
  if (code != 0 && code != cluster::kExitStopped && progress.status != "completed" &&
      !progress.alive) {
    progress.status = "failed";
  }
  return progress;
}

std::string last_error_line(const std::string& log_path) {
  std::ifstream log(log_path);
  std::string line, last, error;
  while (std::getline(log, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last = line;
    if (line.find("error") != std::string::npos || line.find("failed") != std::string::npos ||
        line.find("Error") != std::string::npos) {
      error = line;
    }
  }
  return error.empty() ? last : error;
}

// The first rank the launcher reported lost, "rank 1 on node n2 (Killed)", or "": the rank whose
// end took the others with it (srun's or mpirun's own line in the task's train.log).
static std::string first_lost_rank(const std::string& log_path) {
  static const std::regex by_srun(R"(srun: error: (\S+): tasks? ([0-9,-]+): (.+))");
  static const std::regex by_mpirun(
      R"(process rank ([0-9]+) with PID [0-9]+ on node (\S+) exited on signal [0-9]+ \(([^)]+)\))");
  std::ifstream log(log_path);
  std::string line;
  std::smatch match;
  while (std::getline(log, line)) {
    if (std::regex_search(line, match, by_srun)) {
      return "rank " + match[2].str() + " on node " + match[1].str() + " (" + match[3].str() + ")";
    }
    if (std::regex_search(line, match, by_mpirun)) {
      return "rank " + match[1].str() + " on node " + match[2].str() + " (" + match[3].str() + ")";
    }
  }
  return "";
}

namespace {

std::string lower(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

int run_status(const std::vector<std::string>& args) {
  po::options_description options("status options");
  options.add_options()("dir", po::value<std::string>(),
                        "the sweep directory (runs/<sweep>), or one run's directory");
  po::positional_options_description positional;
  positional.add("dir", 1);
  po::variables_map values;
  if (!parse("status", "runs/<sweep> | RUN_DIR", args, options, positional, values)) {
    return kExitOk;
  }
  if (!values.count("dir")) throw UsageError("missing the sweep directory, e.g. runs/<sweep>");
  std::string dir = values["dir"].as<std::string>();
  std::vector<cluster::ManifestRun> runs;
  if (!fs::exists(fs::path(dir) / "manifest.yaml") && fs::exists(fs::path(dir) / "run.h5")) {
    // One run directory: the same line as in its sweep's table.
    fs::path run = fs::absolute(dir).lexically_normal();
    if (run.filename().empty()) run = run.parent_path();
    runs.push_back({run.filename().string(), run.filename().string(), "", run.filename().string()});
    dir = run.parent_path().string();
  } else {
    runs = cluster::read_manifest_runs(dir);
  }
  // The newest submission of each run and its array task's state.
  std::map<std::string, std::string> job_of_run;
  std::map<std::string, std::string> slurm_state;
  const std::vector<cluster::Submission> submissions = cluster::read_submissions(dir);
  const bool slurm = !submissions.empty() && cluster::slurm_installed();
  for (const cluster::Submission& submission : submissions) {
    const auto states =
        slurm ? cluster::array_task_states(submission.job_id) : std::map<int64_t, std::string>{};
    for (size_t task = 0; task < submission.run_ids.size(); ++task) {
      const std::string& id = submission.run_ids[task];
      job_of_run[id] = submission.job_id + "_" + std::to_string(task);
      const auto found = states.find(static_cast<int64_t>(task));
      slurm_state[id] = found == states.end() ? "" : found->second;
    }
  }

  size_t name_width = 4;
  for (const cluster::ManifestRun& run : runs) name_width = std::max(name_width, run.name.size());
  std::printf("%-13s %-*s %-11s %13s %-9s %9s %9s %8s%s\n", "id", static_cast<int>(name_width),
              "name", "state", "step", "stopped", "dev ppl", "accuracy", "src attn",
              slurm ? "  slurm task" : "");
  bool any_source_attention = false;
  std::map<std::string, int> counts;
  std::vector<std::pair<std::string, cluster::RunProgress>> row_progress;
  for (const cluster::ManifestRun& run : runs) {
    const cluster::RunProgress progress = read_run_progress((fs::path(dir) / run.id).string());
    row_progress.emplace_back(run.row, progress);
    const std::string state_in_slurm = slurm_state.count(run.id) ? slurm_state[run.id] : "";
    std::string state = progress.status.empty() ? "not started" : progress.status;
    if (state != "completed" && (cluster::slurm_state_active(state_in_slurm) ||
                                 cluster::slurm_state_failed(state_in_slurm))) {
      state = lower(state_in_slurm);  // pending, running, requeued, timeout, ...
    }
    ++counts[state];
    const std::string step =
        progress.exists ? std::to_string(progress.step) + "/" + std::to_string(progress.total)
                        : "-";
    char ppl[32] = "-";
    char accuracy[32] = "-";
    if (progress.dev_ppl) std::snprintf(ppl, sizeof(ppl), "%.3f", *progress.dev_ppl);
    if (progress.dev_accuracy) {
      std::snprintf(accuracy, sizeof(accuracy), "%.1f%%", 100.0 * *progress.dev_accuracy);
    }
    char source_attention[32] = "-";
    if (progress.dev_cross_attention) {
      std::snprintf(source_attention, sizeof(source_attention), "%.3f",
                    *progress.dev_cross_attention);
      any_source_attention = true;
    }
    std::string task = job_of_run.count(run.id) ? job_of_run[run.id] : "";
    if (!task.empty() && !state_in_slurm.empty()) task += " " + state_in_slurm;
    if (!task.empty()) task.insert(0, "  ");
    const std::string stopped = progress.stop_reason.empty() ? "-" : progress.stop_reason;
    std::printf("%-13s %-*s %-11s %13s %-9s %9s %9s %8s%s\n", run.id.c_str(),
                static_cast<int>(name_width), run.name.c_str(), state.c_str(), step.c_str(),
                stopped.c_str(), ppl, accuracy, source_attention, task.c_str());
  }
  if (any_source_attention) {
    std::printf(
        "src attn: decoder-encoder attention entropy over the dev set at the run's end, "
        "relative to uniform (1: the decoder ignores its source)\n");
  }
  // Why each run that did not finish stopped, and where to read more.
  bool header = false;
  for (const cluster::ManifestRun& run : runs) {
    const fs::path run_dir = fs::path(dir) / run.id;
    const cluster::RunProgress progress = read_run_progress(run_dir.string());
    const std::string slurm_text = slurm_state.count(run.id) ? slurm_state[run.id] : "";
    const bool stopped = progress.status == "failed" || progress.status == "preempted" ||
                         progress.status == "interrupted" || progress.status == "damaged" ||
                         cluster::slurm_state_failed(slurm_text);
    if (!stopped || progress.status == "completed") continue;
    if (!header) std::printf("\nwhy runs stopped:\n");
    header = true;
    const std::string log = (run_dir / "train.log").string();
    std::printf("  %s (%s): %s", run.name.c_str(), run.id.c_str(), progress.status.c_str());
    if (progress.exit_code != 0) std::printf(", exit %d", progress.exit_code);
    if (!slurm_text.empty()) std::printf(", Slurm %s", slurm_text.c_str());
    if (progress.status == "interrupted") {
      std::printf(" (run.h5 says running but no process holds the run; rerun the sweep to resume)");
    }
    if (progress.status == "damaged") {
      std::printf(" (run.h5: %s; the sweep resumes it from its newest intact checkpoint)",
                  progress.problem.c_str());
    }
    // A run stopped on request (attnlab cancel, scancel --signal, Slurm's time limit, Ctrl-C)
    // checkpointed and exited with kExitPreempted: the launcher's complaint about that exit code
    // (srun: error: ... Exited with exit code 3) is not an error of the run.
    const bool on_request = progress.status == "preempted";
    if (on_request) {
      std::printf(" (%s on request after a checkpoint at step %ld; the sweep resumes it there)",
                  slurm_text.rfind("CANCELLED", 0) == 0 ? "cancelled" : "stopped",
                  static_cast<long>(progress.step));
    }
    std::printf("\n");
    if (on_request && fs::exists(log)) {
      std::printf("    log:  %s\n", log.c_str());
    } else if (fs::exists(log)) {
      const std::string lost = first_lost_rank(log);
      if (!lost.empty()) std::printf("    first lost: %s\n", lost.c_str());
      std::printf("    last: %s\n    log:  %s\n", last_error_line(log).c_str(), log.c_str());
    }
  }
  if (header) std::printf("\n");
  std::string summary;
  for (const auto& [state, count] : counts) {
    summary += (summary.empty() ? "" : ", ") + std::to_string(count) + " " + state;
  }
  std::printf("%zu runs: %s\n", runs.size(), summary.c_str());
  const cluster::TimeLeft left = cluster::time_left(row_progress);
  if (left.estimated > 0) {
    std::printf("left: about %s of run time for %ld run(s), as their rows' completed runs took",
                cluster::format_duration(left.seconds).c_str(), static_cast<long>(left.estimated));
    if (left.unestimated > 0) {
      std::printf(", and %ld run(s) in rows with none completed yet",
                  static_cast<long>(left.unestimated));
    }
    std::printf(" (runs side by side share it; attnlab plan prices what is left)\n");
  }
  if (!submissions.empty() && !slurm) {
    std::printf("(Slurm is not installed here: states come from the runs' own files)\n");
  }
  return kExitOk;
}

const CommandRegistration kRegister{"status", "the state of every run of a sweep directory",
                                    &run_status};

}  // namespace
}  // namespace attnlab::cli
