// `attnlab status runs/<sweep>`: one line per run (Slurm state when the sweep was submitted there,
// the run's own status, step/total, last dev perplexity and accuracy, and for a completed run
// how much its decoder attends to the source), a summary, and the run time left as the sweep's
// completed runs measured it.
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
#include "core/cluster/run_progress.h"
#include "core/cluster/slurm.h"

namespace attnlab::cli {
namespace fs = std::filesystem;
namespace {

// The last line of a run's train.log that reports an error, else its last line.
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
std::string first_lost_rank(const std::string& log_path) {
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

std::string lower(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

// The runs `status DIR` reports and the sweep directory they are in: a sweep's manifest, or one
// run's directory (the same line as in its sweep's table).
struct StatusTarget {
  std::string sweep_dir;
  std::vector<cluster::ManifestRun> runs;
};

StatusTarget status_target(std::string dir) {
  StatusTarget target;
  if (!fs::exists(fs::path(dir) / "manifest.yaml") && fs::exists(fs::path(dir) / "run.h5")) {
    fs::path run = fs::absolute(dir).lexically_normal();
    if (run.filename().empty()) run = run.parent_path();
    target.runs.push_back(
        {run.filename().string(), run.filename().string(), "", run.filename().string()});
    target.sweep_dir = run.parent_path().string();
  } else {
    target.runs = cluster::read_manifest_runs(dir);
    target.sweep_dir = std::move(dir);
  }
  return target;
}

// What Slurm says of the sweep's runs: the newest submission of each run and its array task's
// state ("" when Slurm no longer knows it or is not installed here).
struct SlurmView {
  bool submitted = false;                          // the sweep was submitted to Slurm at some point
  bool queried = false;                            // ... and Slurm is installed here to ask
  std::map<std::string, std::string> task_of_run;  // run id -> "<job>_<task>"
  std::map<std::string, std::string> state_of_run;  // run id -> "RUNNING", "FAILED", ...
  std::string state(const std::string& run_id) const {
    const auto found = state_of_run.find(run_id);
    return found == state_of_run.end() ? "" : found->second;
  }
};

SlurmView slurm_view(const std::string& sweep_dir) {
  SlurmView view;
  const std::vector<cluster::Submission> submissions = cluster::read_submissions(sweep_dir);
  view.submitted = !submissions.empty();
  view.queried = view.submitted && cluster::slurm_installed();
  for (const cluster::Submission& submission : submissions) {
    const auto states = view.queried ? cluster::array_task_states(submission.job_id)
                                     : std::map<int64_t, std::string>{};
    for (size_t task = 0; task < submission.run_ids.size(); ++task) {
      const std::string& id = submission.run_ids[task];
      view.task_of_run[id] = submission.job_id + "_" + std::to_string(task);
      const auto found = states.find(static_cast<int64_t>(task));
      view.state_of_run[id] = found == states.end() ? "" : found->second;
    }
  }
  return view;
}

// The state shown for a run: its own, unless Slurm holds or failed a run that did not complete.
std::string shown_state(const cluster::RunProgress& progress, const std::string& slurm_state) {
  if (progress.state != cluster::RunState::kCompleted &&
      (cluster::slurm_state_active(slurm_state) || cluster::slurm_state_failed(slurm_state))) {
    return lower(slurm_state);  // pending, running, requeued, timeout, ...
  }
  return cluster::run_state_names().name(progress.state);
}

// `value` printed with `format`, "-" when there is none.
std::string formatted(const char* format, const std::optional<double>& value, double scale = 1.0) {
  if (!value.has_value()) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), format, scale * value.value());
  return text;
}

// One line per run; returns how many runs are in each shown state.
std::map<std::string, int> print_run_table(const StatusTarget& target, const SlurmView& slurm,
                                           const std::vector<cluster::RunProgress>& progress) {
  size_t name_width = 4;
  for (const cluster::ManifestRun& run : target.runs) {
    name_width = std::max(name_width, run.name.size());
  }
  const int width = static_cast<int>(name_width);
  std::printf("%-13s %-*s %-11s %13s %-9s %9s %9s %8s%s\n", "id", width, "name", "state", "step",
              "stopped", "dev ppl", "accuracy", "src attn", slurm.queried ? "  slurm task" : "");
  std::map<std::string, int> counts;
  bool any_source_attention = false;
  for (size_t i = 0; i < target.runs.size(); ++i) {
    const cluster::ManifestRun& run = target.runs[i];
    const cluster::RunProgress& p = progress[i];
    const std::string state_in_slurm = slurm.state(run.id);
    const std::string state = shown_state(p, state_in_slurm);
    ++counts[state];
    const std::string step =
        p.exists ? std::to_string(p.step) + "/" + std::to_string(p.total) : "-";
    any_source_attention = any_source_attention || p.dev_cross_attention.has_value();
    const auto task_found = slurm.task_of_run.find(run.id);
    std::string task = task_found == slurm.task_of_run.end() ? "" : task_found->second;
    if (!task.empty() && !state_in_slurm.empty()) task += " " + state_in_slurm;
    if (!task.empty()) task.insert(0, "  ");
    const std::string stopped = p.stop_reason ? io::stop_reason_names().name(*p.stop_reason) : "-";
    std::printf("%-13s %-*s %-11s %13s %-9s %9s %9s %8s%s\n", run.id.c_str(), width,
                run.name.c_str(), state.c_str(), step.c_str(), stopped.c_str(),
                formatted("%.3f", p.dev_ppl).c_str(),
                formatted("%.1f%%", p.dev_accuracy, 100.0).c_str(),
                formatted("%.3f", p.dev_cross_attention).c_str(), task.c_str());
  }
  if (any_source_attention) {
    std::printf(
        "src attn: decoder-encoder attention entropy over the dev set at the run's end, "
        "relative to uniform (1: the decoder ignores its source)\n");
  }
  return counts;
}

// Why one run that did not finish stopped, and where to read more.
void print_why_stopped(const cluster::ManifestRun& run, const fs::path& run_dir,
                       const cluster::RunProgress& progress, const std::string& slurm_state) {
  using cluster::RunState;
  const std::string log = (run_dir / "train.log").string();
  std::printf("  %s (%s): %s", run.name.c_str(), run.id.c_str(),
              cluster::run_state_names().name(progress.state).c_str());
  if (progress.exit_code != kExitOk) std::printf(", exit %d", progress.exit_code);
  if (!slurm_state.empty()) std::printf(", Slurm %s", slurm_state.c_str());
  if (progress.state == RunState::kInterrupted) {
    std::printf(" (run.h5 says running but no process holds the run; rerun the sweep to resume)");
  }
  if (progress.state == RunState::kDamaged) {
    std::printf(" (run.h5: %s; the sweep resumes it from its newest intact checkpoint)",
                progress.problem.c_str());
  }
  // A run stopped on request (attnlab cancel, scancel --signal, Slurm's time limit, Ctrl-C)
  // checkpointed and exited with kExitStopped: the launcher's complaint about that exit code
  // (srun: error: ... Exited with exit code 3) is not an error of the run.
  const bool on_request = progress.state == RunState::kPreempted;
  if (on_request) {
    std::printf(" (%s on request after a checkpoint at step %ld; the sweep resumes it there)",
                slurm_state.rfind("CANCELLED", 0) == 0 ? "cancelled" : "stopped",
                static_cast<long>(progress.step));
  }
  std::printf("\n");
  if (on_request) {
    if (fs::exists(log)) std::printf("    log:  %s\n", log.c_str());
    return;
  }
  const bool has_log = fs::exists(log);
  if (has_log) {
    const std::string lost = first_lost_rank(log);
    if (!lost.empty()) std::printf("    first lost: %s\n", lost.c_str());
  }
  // What failed: the run's own record in run.h5 when it wrote one, else the log's last error
  // line (a run that failed before it could write run.h5, or was killed).
  if (!progress.failure.empty()) {
    std::printf("    failure: %s\n", progress.failure.c_str());
  } else if (has_log) {
    std::printf("    last: %s\n", last_error_line(log).c_str());
  }
  if (has_log) std::printf("    log:  %s\n", log.c_str());
}

bool stopped_early(const cluster::RunProgress& progress, const std::string& slurm_state) {
  using cluster::RunState;
  if (progress.state == RunState::kCompleted) return false;
  return progress.state == RunState::kFailed || progress.state == RunState::kPreempted ||
         progress.state == RunState::kInterrupted || progress.state == RunState::kDamaged ||
         cluster::slurm_state_failed(slurm_state);
}

// The count of runs per state and the run time left as the rows' completed runs measured it.
void print_totals(const StatusTarget& target, const SlurmView& slurm,
                  const std::map<std::string, int>& counts,
                  const std::vector<cluster::RunProgress>& progress) {
  std::string summary;
  for (const auto& [state, count] : counts) {
    summary += (summary.empty() ? "" : ", ") + std::to_string(count) + " " + state;
  }
  std::printf("%zu runs: %s\n", target.runs.size(), summary.c_str());
  std::vector<std::pair<std::string, cluster::RunProgress>> row_progress;
  for (size_t i = 0; i < target.runs.size(); ++i) {
    row_progress.emplace_back(target.runs[i].row, progress[i]);
  }
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
  if (slurm.submitted && !slurm.queried) {
    std::printf("(Slurm is not installed here: states come from the runs' own files)\n");
  }
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
  const StatusTarget target = status_target(values["dir"].as<std::string>());
  const SlurmView slurm = slurm_view(target.sweep_dir);
  std::vector<cluster::RunProgress> progress;
  for (const cluster::ManifestRun& run : target.runs) {
    progress.push_back(cluster::read_run_progress((fs::path(target.sweep_dir) / run.id).string()));
  }
  const std::map<std::string, int> counts = print_run_table(target, slurm, progress);
  bool header = false;
  for (size_t i = 0; i < target.runs.size(); ++i) {
    const cluster::ManifestRun& run = target.runs[i];
    if (!stopped_early(progress[i], slurm.state(run.id))) continue;
    if (!header) std::printf("\nwhy runs stopped:\n");
    header = true;
    print_why_stopped(run, fs::path(target.sweep_dir) / run.id, progress[i], slurm.state(run.id));
  }
  if (header) std::printf("\n");
  print_totals(target, slurm, counts, progress);
  return kExitOk;
}

const CommandRegistration kRegister{"status", "the state of every run of a sweep directory",
                                    &run_status};

}  // namespace
}  // namespace attnlab::cli
