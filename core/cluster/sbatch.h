// Rendering one sweep's Slurm job array script from the runs to train and a cluster profile.
// Values that reach an #SBATCH line are validated (nothing there can be quoted); everything in the
// script body is a single-quoted shell word; the profile's set-up lines are its author's code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/profile.h"

namespace attnlab::cluster {

struct ArrayJob {
  std::string sweep;       // the sweep's name: job name attnlab-<sweep>, --sweep-id
  std::string sweep_dir;   // absolute; the job's working directory
  std::string binary;      // absolute path of attnlab
  std::string env_script;  // cluster/env.sh to source when OPENBLAS_CORETYPE is unset, or ""
  std::vector<std::string> run_ids;  // array task i trains <sweep_dir>/<run_ids[i]>/config.yaml
  int64_t ranks = 1;                 // MPI ranks per run
  int64_t threads_per_rank = 1;      // cores (and OpenBLAS threads) per rank
  SlurmProfile profile;
};

// Task output goes to <sweep_dir>/slurm/<array job>_<task>.log, each run's training output to
// <sweep_dir>/<run_id>/train.log. The script forwards USR1 to the ranks' launcher and requeues
// the task when the trainer exits 3 (preempted after a checkpoint). Throws ConfigError for a
// value that cannot be written safely.
std::string render_array_script(const ArrayJob& job);

}  // namespace attnlab::cluster
