// The job array script: its #SBATCH header, shellcheck, and the script itself run against stub
// srun/mpirun/scontrol with hostile paths and values (exact arguments, no injection, requeue on
// exit 3, USR1 forwarded to the launcher).
#include "core/cluster/sbatch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "cluster/cluster_testing.h"
#include "core/cluster/process.h"
#include "core/config/config.h"

namespace attnlab::cluster {
namespace {
namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

// A launcher stub: writes its arguments (one per line) and $PROFILE_VALUE to $STUB_DIR/<name>.args,
// then behaves as STUB_MODE says: exit0, exit1, exit3, usr1 (wait for USR1, then exit 3), or
// usr1-kills (wait without a handler, as a trainer still starting up: USR1 kills it).
const char* kLauncherStub = R"(#!/bin/bash
name=$(basename "$0")
printf '%s\n' "$@" >"$STUB_DIR/$name.args"
printf '%s' "${PROFILE_VALUE-unset}" >"$STUB_DIR/$name.env"
printf '%s\n' "${OMP_NUM_THREADS-unset}" "${OPENBLAS_NUM_THREADS-unset}" \
  "${OMP_WAIT_POLICY-unset}" "${OPENBLAS_CORETYPE-unset}" >"$STUB_DIR/$name.threads"
printf '%s\n' "${OMPI_MCA_btl_tcp_if_include-unset}" "${OMPI_MCA_oob_tcp_if_include-unset}" \
  >"$STUB_DIR/$name.network"
case $STUB_MODE in
  exit0) exit 0 ;;
  exit1) exit 1 ;;
  exit3) exit 3 ;;
  usr1)
    trap 'echo got-usr1 >"$STUB_DIR/$name.signal"; exit 3' USR1
    touch "$STUB_DIR/$name.started"
    for _ in $(seq 300); do sleep 0.1; done
    exit 0
    ;;
  usr1-kills)
    touch "$STUB_DIR/$name.started"
    for _ in $(seq 300); do sleep 0.1; done
    exit 0
    ;;
esac
)";
const char* kScontrolStub = R"(#!/bin/bash
printf '%s\n' "$@" >"$STUB_DIR/scontrol.args"
)";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

class ArrayScript : public ::testing::Test {
 protected:
  void SetUp() override {
    stubs_ = root_.path() + "/stubs";
    fs::create_directories(stubs_);
    for (const char* launcher : {"srun", "mpirun"}) {
      write_text(stubs_ + "/" + launcher, kLauncherStub, true);
    }
    write_text(stubs_ + "/scontrol", kScontrolStub, true);
    // Paths no shell may read unquoted: spaces, quotes, $(...), ;, backticks.
    job_.sweep_dir = root_.path() + "/runs $(touch PWNED) 'q\" ;x`touch PWNED2`";
    job_.binary = root_.path() + "/bin dir/attn'lab";
    job_.sweep = "tiny-sweep.v1";
    job_.run_ids = {"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"};
    job_.ranks = 2;
    job_.threads_per_rank = 1;
    job_.profile.partition = "attnlab";
    job_.profile.time = "00:10:00";
    job_.profile.max_running = 2;
    job_.profile.signal_seconds = 60;
    job_.profile.env = {{"PROFILE_VALUE", "$(touch PWNED3) it's \"fine\""}};
    for (const std::string& id : job_.run_ids) fs::create_directories(job_.sweep_dir + "/" + id);
  }

  std::string render() {
    const std::string path = root_.path() + "/array.sbatch";
    write_text(path, render_array_script(job_));
    return path;
  }

  // Runs the script as array task 1 of job 77 with the stubs first on PATH; returns its exit code.
  // user_env: variables the submitting shell had set; OPENBLAS_CORETYPE and OMP_WAIT_POLICY are
  // removed from the task's environment otherwise.
  int run_task(const std::string& script, const std::string& mode, bool send_usr1 = false,
               const Environment& user_env = {}) {
    const Environment env = {{"PATH", stubs_ + ":" + std::string(std::getenv("PATH"))},
                             {"STUB_DIR", stubs_},
                             {"STUB_MODE", mode},
                             {"SLURM_ARRAY_TASK_ID", "1"},
                             {"SLURM_ARRAY_JOB_ID", "77"}};
    std::vector<std::string> command = {"env", "-u", "OPENBLAS_CORETYPE", "-u", "OMP_WAIT_POLICY"};
    for (const auto& [name, value] : user_env) command.push_back(name + "=" + value);
    command.insert(command.end(), {"bash", script});
    const pid_t pid = spawn_logged(command, env, root_.path() + "/task.log");
    if (send_usr1) {
      const std::string started = stubs_ + "/" + job_.profile.launcher + ".started";
      for (int i = 0; i < 300 && !fs::exists(started); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      EXPECT_TRUE(fs::exists(started)) << read_text(root_.path() + "/task.log");
      kill(pid, SIGUSR1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return exit_code_of(status);
  }

  std::vector<std::string> expected_train_args() const {
    const std::string run_dir = job_.sweep_dir + "/bbbbbbbbbbbb";
    return {job_.binary, "train",        "-c",         run_dir + "/config.yaml", "--out", run_dir,
            "--run-id",  "bbbbbbbbbbbb", "--sweep-id", "tiny-sweep.v1"};
  }

  void expect_no_injection() const {
    for (const auto& entry : fs::recursive_directory_iterator(root_.path())) {
      const std::string name = entry.path().filename().string();
      EXPECT_TRUE(name.rfind("PWNED", 0) != 0) << "injected: " << entry.path();
    }
  }

  TempDir root_;
  std::string stubs_;
  ArrayJob job_;
};

TEST_F(ArrayScript, HeaderAsksSlurmForTheArrayAndPreemption) {
  job_.profile.account = "proj";
  job_.profile.mem = "2G";
  job_.profile.sbatch = {"--exclusive"};
  const std::string text = render_array_script(job_);
  for (const char* line :
       {"#SBATCH --job-name=attnlab-tiny-sweep.v1\n", "#SBATCH --array=0-2%2\n",
        "#SBATCH --ntasks=2\n", "#SBATCH --cpus-per-task=1\n", "#SBATCH --time=00:10:00\n",
        "#SBATCH --mem=2G\n", "#SBATCH --partition=attnlab\n", "#SBATCH --account=proj\n",
        "#SBATCH --output=slurm/%A_%a.log\n", "#SBATCH --open-mode=append\n", "#SBATCH --requeue\n",
        "#SBATCH --signal=B:USR1@60\n", "#SBATCH --exclusive\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  // Every #SBATCH line comes before the first command (sbatch stops reading at it).
  const size_t last_sbatch = text.rfind("#SBATCH");
  const size_t first_command = text.find("set -o pipefail");
  EXPECT_LT(last_sbatch, first_command);
  EXPECT_EQ(text.find("--qos"), std::string::npos);
}

TEST_F(ArrayScript, ShellcheckFindsNothing) {
  if (find_program("shellcheck").empty()) GTEST_SKIP() << "shellcheck is not installed";
  job_.profile.setup = {"echo \"set up on $(hostname)\""};
  job_.env_script = root_.path() + "/cluster dir/env.sh";
  for (const char* launcher : {"srun", "mpirun"}) {
    job_.profile.launcher = launcher;
    const CommandResult result = run_command({"shellcheck", "--shell=bash", render()});
    EXPECT_EQ(result.exit_code, 0) << launcher << "\n" << result.out << result.err;
  }
}

TEST_F(ArrayScript, SrunGetsExactArgumentsAndNothingIsInjected) {
  EXPECT_EQ(run_task(render(), "exit0"), 0) << read_text(root_.path() + "/task.log");
  std::vector<std::string> expected = {"--mpi=pmix", "--ntasks=2", "--cpus-per-task=1",
                                       "--kill-on-bad-exit=1"};
  for (const std::string& arg : expected_train_args()) expected.push_back(arg);
  EXPECT_EQ(lines_of(read_text(stubs_ + "/srun.args")), expected);
  EXPECT_EQ(read_text(stubs_ + "/srun.env"), "$(touch PWNED3) it's \"fine\"");
  EXPECT_FALSE(fs::exists(stubs_ + "/scontrol.args")) << "a completed run is not requeued";
  expect_no_injection();
}

TEST_F(ArrayScript, MpirunLauncherGetsExactArguments) {
  job_.profile.launcher = "mpirun";
  EXPECT_EQ(run_task(render(), "exit0"), 0) << read_text(root_.path() + "/task.log");
  std::vector<std::string> expected = {"-np", "2", "--bind-to", "none"};
  for (const std::string& arg : expected_train_args()) expected.push_back(arg);
  EXPECT_EQ(lines_of(read_text(stubs_ + "/mpirun.args")), expected);
  expect_no_injection();
}

TEST_F(ArrayScript, ThreadsKernelAndWaitPolicyReachTheLauncherUnlessTheUserSetThem) {
  // env.sh (here a stand-in that names a kernel) runs only when OPENBLAS_CORETYPE is unset.
  job_.env_script = root_.path() + "/cluster dir/env.sh";
  fs::create_directories(root_.path() + "/cluster dir");
  write_text(job_.env_script, "export OPENBLAS_CORETYPE=Detected\n");
  job_.threads_per_rank = 3;
  job_.profile.launcher = "mpirun";
  const std::string script = render();
  EXPECT_EQ(run_task(script, "exit0"), 0) << read_text(root_.path() + "/task.log");
  EXPECT_EQ(lines_of(read_text(stubs_ + "/mpirun.threads")),
            (std::vector<std::string>{"3", "1", "passive", "Detected"}));
  EXPECT_EQ(run_task(script, "exit0", false,
                     {{"OMP_WAIT_POLICY", "active"}, {"OPENBLAS_CORETYPE", "Haswell"}}),
            0)
      << read_text(root_.path() + "/task.log");
  EXPECT_EQ(lines_of(read_text(stubs_ + "/mpirun.threads")),
            (std::vector<std::string>{"3", "1", "active", "Haswell"}));
}

TEST_F(ArrayScript, MultiNodeRunsAskForNodesAndRanksPerNode) {
  job_.profile.nodes = 2;
  job_.profile.ranks_per_node = 1;
  job_.profile.network_interface = "10.77.0.0/24";
  const std::string text = render_array_script(job_);
  for (const char* line : {"#SBATCH --ntasks=2\n", "#SBATCH --nodes=2\n",
                           "#SBATCH --ntasks-per-node=1\n", "#SBATCH --cpus-per-task=1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_LT(text.rfind("#SBATCH"), text.find("set -o pipefail"));
  // Without the keys the script says nothing about nodes or the network.
  job_.profile.nodes = 0;
  job_.profile.ranks_per_node = 0;
  job_.profile.network_interface.clear();
  const std::string plain = render_array_script(job_);
  EXPECT_EQ(plain.find("--nodes"), std::string::npos);
  EXPECT_EQ(plain.find("--ntasks-per-node"), std::string::npos);
  EXPECT_EQ(plain.find("OMPI_MCA_"), std::string::npos);
}

TEST_F(ArrayScript, MultiNodeSrunGetsNodesRanksPerNodeAndTheNetwork) {
  job_.profile.nodes = 2;
  job_.profile.ranks_per_node = 1;
  job_.profile.network_interface = "eth0";
  EXPECT_EQ(run_task(render(), "exit0"), 0) << read_text(root_.path() + "/task.log");
  std::vector<std::string> expected = {"--mpi=pmix", "--ntasks=2",          "--cpus-per-task=1",
                                       "--nodes=2",  "--ntasks-per-node=1", "--kill-on-bad-exit=1"};
  for (const std::string& arg : expected_train_args()) expected.push_back(arg);
  EXPECT_EQ(lines_of(read_text(stubs_ + "/srun.args")), expected);
  EXPECT_EQ(lines_of(read_text(stubs_ + "/srun.network")),
            (std::vector<std::string>{"eth0", "eth0"}));
  expect_no_injection();
}

TEST_F(ArrayScript, MultiNodeMpirunPlacesRanksPerNode) {
  job_.profile.launcher = "mpirun";
  job_.profile.nodes = 2;
  job_.profile.ranks_per_node = 1;
  job_.profile.network_interface = "10.77.0.0/24,eth1";
  EXPECT_EQ(run_task(render(), "exit0"), 0) << read_text(root_.path() + "/task.log");
  std::vector<std::string> expected = {"-np", "2", "--bind-to", "none", "--map-by", "ppr:1:node"};
  for (const std::string& arg : expected_train_args()) expected.push_back(arg);
  EXPECT_EQ(lines_of(read_text(stubs_ + "/mpirun.args")), expected);
  EXPECT_EQ(lines_of(read_text(stubs_ + "/mpirun.network")),
            (std::vector<std::string>{"10.77.0.0/24,eth1", "10.77.0.0/24,eth1"}));
  // Nodes alone: one rank per node in turn.
  job_.profile.ranks_per_node = 0;
  EXPECT_EQ(run_task(render(), "exit0"), 0) << read_text(root_.path() + "/task.log");
  expected = {"-np", "2", "--bind-to", "none", "--map-by", "node"};
  for (const std::string& arg : expected_train_args()) expected.push_back(arg);
  EXPECT_EQ(lines_of(read_text(stubs_ + "/mpirun.args")), expected);
}

TEST_F(ArrayScript, MultiNodeScriptsPassShellcheck) {
  if (find_program("shellcheck").empty()) GTEST_SKIP() << "shellcheck is not installed";
  job_.profile.nodes = 2;
  job_.profile.ranks_per_node = 1;
  job_.profile.network_interface = "eth0";
  for (const char* launcher : {"srun", "mpirun"}) {
    job_.profile.launcher = launcher;
    const CommandResult result = run_command({"shellcheck", "--shell=bash", render()});
    EXPECT_EQ(result.exit_code, 0) << launcher << "\n" << result.out << result.err;
  }
}

TEST_F(ArrayScript, NodesThatDoNotFitTheRanksAreRejected) {
  auto message = [this]() -> std::string {
    try {
      render_array_script(job_);
    } catch (const ConfigError& error) {
      return error.what();
    }
    return "";
  };
  job_.profile.nodes = 2;
  job_.profile.ranks_per_node = 2;  // 4 ranks, but the run has 2
  EXPECT_NE(message().find("nodes x ranks_per_node is 2 x 2 = 4 ranks, but a run has 2"),
            std::string::npos)
      << message();
  job_.profile.ranks_per_node = 0;
  job_.profile.nodes = 3;
  EXPECT_NE(message().find("nodes is 3 but a run has only 2 ranks"), std::string::npos)
      << message();
  job_.profile.nodes = 0;
  job_.profile.ranks_per_node = 4;
  EXPECT_NE(message().find("ranks_per_node is 4"), std::string::npos) << message();
  job_.profile.ranks_per_node = 0;
  job_.profile.network_interface = "eth0; touch PWNED";
  EXPECT_NE(message().find("network_interface"), std::string::npos) << message();
  // The profile's ranks count: 2 nodes x 2 ranks fit a profile asking for 4.
  job_.profile.network_interface.clear();
  job_.profile.ranks = 4;
  job_.profile.nodes = 2;
  job_.profile.ranks_per_node = 2;
  EXPECT_EQ(message(), "");
}

TEST_F(ArrayScript, PreemptedRunRequeuesItsOwnTask) {
  EXPECT_EQ(run_task(render(), "exit3"), 0);
  EXPECT_EQ(lines_of(read_text(stubs_ + "/scontrol.args")),
            (std::vector<std::string>{"requeue", "77_1"}));
}

TEST_F(ArrayScript, FailedRunFailsTheTaskWithoutRequeue) {
  EXPECT_EQ(run_task(render(), "exit1"), 1);
  EXPECT_FALSE(fs::exists(stubs_ + "/scontrol.args"));
  EXPECT_NE(read_text(root_.path() + "/task.log").find("failed (exit 1)"), std::string::npos);
}

TEST_F(ArrayScript, Usr1ToTheBatchShellReachesTheLauncherThenRequeues) {
  for (const char* launcher : {"srun", "mpirun"}) {
    job_.profile.launcher = launcher;
    fs::remove(stubs_ + "/scontrol.args");
    EXPECT_EQ(run_task(render(), "usr1", /*send_usr1=*/true), 0) << launcher;
    EXPECT_EQ(read_text(stubs_ + "/" + launcher + ".signal"), "got-usr1\n") << launcher;
    EXPECT_EQ(lines_of(read_text(stubs_ + "/scontrol.args")),
              (std::vector<std::string>{"requeue", "77_1"}))
        << launcher;
  }
}

TEST_F(ArrayScript, Usr1ThatKillsAStartingLauncherIsAStopNotAFailure) {
  job_.profile.launcher = "mpirun";
  EXPECT_EQ(run_task(render(), "usr1-kills", /*send_usr1=*/true), 0);
  EXPECT_EQ(read_text(job_.sweep_dir + "/bbbbbbbbbbbb/last_exit"), "3\n");
  EXPECT_EQ(lines_of(read_text(stubs_ + "/scontrol.args")),
            (std::vector<std::string>{"requeue", "77_1"}));
}

TEST_F(ArrayScript, UnsafeValuesAreRejectedBeforeAnythingIsWritten) {
  job_.profile.partition = "debug; touch PWNED";
  EXPECT_THROW(render_array_script(job_), ConfigError);
  job_.profile.partition = "attnlab";
  job_.sweep = "name with space";
  EXPECT_THROW(render_array_script(job_), ConfigError);
  job_.sweep = "ok";
  job_.run_ids = {"$(id)"};
  EXPECT_THROW(render_array_script(job_), ConfigError);
  job_.run_ids = {"aaaaaaaaaaaa"};
  job_.profile.sbatch = {"--comment=x\n#SBATCH --wrap=evil"};
  EXPECT_THROW(render_array_script(job_), ConfigError);
}

}  // namespace
}  // namespace attnlab::cluster
