// read_run_progress: what a run directory's run.h5, lock and last_exit say, as one typed state.
#include "core/cluster/run_progress.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/cluster/local_launcher.h"
#include "core/io/h5.h"
#include "core/util/exit_code.h"
#include "tests/cluster/cluster_testing.h"

namespace attnlab::cluster {
namespace {

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

io::RunLog new_log(const std::string& dir) {
  io::RunInfo info;
  info.run_id = "r";
  return io::RunLog::create(dir + "/run.h5", info, {{"train.steps", "40"}});
}

TEST(RunProgress, EveryStateFromTheRunDirectory) {
  testing::TempDir dir;
  EXPECT_EQ(read_run_progress(dir.path()).state, RunState::kNotStarted);
  EXPECT_FALSE(read_run_progress(dir.path()).exists);
  {
    io::RunLog log = new_log(dir.path());
    log.append_train({{"step", 10.0}, {"loss", 2.0}});
    // Written "running" and no process holds the directory's lock: the trainer is gone.
    const RunProgress interrupted = read_run_progress(dir.path());
    EXPECT_EQ(interrupted.state, RunState::kInterrupted);
    EXPECT_FALSE(interrupted.alive);
    EXPECT_EQ(interrupted.step, 10);
    EXPECT_EQ(interrupted.total, 40);
    EXPECT_FALSE(interrupted.stop_reason.has_value());
    log.set_stop_reason(io::StopReason::kPreempted);
    log.set_status(io::RunStatus::preempted);
  }
  const RunProgress preempted = read_run_progress(dir.path());
  EXPECT_EQ(preempted.state, RunState::kPreempted);
  EXPECT_EQ(preempted.stop_reason, io::StopReason::kPreempted);
  EXPECT_TRUE(resumable(preempted.state));
  // A launch record of a stop request keeps it resumable; one of an error makes it failed.
  write_text(dir.path() + "/" + kLastExitFile, std::to_string(kExitStopped) + "\n");
  EXPECT_EQ(read_run_progress(dir.path()).state, RunState::kPreempted);
  write_text(dir.path() + "/" + kLastExitFile, std::to_string(kExitFailure) + "\n");
  EXPECT_EQ(read_run_progress(dir.path()).state, RunState::kFailed);
  EXPECT_EQ(read_run_progress(dir.path()).exit_code, kExitFailure);
  EXPECT_EQ(read_run_progress(dir.path()).failure, "");  // the file says nothing of it
  {
    io::RunLog log = io::RunLog::resume(dir.path() + "/run.h5", 10);
    log.set_summary(io::kFailureKey, "non-finite value at step 11: loss is nan");
    log.set_status(io::RunStatus::failed);
  }
  EXPECT_EQ(read_run_progress(dir.path()).state, RunState::kFailed);
  EXPECT_EQ(read_run_progress(dir.path()).failure, "non-finite value at step 11: loss is nan");
  {
    io::RunLog log = io::RunLog::resume(dir.path() + "/run.h5", 10);
    log.set_summary("steps", 30.0);
    log.set_summary("final_dev_ppl", 7.5);
    log.set_stop_reason(io::StopReason::kPatience);
    log.set_status(io::RunStatus::completed);
  }
  // Completed wins over an earlier launch's error.
  const RunProgress completed = read_run_progress(dir.path());
  EXPECT_EQ(completed.state, RunState::kCompleted);
  EXPECT_EQ(completed.stop_reason, io::StopReason::kPatience);
  EXPECT_EQ(completed.step, 30);
  EXPECT_EQ(completed.final_dev_ppl, 7.5);
  EXPECT_EQ(run_state_names().name(completed.state), "completed");

  testing::TempDir damaged;
  write_text(damaged.path() + "/run.h5", "not an HDF5 file\n");
  const RunProgress unreadable = read_run_progress(damaged.path());
  EXPECT_EQ(unreadable.state, RunState::kDamaged);
  EXPECT_NE(unreadable.problem.find("run.h5"), std::string::npos) << unreadable.problem;
}

// A completed run with eval.decode_splits: `attnlab train` decodes them after writing
// "completed", so until each /eval_<split> scored the final parameters the run is not done.
void write_completed(const std::string& dir, const std::string& checkpoint) {
  io::RunInfo info;
  info.run_id = "r";
  io::RunLog log = io::RunLog::create(dir + "/run.h5", info,
                                      {{"train.steps", "40"},
                                       {"eval.decode_splits", "[dev, test]"},
                                       {"eval.checkpoint", checkpoint}});
  log.append_train({{"step", 40.0}, {"loss", 2.0}});
  log.set_summary("steps", 40.0);
  log.set_summary("best_step", 25.0);
  log.set_stop_reason(io::StopReason::kSteps);
  log.set_status(io::RunStatus::completed);
}

void write_decoded(const std::string& dir, const std::string& split, int64_t step) {
  h5::File file = h5::File::open_unlocked(dir + "/run.h5", h5::Access::write);
  file.root().require_group("eval_" + split).set_int("step", step);
}

TEST(RunProgress, ACompletedRunIsDoneOnlyOnceItsSplitsAreDecoded) {
  testing::TempDir dir;
  write_completed(dir.path(), "newest");
  // Killed before decoding anything: the file says completed, the run is not done; with no
  // trainer left it is interrupted, which a sweep trains again (and that decodes the splits).
  RunProgress progress = read_run_progress(dir.path());
  EXPECT_EQ(progress.state, RunState::kInterrupted);
  EXPECT_TRUE(resumable(progress.state));
  EXPECT_EQ(progress.pending_splits, (std::vector<std::string>{"dev", "test"}));
  EXPECT_EQ(progress_of(io::read_run(dir.path() + "/run.h5")).state, RunState::kRunning);
  write_decoded(dir.path(), "dev", 40);
  // A group that scored other parameters, or one a kill left without its step, does not count.
  write_decoded(dir.path(), "test", 30);
  {
    h5::File file = h5::File::open_unlocked(dir.path() + "/run.h5", h5::Access::write);
    file.root().require_group("eval_other");
  }
  progress = read_run_progress(dir.path());
  EXPECT_EQ(progress.state, RunState::kInterrupted);
  EXPECT_EQ(progress.pending_splits, (std::vector<std::string>{"test"}));
  // A decoding that ended in an error is a failed run, as a failed launch always is.
  write_text(dir.path() + "/" + kLastExitFile, std::to_string(kExitFailure) + "\n");
  EXPECT_EQ(read_run_progress(dir.path()).state, RunState::kFailed);
  write_decoded(dir.path(), "test", 40);
  progress = read_run_progress(dir.path());
  EXPECT_EQ(progress.state, RunState::kCompleted);
  EXPECT_TRUE(progress.pending_splits.empty());

  // eval.checkpoint best: the final parameters are those of best_step.
  testing::TempDir best;
  write_completed(best.path(), "best");
  write_decoded(best.path(), "dev", 40);
  write_decoded(best.path(), "test", 25);
  EXPECT_EQ(read_run_progress(best.path()).pending_splits, (std::vector<std::string>{"dev"}));
  write_decoded(best.path(), "dev", 25);
  EXPECT_EQ(read_run_progress(best.path()).state, RunState::kCompleted);
}

TEST(RunProgress, StateNames) {
  EXPECT_EQ(run_state_names().choices(),
            "not started | running | completed | failed | preempted | interrupted | damaged");
  for (io::RunStatus status : {io::RunStatus::running, io::RunStatus::completed,
                               io::RunStatus::failed, io::RunStatus::preempted}) {
    // The file's status names are the state names of the same meaning.
    EXPECT_EQ(run_state_names().name(state_of(status)), io::run_status_names().name(status));
  }
}

}  // namespace
}  // namespace attnlab::cluster
