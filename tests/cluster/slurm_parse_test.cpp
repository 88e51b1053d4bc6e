// What the Slurm commands print, parsed into array task states; launch decisions from run and
// Slurm states; the submissions record round trip.
#include <gtest/gtest.h>

#include "cluster/cluster_testing.h"
#include "core/cluster/plan.h"
#include "core/cluster/records.h"
#include "core/cluster/slurm.h"
#include "core/util/check.h"
#include "core/util/clock.h"

namespace attnlab::cluster {
namespace {

TEST(SlurmParse, SqueueAndSacctLines) {
  std::map<int64_t, std::string> states;
  parse_task_lines("12",
                   "12_0|RUNNING\n12_[2-4,7%2]|PENDING\n13_1|RUNNING\n12|COMPLETED\n"
                   "12_1.batch|COMPLETED\n12_1|CANCELLED by 0\n",
                   states);
  const std::map<int64_t, std::string> expected = {{0, "RUNNING"}, {1, "CANCELLED"},
                                                   {2, "PENDING"}, {3, "PENDING"},
                                                   {4, "PENDING"}, {7, "PENDING"}};
  EXPECT_EQ(states, expected);
}

TEST(SlurmParse, ScontrolLinesOfOneArray) {
  // Trimmed lines of `scontrol show job 6 -o` (Slurm 22.05): the not yet started tasks share a
  // line with a range, each started task has its own.
  const std::string text =
      "JobId=6 ArrayJobId=6 ArrayTaskId=2-3%2 ArrayTaskThrottle=2 JobName=a JobState=PENDING "
      "Reason=JobArrayTaskLimit\n"
      "JobId=8 ArrayJobId=6 ArrayTaskId=1 JobName=a JobState=RUNNING Reason=None\n"
      "JobId=7 ArrayJobId=6 ArrayTaskId=0 JobName=a JobState=COMPLETED Reason=None\n"
      "JobId=9 ArrayJobId=60 ArrayTaskId=0 JobName=a JobState=FAILED Reason=None\n";
  std::map<int64_t, std::string> states;
  parse_scontrol_lines("6", text, states);
  const std::map<int64_t, std::string> expected = {
      {0, "COMPLETED"}, {1, "RUNNING"}, {2, "PENDING"}, {3, "PENDING"}};
  EXPECT_EQ(states, expected);
}

TEST(SlurmStates, Classes) {
  for (const char* state : {"PENDING", "RUNNING", "REQUEUED", "COMPLETING", "SUSPENDED"}) {
    EXPECT_TRUE(slurm_state_active(state)) << state;
    EXPECT_FALSE(slurm_state_failed(state)) << state;
  }
  for (const char* state : {"FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}) {
    EXPECT_TRUE(slurm_state_failed(state)) << state;
    EXPECT_FALSE(slurm_state_active(state)) << state;
  }
  for (const char* state : {"COMPLETED", "CANCELLED", "PREEMPTED", ""}) {
    EXPECT_FALSE(slurm_state_failed(state)) << state;
    EXPECT_FALSE(slurm_state_active(state)) << state;
  }
}

RunProgress with_status(const std::string& state) {
  RunProgress progress;
  progress.exists = true;
  progress.state = run_state_names().parse(state);
  return progress;
}

TEST(Plan, Decisions) {
  const RunProgress none;
  EXPECT_EQ(decide(none, "", false), Decision::kLaunch);
  EXPECT_EQ(decide(with_status("completed"), "", false), Decision::kSkipCompleted);
  EXPECT_EQ(decide(with_status("completed"), "FAILED", true), Decision::kSkipCompleted);
  EXPECT_EQ(decide(with_status("preempted"), "", false), Decision::kLaunch);
  EXPECT_EQ(decide(with_status("interrupted"), "", false), Decision::kLaunch);  // killed: resume
  RunProgress live = with_status("running");
  live.alive = true;  // a trainer holds its directory: never a second one
  EXPECT_EQ(decide(live, "", false), Decision::kSkipRunning);
  EXPECT_EQ(decide(live, "", true), Decision::kSkipRunning);
  EXPECT_EQ(decide(with_status("running"), "RUNNING", false), Decision::kSkipActive);
  EXPECT_EQ(decide(none, "PENDING", true), Decision::kSkipActive);
  EXPECT_EQ(decide(with_status("failed"), "", false), Decision::kSkipFailed);
  EXPECT_EQ(decide(with_status("failed"), "", true), Decision::kLaunch);
  EXPECT_EQ(decide(with_status("preempted"), "TIMEOUT", false), Decision::kSkipFailed);
  EXPECT_EQ(decide(none, "CANCELLED", false), Decision::kLaunch);
  RunProgress crashed_before_its_log;  // no run.h5, but its last launch exited 1
  crashed_before_its_log.state = RunState::kFailed;
  EXPECT_EQ(decide(crashed_before_its_log, "", false), Decision::kSkipFailed);
  EXPECT_EQ(decide(crashed_before_its_log, "", true), Decision::kLaunch);
}

TEST(Records, SubmissionsRoundTrip) {
  testing::TempDir dir;
  EXPECT_TRUE(read_submissions(dir.path()).empty());
  append_submission(
      dir.path(),
      Submission{
          "41", "slurm/array-1.sbatch", "2024-01-01T00:00:00Z", {"aaaaaaaaaaaa", "bbbbbbbbbbbb"}});
  append_submission(dir.path(),
                    Submission{"45", "slurm/array-2.sbatch", utc_now(), {"bbbbbbbbbbbb"}});
  const std::vector<Submission> all = read_submissions(dir.path());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].job_id, "41");
  EXPECT_EQ(all[0].script, "slurm/array-1.sbatch");
  EXPECT_EQ(all[0].submitted, "2024-01-01T00:00:00Z");
  EXPECT_EQ(all[0].run_ids, (std::vector<std::string>{"aaaaaaaaaaaa", "bbbbbbbbbbbb"}));
  EXPECT_EQ(all[1].job_id, "45");
  EXPECT_EQ(all[1].submitted.size(), 20u);
}

TEST(Records, ManifestRunsAndAMissingManifest) {
  testing::TempDir dir;
  EXPECT_THROW(read_manifest_runs(dir.path()), Error);
  testing::write_text(dir.path() + "/manifest.yaml",
                      "sweep: s\nsource: s.yaml\nsets: []\nruns:\n"
                      "  - id: \"0123456789ab\"\n    name: a.seed1\n    group: A\n    seed: 1\n"
                      "    overrides: {}\n"
                      "  - id: \"0123456789ac\"\n    name: b.norm-pre.seed12\n    group: B\n"
                      "    seed: 12\n    overrides: {}\n");
  const std::vector<ManifestRun> runs = read_manifest_runs(dir.path());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, "0123456789ab");
  EXPECT_EQ(runs[0].name, "a.seed1");
  EXPECT_EQ(runs[0].group, "A");
  EXPECT_EQ(runs[0].row, "a");  // the name without its seed
  EXPECT_EQ(runs[1].row, "b.norm-pre");
}

}  // namespace
}  // namespace attnlab::cluster
