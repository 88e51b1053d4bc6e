#include "core/cluster/run_progress.h"

#include <filesystem>
#include <fstream>

#include "core/cluster/local_launcher.h"
#include "core/util/dir_lock.h"
#include "core/util/exit_code.h"

namespace attnlab::cluster {
namespace fs = std::filesystem;

const EnumNames<RunState>& run_state_names() {
  static const EnumNames<RunState> names("run state", {{RunState::kNotStarted, "not started"},
                                                       {RunState::kRunning, "running"},
                                                       {RunState::kCompleted, "completed"},
                                                       {RunState::kFailed, "failed"},
                                                       {RunState::kPreempted, "preempted"},
                                                       {RunState::kInterrupted, "interrupted"},
                                                       {RunState::kDamaged, "damaged"}});
  return names;
}

RunState state_of(io::RunStatus status) {
  switch (status) {
    case io::RunStatus::running: return RunState::kRunning;
    case io::RunStatus::completed: return RunState::kCompleted;
    case io::RunStatus::failed: return RunState::kFailed;
    case io::RunStatus::preempted: return RunState::kPreempted;
  }
  return RunState::kFailed;
}

bool resumable(RunState state) {
  return state == RunState::kPreempted || state == RunState::kInterrupted;
}

RunProgress progress_of(const io::RunContents& run) {
  RunProgress progress;
  progress.exists = true;
  progress.state = state_of(run.status);
  for (const auto& [key, value] : run.config) {
    if (key == "train.steps") progress.total = std::stoll(value);
  }
  // A resumed run still holds the reason of its earlier stop until it ends again.
  if (run.status != io::RunStatus::running) progress.stop_reason = run.stop_reason();
  const auto failure = run.summary_texts.find(io::kFailureKey);
  if (run.status == io::RunStatus::failed && failure != run.summary_texts.end()) {
    progress.failure = failure->second;
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
  progress.pending_splits = run.pending_splits();
  if (!progress.pending_splits.empty()) progress.state = RunState::kRunning;
  return progress;
}

namespace {

// run.h5's status, step, train.steps and last dev metrics (exists = false without a readable file).
RunProgress read_run_file(const fs::path& path) {
  RunProgress progress;
  std::error_code error;
  if (!fs::exists(path, error)) return progress;
  try {
    progress = progress_of(io::read_run(path.string()));
  } catch (const std::exception& error) {
    // Being created right now (no complete file yet), or damaged: read_run_progress tells them
    // apart by the run directory's lock.
    progress = RunProgress{};
    progress.problem = error.what();
  }
  return progress;
}

}  // namespace

RunProgress read_run_progress(const std::string& run_dir) {
  RunProgress progress = read_run_file(fs::path(run_dir) / "run.h5");
  // A file that exists but cannot be read, with no trainer writing it, is damaged: `sweep`
  // relaunches the run, which keeps the file aside and resumes from its newest checkpoint.
  if (!progress.problem.empty() && directory_lock_holder(run_dir) == 0) {
    progress.state = RunState::kDamaged;
  }
  // "running" in the file is only true while a trainer holds the directory's lock.
  if (progress.state == RunState::kRunning) {
    const int64_t holder = directory_lock_holder(run_dir);
    progress.alive = holder != 0;
    if (holder == 0) progress.state = RunState::kInterrupted;
  }
  // A launch that ended in an error (not kExitOk, not kExitStopped) marks the run failed, even
  // when it failed before writing run.h5.
  std::ifstream last_exit(fs::path(run_dir) / kLastExitFile);
  int code = kExitOk;
  if (last_exit >> code) progress.exit_code = code;
  if (code != kExitOk && code != kExitStopped && progress.state != RunState::kCompleted &&
      !progress.alive) {
    progress.state = RunState::kFailed;
  }
  return progress;
}

}  // namespace attnlab::cluster
