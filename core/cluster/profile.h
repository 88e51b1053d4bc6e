// A cluster profile (cluster/profiles/<name>.yaml): what the Slurm launcher asks the scheduler for
// and how it starts ranks there. Every field has a default, so a sweep can run without one.
//
//   partition: gpu-short          # #SBATCH --partition (empty: the cluster's default)
//   account: my-project           # #SBATCH --account
//   qos: normal                   # #SBATCH --qos
//   time: "04:00:00"              # per array task; the run resumes after a requeue
//   mem: 8G                       # per node (empty: the cluster's default)
//   ranks: 0                      # MPI ranks per run (0: the experiment's cluster.ranks)
//   nodes: 0                      # nodes per run, #SBATCH --nodes (0: as Slurm places the ranks)
//   ranks_per_node: 0             # #SBATCH --ntasks-per-node (0: as Slurm places the ranks)
//   cpus_per_task: 0              # cores per rank (0: the experiment's cluster.threads_per_rank)
//   overcommit: false             # more ranks than cores (sbatch/srun --overcommit)
//   launcher: srun                # srun (--mpi=pmix) | mpirun
//   network_interface: eth0       # Open MPI's TCP traffic only there (interfaces or CIDR networks)
//   max_running: 0                # array throttle %N (0: no limit)
//   signal_seconds: 120           # USR1 this long before the time limit: checkpoint and requeue
//   sbatch: [--constraint=avx2]   # more #SBATCH options, each --name or --name=value
//   env: {OPENBLAS_CORETYPE: Haswell}   # exported before training (values are quoted)
//   setup: ["module load openmpi"]      # shell lines run before training, as written
//   cores_per_node: 0             # for `attnlab plan` (0: this machine's cores)
//   network_bandwidth: 10         # GB/s between two nodes, for `attnlab plan`
//   network_latency_us: 5         # microseconds per message, for `attnlab plan`
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attnlab::cluster {

struct SlurmProfile {
  std::string source;  // the file it was read from; "" for the built-in defaults
  std::string partition;
  std::string account;
  std::string qos;
  std::string time = "01:00:00";
  std::string mem;
  int64_t ranks = 0;
  int64_t nodes = 0;
  int64_t ranks_per_node = 0;
  int64_t cpus_per_task = 0;
  bool overcommit = false;
  std::string launcher = "srun";
  std::string network_interface;  // OMPI_MCA_btl_tcp_if_include and OMPI_MCA_oob_tcp_if_include
  int64_t max_running = 0;
  int64_t signal_seconds = 120;
  std::vector<std::string> sbatch;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> setup;
  int64_t cores_per_node = 0;
  double network_bandwidth = 10.0;  // GB/s
  double network_latency_us = 5.0;
};

// Reads and checks a profile. Unknown keys, wrong types and values that could not be written
// safely into a script throw ConfigError naming the file, line and key.
SlurmProfile load_profile(const std::string& path);
// The profile at `path` (none when empty: the defaults) with `overrides` ("KEY=VALUE", VALUE in
// YAML, from --profile-set) applied after the file, each checked as the file's keys are and
// named as "--profile-set KEY" in errors.
SlurmProfile load_profile(const std::string& path, const std::vector<std::string>& overrides);

// Checks the values of a profile built in code (load_profile calls this); errors name `where`.
void validate(const SlurmProfile& profile, const std::string& where);

}  // namespace attnlab::cluster
