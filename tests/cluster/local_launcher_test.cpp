// The local launcher with stand-in commands: outcomes by exit code, the core budget, logs, the
// train command line; the OpenBLAS kernel choice against cluster/env.sh on the same cpuinfo.
#include "core/cluster/local_launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "cluster/cluster_testing.h"
#include "core/cluster/environment.h"

namespace attnlab::cluster {
namespace {
namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;

// A run whose command is a shell line (the run directory is $1).
LocalRun shell_run(const TempDir& root, const std::string& name, const std::string& line,
                   int64_t cores = 1) {
  LocalRun run;
  run.id = name;
  run.name = name;
  run.dir = root.path() + "/" + name;
  fs::create_directories(run.dir);
  run.command = {"bash", "-c", line, "run", run.dir};
  run.env = {{"ATTNLAB_TEST_VALUE", "from-env"}};
  run.cores = cores;
  return run;
}

TEST(LocalLauncher, OutcomesFollowExitCodesAndOutputGoesToTheLog) {
  TempDir root;
  const std::vector<LocalRun> runs = {
      shell_run(root, "good", "echo \"hello $ATTNLAB_TEST_VALUE\"; echo oops >&2"),
      shell_run(root, "bad", "exit 1"), shell_run(root, "stopped", "exit 3")};
  LocalOptions options;
  options.cores = 2;
  std::ostringstream out;
  const LocalResult result = run_local(runs, options, out);
  EXPECT_EQ(result.completed, std::vector<std::string>{"good"});
  EXPECT_EQ(result.preempted, std::vector<std::string>{"stopped"});
  ASSERT_EQ(result.failed.size(), 1u);
  EXPECT_NE(result.failed[0].find("bad (exit 1, see "), std::string::npos);
  EXPECT_FALSE(result.interrupted);
  EXPECT_EQ(read_text(runs[0].dir + "/train.log"), "hello from-env\noops\n");
  EXPECT_NE(out.str().find("FAILED bad with exit code 1"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("1/3 done, 0 running, 1 failed, 1 stopped"), std::string::npos)
      << out.str();
}

// Ctrl-C while a run is still starting (no USR1 handler yet, so the forwarded USR1 kills it):
// the run is stopped, to be resumed, not failed, and the queued run never starts.
TEST(LocalLauncher, ARunKilledByTheForwardedStopIsStoppedNotFailed) {
  TempDir root;
  const std::vector<LocalRun> runs = {
      shell_run(root, "starting", "touch \"$1/started\"; for _ in $(seq 100); do sleep 0.1; done"),
      shell_run(root, "queued", "true")};
  LocalOptions options;
  options.cores = 8;
  options.max_parallel = 1;
  std::thread interrupter([&] {
    for (int i = 0; i < 500 && !fs::exists(runs[0].dir + "/started"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(getpid(), SIGINT);
  });
  std::ostringstream out;
  const LocalResult result = run_local(runs, options, out);
  interrupter.join();
  EXPECT_TRUE(result.interrupted);
  EXPECT_EQ(result.preempted, std::vector<std::string>{"starting"}) << out.str();
  EXPECT_TRUE(result.failed.empty()) << out.str();
  EXPECT_TRUE(result.completed.empty()) << out.str();
  EXPECT_EQ(read_text(runs[0].dir + "/last_exit"), "3\n");
  EXPECT_FALSE(fs::exists(runs[1].dir + "/train.log"));
}

// Each run appends "start"/"end" lines with its name to one shared file; the order shows which
// runs overlapped.
std::string overlap_line(const std::string& shared, const std::string& name) {
  return "echo start " + name + " >>" + shared + "; sleep 0.3; echo end " + name + " >>" + shared;
}

TEST(LocalLauncher, RunsThatDoNotFitTheCoresWaitTheirTurn) {
  TempDir root;
  const std::string shared = root.path() + "/order";
  // 2 cores: two 1-core runs overlap, then the 2-core run runs alone.
  const std::vector<LocalRun> runs = {shell_run(root, "a", overlap_line(shared, "a"), 1),
                                      shell_run(root, "b", overlap_line(shared, "b"), 1),
                                      shell_run(root, "c", overlap_line(shared, "c"), 2)};
  LocalOptions options;
  options.cores = 2;
  std::ostringstream out;
  EXPECT_EQ(run_local(runs, options, out).completed.size(), 3u);
  const std::string order = read_text(shared);
  const std::string last = "start c\nend c\n";
  const std::string first_two = order.substr(0, 16);
  EXPECT_TRUE(first_two == "start a\nstart b\n" || first_two == "start b\nstart a\n") << order;
  ASSERT_GE(order.size(), last.size());
  EXPECT_EQ(order.substr(order.size() - last.size()), last) << order;
}

TEST(LocalLauncher, MaxParallelOneRunsOneAtATime) {
  TempDir root;
  const std::string shared = root.path() + "/order";
  const std::vector<LocalRun> runs = {shell_run(root, "a", overlap_line(shared, "a")),
                                      shell_run(root, "b", overlap_line(shared, "b"))};
  LocalOptions options;
  options.cores = 8;
  options.max_parallel = 1;
  std::ostringstream out;
  EXPECT_EQ(run_local(runs, options, out).completed.size(), 2u);
  EXPECT_EQ(read_text(shared), "start a\nend a\nstart b\nend b\n");
}

// The summary a log sees after each completion: with a heavier run still queued it carries an
// ETA; after the last run it does not.
TEST(LocalLauncher, SummaryAfterACompletionEstimatesTheRunsLeft) {
  TempDir root;
  std::vector<LocalRun> runs = {shell_run(root, "a", "sleep 0.2"), shell_run(root, "b", "true")};
  runs[1].work = 3.0;
  LocalOptions options;
  options.cores = 8;
  options.max_parallel = 1;
  std::ostringstream out;
  EXPECT_EQ(run_local(runs, options, out).completed.size(), 2u);
  const std::string text = out.str();
  const size_t first = text.find("1/2 done, 0 running, 0 failed");
  const size_t last = text.find("2/2 done, 0 running, 0 failed");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(last, std::string::npos) << text;
  EXPECT_NE(text.substr(first, text.find('\n', first) - first).find(", ETA "), std::string::npos)
      << text;
  EXPECT_EQ(text.substr(last).find("ETA"), std::string::npos) << text;
}

TEST(LocalLauncher, RemainingTimeWeighsRunsByWorkAndIgnoresResumedProgress) {
  // Work done in this launch: 1 (a) + 3 * (0.75 - 0.5) (b, resumed at half) = 1.75;
  // left: 3 * 0.25 (b) + 2 (c) = 2.75; 100 s * 2.75 / 1.75.
  const std::vector<RunWork> runs = {{1.0, 0.0, 1.0}, {3.0, 0.5, 0.75}, {2.0, 0.0, 0.0}};
  ASSERT_TRUE(remaining_seconds(runs, 100.0).has_value());
  EXPECT_NEAR(*remaining_seconds(runs, 100.0), 100.0 * 2.75 / 1.75, 1e-9);
  // One of two runs done: the ETA scales with the queued run's weight, not the run count.
  EXPECT_NEAR(*remaining_seconds({{1.0, 0.0, 1.0}, {1.0, 0.0, 0.0}}, 60.0), 60.0, 1e-9);
  EXPECT_NEAR(*remaining_seconds({{1.0, 0.0, 1.0}, {3.0, 0.0, 0.0}}, 60.0), 180.0, 1e-9);
  // A resumed run that has not moved yet gives no rate; nothing left gives no ETA.
  EXPECT_FALSE(remaining_seconds({{1.0, 0.9, 0.9}}, 30.0).has_value());
  EXPECT_FALSE(remaining_seconds({{1.0, 0.0, 1.0}}, 30.0).has_value());
}

TEST(LocalLauncher, TrainCommandUsesMpirunOnlyForSeveralRanks) {
  const std::vector<std::string> one =
      local_train_command("/b/attnlab", "/r/x/config.yaml", "/r/x", "x", "s", 1, false);
  EXPECT_EQ(one, (std::vector<std::string>{"/b/attnlab", "train", "-c", "/r/x/config.yaml", "--out",
                                           "/r/x", "--run-id", "x", "--sweep-id", "s"}));
  const std::vector<std::string> two =
      local_train_command("/b/attnlab", "/r/x/config.yaml", "/r/x", "x", "s", 2, true);
  std::vector<std::string> expected = {"mpirun", "-np", "2", "--bind-to", "none"};
  if (geteuid() == 0) expected.emplace_back("--allow-run-as-root");
  expected.emplace_back("--oversubscribe");
  expected.insert(expected.end(), one.begin(), one.end());
  EXPECT_EQ(two, expected);
}

TEST(LocalLauncher, Durations) {
  EXPECT_EQ(format_duration(0.4), "0s");
  EXPECT_EQ(format_duration(42), "42s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
}

// cpuinfo files for each kernel family; cluster/env.sh is the reference the C++ must agree with.
TEST(RunEnvironment, CoretypeAgreesWithEnvScript) {
  TempDir root;
  const std::string env_script = std::string(ATTNLAB_SOURCE_DIR) + "/cluster/env.sh";
  const std::vector<std::pair<std::string, std::string>> cpus = {
      {"GenuineIntel", "fpu sse2 avx avx2 fma avx512f avx512bw avx512dq avx512vl"},
      {"GenuineIntel", "fpu sse2 avx avx512f avx2 fma avx512bw avx512dq"},
      {"GenuineIntel", "fpu sse2 avx avx2 fma"},
      {"AuthenticAMD", "fpu sse2 avx avx2 fma"},
      {"HygonGenuine", "fma avx2"},
      {"GenuineIntel", "fpu sse2 avx avx2"},
      {"GenuineIntel", "fpu sse2 sse3"}};
  std::vector<std::string> kernels;
  for (size_t i = 0; i < cpus.size(); ++i) {
    const std::string path = root.path() + "/cpuinfo" + std::to_string(i);
    testing::write_text(path, "processor\t: 0\nvendor_id\t: " + cpus[i].first +
                                  "\nflags\t\t: " + cpus[i].second + "\n\nprocessor\t: 1\n");
    const CommandResult reference = run_command({"bash", env_script, path});
    ASSERT_EQ(reference.exit_code, 0) << reference.err;
    std::string expected = reference.out;
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    EXPECT_EQ(openblas_coretype(path), expected) << cpus[i].second;
    kernels.push_back(openblas_coretype(path));
  }
  EXPECT_EQ(kernels,
            (std::vector<std::string>{"SkylakeX", "Haswell", "Haswell", "Zen", "Zen", "", ""}));
  EXPECT_EQ(openblas_coretype(root.path() + "/missing"), "");
}

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

std::string value_in(const Environment& env, const std::string& name) {
  for (const auto& [key, value] : env) {
    if (key == name) return value;
  }
  return "<absent>";
}

TEST(RunEnvironment, KernelAndWaitPolicyDefaultsYieldToTheUser) {
  {
    ScopedEnv no_kernel("OPENBLAS_CORETYPE", nullptr);
    ScopedEnv no_policy("OMP_WAIT_POLICY", nullptr);
    const Environment env = run_environment(1);
    EXPECT_EQ(value_in(env, "OMP_WAIT_POLICY"), "passive");
    const std::string kernel = openblas_coretype();
    EXPECT_EQ(value_in(env, "OPENBLAS_CORETYPE"), kernel.empty() ? "<absent>" : kernel);
  }
  {
    // Values already in the environment are inherited by the child, so none is set over them.
    ScopedEnv kernel("OPENBLAS_CORETYPE", "Haswell");
    ScopedEnv policy("OMP_WAIT_POLICY", "active");
    const Environment env = run_environment(2);
    EXPECT_EQ(value_in(env, "OMP_WAIT_POLICY"), "<absent>");
    EXPECT_EQ(value_in(env, "OPENBLAS_CORETYPE"), "<absent>");
    EXPECT_EQ(value_in(env, "OMP_NUM_THREADS"), "2");
  }
}

TEST(RunEnvironment, ThreadsAndCores) {
  const Environment env = run_environment(3);
  ASSERT_GE(env.size(), 2u);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"OMP_NUM_THREADS", "3"}));
  EXPECT_EQ(env[1], (std::pair<std::string, std::string>{"OPENBLAS_NUM_THREADS", "1"}));
  EXPECT_GE(available_cores(), 1);
}

}  // namespace
}  // namespace attnlab::cluster
