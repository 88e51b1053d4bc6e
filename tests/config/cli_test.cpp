// The attnlab executable end to end: help, version, exit codes, one-line errors, the config dump,
// the sweep manifest, and `params` reproducing the analytic counts of every Table 3 row.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/config/config.h"
#include "core/config/sweep.h"
#include "core/model/param_count.h"

namespace attnlab {
namespace {

const std::string kBinary = ATTNLAB_BINARY;
const std::string kSource = ATTNLAB_SOURCE_DIR;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs attnlab with `args` (shell words) from the source directory.
Result run(const std::string& args) {
  // ctest runs test cases in parallel processes: each needs its own stderr file.
  const std::string err_path =
      testing::TempDir() + "attnlab_cli_stderr." + std::to_string(getpid()) + ".txt";
  const std::string command =
      "cd '" + kSource + "' && '" + kBinary + "' " + args + " 2>'" + err_path + "'";
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) result.out.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = slurp(err_path);
  return result;
}

TEST(Cli, HelpListsCommandsAndVersionNamesTheCommit) {
  Result help = run("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* command : {"config", "params", "sweep"}) {
    EXPECT_NE(help.out.find("\n  " + std::string(command) + " "), std::string::npos) << command;
  }
  Result version = run("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("attnlab 0.1.0 (git ", 0), 0u) << version.out;
  Result command_help = run("params --help");
  EXPECT_EQ(command_help.exit_code, 0);
  EXPECT_NE(command_help.out.find("usage: attnlab params -c FILE|SWEEP"), std::string::npos);
}

TEST(Cli, ConfigErrorsAreOneLineWithExitCodeTwo) {
  Result typo = run("params -c tests/config/broken/typo_key.yaml");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.out, "");
  EXPECT_EQ(typo.err,
            "attnlab params: tests/config/broken/typo_key.yaml:4:3: unknown key 'model.haeds' "
            "(did you mean 'model.heads'?)\n");
  // A name is checked where it becomes the run directory (<log.dir>/<name>), before anything is
  // written; with --out it is only a label.
  Result escape = run(
      "train -c experiments/tasks/copy.yaml --set name=../../escaped_run --set cluster.ranks=1");
  EXPECT_EQ(escape.exit_code, 2);
  EXPECT_EQ(escape.err,
            "attnlab train: name (the run's directory under log.dir; or give --out DIR): "
            "'../../escaped_run' has '/'; a name is one directory level: letters, digits and . _ "
            "- + =\n");
  Result bad_set = run("config -c experiments/base.yaml --set model.heads=0");
  EXPECT_EQ(bad_set.exit_code, 2);
  EXPECT_EQ(bad_set.err,
            "attnlab config: --set model.heads=0: model.heads: expected an integer in [1, 65536], "
            "got 0\n");
  Result option = run("params --bogus");
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_EQ(option.err,
            "attnlab params: unrecognised option '--bogus' (see attnlab params --help)\n");
  Result command = run("parms");
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_EQ(command.err,
            "attnlab: unknown command 'parms' (did you mean 'params'?); attnlab --help lists the "
            "commands\n");
}

TEST(Cli, RuntimeFailureExitsOne) {
  Result result = run("sweep tests/config/data/grid_sweep.yaml --dry-run --out /proc/attnlab");
  EXPECT_EQ(result.exit_code, 1) << result.err;
  // One line naming the command and the directory it could not create.
  EXPECT_EQ(result.err.rfind("attnlab sweep: ", 0), 0u) << result.err;
  EXPECT_NE(result.err.find("/proc/attnlab"), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

TEST(Cli, DumpConfigLoadsBackToTheSameConfig) {
  Result dump = run("config --dump-config -c experiments/base.yaml --set model.norm=pre");
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  const std::string path = testing::TempDir() + "attnlab_cli_dump.yaml";
  std::ofstream(path) << dump.out;
  ExperimentConfig expected = config::load(kSource + "/experiments/base.yaml", {"model.norm=pre"});
  EXPECT_EQ(config::flatten(config::load(path)), config::flatten(expected));
  Result flat = run("config -c experiments/base.yaml --flat");
  EXPECT_NE(flat.out.find("\nmodel.heads=8\n"), std::string::npos);
}

TEST(Cli, SweepDryRunWritesTheManifest) {
  const std::string out = testing::TempDir() + "attnlab_cli_runs";
  std::filesystem::remove_all(out);
  Result result = run("sweep experiments/paper/table3.yaml --dry-run --out '" + out + "'");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("sweep table3: 20 runs"), std::string::npos);
  const config::Sweep sweep = config::expand(kSource + "/experiments/paper/table3.yaml");
  const std::string manifest = slurp(out + "/table3/manifest.yaml");
  for (const config::SweepRun& run : sweep.runs) {
    EXPECT_NE(manifest.find("  - id: " + run.id + "\n    name: " + run.name + "\n"),
              std::string::npos)
        << run.name;
  }
}

int64_t digits_of(const std::string& grouped) {
  std::string digits;
  for (char ch : grouped) {
    if (ch != ',') digits += ch;
  }
  return std::stoll(digits);
}

TEST(Cli, ParamsReproducesTheAnalyticCountsOfTable3) {
  Result result = run("params experiments/paper/table3.yaml");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // run name -> the params column printed for it.
  std::map<std::string, int64_t> printed;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name, group, params;
    if (words >> name >> group >> params && params.find(',') != std::string::npos) {
      printed[name] = digits_of(params);
    }
  }
  const config::Sweep sweep = config::expand(kSource + "/experiments/paper/table3.yaml");
  ASSERT_EQ(printed.size(), sweep.runs.size()) << result.out;
  for (const config::SweepRun& run : sweep.runs) {
    EXPECT_EQ(printed[run.name], analytic_parameter_count(run.config.model)) << run.name;
  }
  // The paper's base by hand: 6 x (3,152,384 + 4,204,032) for the layers + 37000 x 512.
  EXPECT_EQ(printed["base.seed1"], 63082496);
  EXPECT_NE(result.out.find("base.seed1 counts 63.08M against the paper's 65M"), std::string::npos);
  EXPECT_NE(result.out.find("sits in the vocabulary term"), std::string::npos);

  Result with_bias = run("params -c experiments/base.yaml --set model.output_bias=true");
  ASSERT_EQ(with_bias.exit_code, 0) << with_bias.err;
  EXPECT_NE(with_bias.out.find("63,119,496"), std::string::npos) << with_bias.out;  // + 37000
  // RMSNorm drops the bias of each of the 6 x 2 + 6 x 3 = 30 norms: 30 x 512 = 15,360 fewer.
  Result rms_norm = run("params -c experiments/base.yaml --set model.norm_type=rmsnorm");
  ASSERT_EQ(rms_norm.exit_code, 0) << rms_norm.err;
  EXPECT_NE(rms_norm.out.find("63,067,136  (63.07M)"), std::string::npos) << rms_norm.out;
}

}  // namespace
}  // namespace attnlab
