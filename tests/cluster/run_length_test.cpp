// Expected run lengths (core/cluster/run_length.h) against hand-computed means, and the
// launcher's progress fraction against them.
#include "core/cluster/run_length.h"

#include <gtest/gtest.h>

#include "core/cluster/local_launcher.h"

namespace attnlab::cluster {
namespace {

config::SweepRun make_run(const std::string& row, int64_t cap, int64_t patience) {
  config::SweepRun run;
  run.row = row;
  run.id = row + std::to_string(patience);
  run.config.train.steps = cap;
  run.config.train.stop.patience = patience;
  return run;
}

RunProgress completed_at(int64_t step) {
  RunProgress progress;
  progress.exists = true;
  progress.state = RunState::kCompleted;
  progress.step = step;
  return progress;
}

TEST(RunLength, RunsWithAStopRuleTrainAsLongAsTheCompletedRunsOfTheirRowOrSweep) {
  config::Sweep sweep;
  sweep.runs = {make_run("a", 1000, 5), make_run("a", 1000, 5), make_run("a", 1000, 5),
                make_run("b", 4000, 5), make_run("b", 4000, 5), make_run("c", 1000, 0)};
  RunProgress running;
  running.exists = true;
  running.state = RunState::kRunning;
  running.step = 900;
  const std::vector<RunProgress> progress = {completed_at(400),  completed_at(600), running,
                                             completed_at(1000), RunProgress{},     RunProgress{}};
  const std::vector<ExpectedLength> lengths = expected_lengths(sweep, progress);
  ASSERT_EQ(lengths.size(), 6u);
  // Row a: the mean of its completed runs' last steps, (400 + 600) / 2, for every run of it.
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(lengths[i].steps, 500.0);
    EXPECT_EQ(lengths[i].source, ExpectedLength::Source::kRow);
  }
  // Row b has one completed run: 1000 steps of its cap of 4000.
  EXPECT_DOUBLE_EQ(lengths[4].steps, 1000.0);
  EXPECT_EQ(lengths[4].source, ExpectedLength::Source::kRow);
  // Row c has no stop rule: it trains to its cap whatever the others did.
  EXPECT_DOUBLE_EQ(lengths[5].steps, 1000.0);
  EXPECT_EQ(lengths[5].source, ExpectedLength::Source::kCap);
  EXPECT_EQ(describe_lengths(lengths, {2, 4, 5}),
            "2 run(s) as long as their row's completed runs, 1 run(s) to their cap (train.steps)");
}

TEST(RunLength, ARowWithoutCompletedRunsTakesTheSweepsFractionOfTheCap) {
  config::Sweep sweep;
  sweep.runs = {make_run("a", 1000, 5), make_run("b", 4000, 5), make_run("c", 2000, 5)};
  // a stopped at 0.4 of its cap, b at 0.1: c, with none of its own, expects 0.25 x 2000.
  const std::vector<RunProgress> progress = {completed_at(400), completed_at(400), RunProgress{}};
  const std::vector<ExpectedLength> lengths = expected_lengths(sweep, progress);
  EXPECT_DOUBLE_EQ(lengths[2].steps, 500.0);
  EXPECT_EQ(lengths[2].source, ExpectedLength::Source::kSweep);
  EXPECT_EQ(describe_lengths(lengths, {2}),
            "1 run(s) at 0.25 of their cap, as the sweep's completed runs");
  // Before anything completed every run expects its cap.
  const std::vector<ExpectedLength> fresh = expected_lengths(sweep, std::vector<RunProgress>(3));
  EXPECT_DOUBLE_EQ(fresh[1].steps, 4000.0);
  EXPECT_EQ(fresh[1].source, ExpectedLength::Source::kCap);
}

TEST(RunLength, TimeLeftIsTheRowsMeanTimeLessWhatARunHasDone) {
  auto completed = [](int64_t step, double seconds) {
    RunProgress progress = completed_at(step);
    progress.train_seconds = seconds;
    return progress;
  };
  RunProgress halfway;
  halfway.exists = true;
  halfway.state = RunState::kPreempted;
  halfway.step = 500;
  const TimeLeft left = time_left({{"a", completed(800, 100.0)},
                                   {"a", completed(1200, 300.0)},
                                   {"a", halfway},
                                   {"a", RunProgress{}},
                                   {"b", RunProgress{}}});
  // Row a: 200 s and 1000 steps per run on average; the stopped run did half of it.
  EXPECT_DOUBLE_EQ(left.seconds, 200.0 * 0.5 + 200.0);
  EXPECT_EQ(left.estimated, 2);
  EXPECT_EQ(left.unestimated, 1);
}

TEST(RunLength, LaunchOrderIsSeedBySeedResumedFirstThenLongestFirst) {
  // seed rank, started, work
  const std::vector<LaunchCandidate> candidates = {
      {1, false, 5.0}, {0, false, 1.0}, {0, false, 3.0}, {0, true, 0.5},
      {1, true, 1.0},  {0, false, 3.0}, {1, false, 9.0}};
  // Seed 0: the stopped run (3), then work 3 (2 before 5: ties keep the order), then 1 (1);
  // seed 1: the stopped run (4), then work 9 (6), then 5 (0).
  EXPECT_EQ(launch_order(candidates), (std::vector<size_t>{3, 2, 5, 1, 4, 6, 0}));
  EXPECT_TRUE(launch_order({}).empty());
}

TEST(RunLength, TheLaunchersFractionIsOfTheExpectedLength) {
  RunProgress progress;
  progress.exists = true;
  progress.step = 50;
  progress.total = 1000;
  EXPECT_DOUBLE_EQ(*progress_fraction(progress, 100.0), 0.5);
  EXPECT_DOUBLE_EQ(*progress_fraction(progress, 0.0), 0.05);  // no estimate: the cap
  progress.step = 150;
  EXPECT_DOUBLE_EQ(*progress_fraction(progress, 100.0), 1.0);  // past it: about to stop
  EXPECT_FALSE(progress_fraction(RunProgress{}, 100.0).has_value());
}

}  // namespace
}  // namespace attnlab::cluster
