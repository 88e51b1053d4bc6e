// Cluster profiles: the shipped ones load, every field is read, mistakes name file, line and key.
#include "core/cluster/profile.h"

#include <gtest/gtest.h>

#include "cluster/cluster_testing.h"
#include "core/config/config.h"

namespace attnlab::cluster {
namespace {

using testing::TempDir;
using testing::write_text;

std::string load_error(const std::string& text) {
  TempDir dir;
  const std::string path = dir.path() + "/p.yaml";
  write_text(path, text);
  try {
    load_profile(path);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(Profile, ShippedProfilesLoad) {
  const std::string root = std::string(ATTNLAB_SOURCE_DIR) + "/cluster/profiles/";
  const SlurmProfile local = load_profile(root + "local.yaml");
  EXPECT_EQ(local.partition, "attnlab");
  EXPECT_EQ(local.launcher, "srun");
  const SlurmProfile hpc = load_profile(root + "example-hpc.yaml");
  EXPECT_EQ(hpc.account, "my-project");
  EXPECT_EQ(hpc.time, "04:00:00");
  EXPECT_EQ(hpc.signal_seconds, 300);
  ASSERT_EQ(hpc.env.size(), 1u);
  EXPECT_EQ(hpc.env[0].first, "OPENBLAS_CORETYPE");
  ASSERT_EQ(hpc.setup.size(), 1u);
  ASSERT_EQ(hpc.sbatch.size(), 1u);
  EXPECT_EQ(hpc.sbatch[0], "--constraint=avx2");
}

TEST(Profile, EveryFieldIsRead) {
  TempDir dir;
  const std::string path = dir.path() + "/p.yaml";
  write_text(path,
             "partition: p\naccount: a\nqos: q\ntime: '1-00:00:00'\nmem: 2G\nranks: 2\n"
             "cpus_per_task: 3\novercommit: true\nlauncher: mpirun\nmax_running: 4\n"
             "signal_seconds: 90\nsbatch: [--exclusive]\nenv: {A: 'x y'}\nsetup: [echo hi]\n");
  const SlurmProfile p = load_profile(path);
  EXPECT_EQ(p.source, path);
  EXPECT_EQ(p.partition + p.account + p.qos + p.time + p.mem, "paq1-00:00:002G");
  EXPECT_EQ(p.ranks, 2);
  EXPECT_EQ(p.cpus_per_task, 3);
  EXPECT_TRUE(p.overcommit);
  EXPECT_EQ(p.launcher, "mpirun");
  EXPECT_EQ(p.max_running, 4);
  EXPECT_EQ(p.signal_seconds, 90);
  EXPECT_EQ(p.sbatch, std::vector<std::string>{"--exclusive"});
  ASSERT_EQ(p.env.size(), 1u);
  EXPECT_EQ(p.env[0].second, "x y");
  EXPECT_EQ(p.setup, std::vector<std::string>{"echo hi"});
}

TEST(Profile, MultiNodeKeysAreRead) {
  TempDir dir;
  const std::string path = dir.path() + "/p.yaml";
  write_text(path, "nodes: 2\nranks_per_node: 1\nnetwork_interface: 10.77.0.0/24\n");
  const SlurmProfile p = load_profile(path);
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.ranks_per_node, 1);
  EXPECT_EQ(p.network_interface, "10.77.0.0/24");
  const SlurmProfile local2 =
      load_profile(std::string(ATTNLAB_SOURCE_DIR) + "/cluster/profiles/local-2nodes.yaml");
  EXPECT_EQ(local2.nodes, 2);
  EXPECT_EQ(local2.ranks_per_node, 1);
  EXPECT_EQ(local2.partition, "attnlab");
}

TEST(Profile, MultiNodeMistakesAreClear) {
  std::string message = load_error("nodes: -1\n");
  EXPECT_NE(message.find("p.yaml:1:1: nodes: expected an integer >= 0"), std::string::npos)
      << message;
  message = load_error("ranks_per_node: one\n");
  EXPECT_NE(message.find("ranks_per_node: expected an integer"), std::string::npos) << message;
  message = load_error("network_interface: \"eth0 $(id)\"\n");
  EXPECT_NE(message.find("network_interface"), std::string::npos) << message;
  EXPECT_NE(message.find("not allowed"), std::string::npos) << message;
  message = load_error("ranks: 3\nnodes: 2\nranks_per_node: 1\n");
  EXPECT_NE(message.find("ranks (3) must be nodes x ranks_per_node (2 x 1)"), std::string::npos)
      << message;
  message = load_error("nodse: 2\n");
  EXPECT_NE(message.find("p.yaml:1:1: nodse: unknown key"), std::string::npos) << message;
}

TEST(Profile, MistakesNameFileLineAndKey) {
  std::string message = load_error("time: '01:00:00'\npartitoin: x\n");
  EXPECT_NE(message.find("p.yaml:2:1: partitoin: unknown key"), std::string::npos) << message;
  message = load_error("partition: \"x; rm -rf /\"\n");
  EXPECT_NE(message.find("partition"), std::string::npos) << message;
  EXPECT_NE(message.find("not allowed"), std::string::npos) << message;
  message = load_error("ranks: two\n");
  EXPECT_NE(message.find("p.yaml:1:1: ranks: expected an integer"), std::string::npos) << message;
  message = load_error("launcher: ssh\n");
  EXPECT_NE(message.find("expected srun or mpirun"), std::string::npos) << message;
  message = load_error("sbatch: [\"--x=$(id)\"]\n");
  EXPECT_NE(message.find("sbatch[]"), std::string::npos) << message;
  message = load_error("env: {\"A B\": 1}\n");
  EXPECT_NE(message.find("a variable name"), std::string::npos) << message;
  message = load_error("time: [1]\n");
  EXPECT_NE(message.find("expected a string"), std::string::npos) << message;
  EXPECT_NE(load_error("mem: 4 GB\n"), "");
  EXPECT_NE(load_error("- a list\n"), "");
  EXPECT_EQ(load_error("# only a comment\n"), "");
}

TEST(Profile, MissingFileIsAClearError) {
  try {
    load_profile("/nonexistent/profile.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/profile.yaml"), std::string::npos);
  }
}

}  // namespace
}  // namespace attnlab::cluster
