// The job array script: #SBATCH header, quoted data, environment, preemption trap, requeue.
#include "core/cluster/sbatch.h"

#include <csignal>
#include <sstream>

#include "core/cluster/shell.h"
#include "core/config/config.h"
#include "core/util/check.h"
#include "core/util/exit_code.h"

namespace attnlab::cluster {

namespace {

// What one task of the array runs: ranks, CPUs per rank, and how they spread over nodes.
struct TaskLayout {
  int64_t ranks = 1;
  int64_t cpus = 1;      // per rank: its threads
  int64_t nodes = 0;     // 0: as Slurm places them
  int64_t per_node = 0;  // ranks per node; 0: as Slurm places them
  bool srun = false;     // ranks started by srun (else mpirun)
};

// The profile and the job checked against each other, and the layout they give.
TaskLayout task_layout(const ArrayJob& job) {
  const SlurmProfile& profile = job.profile;
  const std::string from = profile.source.empty() ? "profile: " : profile.source + ": ";
  validate(profile, from);
  check_value(ValueKind::kSlurmName, job.sweep, "sweep name");
  CHECK(!job.run_ids.empty()) << "a job array needs at least one run";
  for (const std::string& id : job.run_ids) check_value(ValueKind::kSlurmName, id, "run id");
  if (job.ranks < 1 || job.threads_per_rank < 1) {
    throw ConfigError("cluster.ranks and cluster.threads_per_rank must be >= 1, got " +
                      std::to_string(job.ranks) + " and " + std::to_string(job.threads_per_rank));
  }
  TaskLayout layout;
  layout.ranks = profile.ranks > 0 ? profile.ranks : job.ranks;
  layout.cpus = profile.cpus_per_task > 0 ? profile.cpus_per_task : job.threads_per_rank;
  layout.srun = profile.launcher == "srun";
  layout.nodes = profile.nodes;
  layout.per_node = profile.ranks_per_node;
  const int64_t ranks = layout.ranks;
  const int64_t nodes = layout.nodes;
  const int64_t per_node = layout.per_node;
  if (nodes > 0 && per_node > 0 && nodes * per_node != ranks) {
    throw ConfigError(from + "nodes x ranks_per_node is " + std::to_string(nodes) + " x " +
                      std::to_string(per_node) + " = " + std::to_string(nodes * per_node) +
                      " ranks, but a run has " + std::to_string(ranks) +
                      " (the profile's ranks, else the experiment's cluster.ranks)");
  }
  if (nodes > ranks) {
    throw ConfigError(from + "nodes is " + std::to_string(nodes) + " but a run has only " +
                      std::to_string(ranks) + " ranks");
  }
  if (per_node > ranks) {
    throw ConfigError(from + "ranks_per_node is " + std::to_string(per_node) +
                      " but a run has only " + std::to_string(ranks) + " ranks");
  }
  return layout;
}

// The #SBATCH lines.
void write_header(std::ostream& s, const ArrayJob& job, const TaskLayout& layout) {
  const SlurmProfile& profile = job.profile;
  const int64_t ranks = layout.ranks;
  const int64_t cpus = layout.cpus;
  const int64_t nodes = layout.nodes;
  const int64_t per_node = layout.per_node;
  s << "#!/bin/bash\n";
  s << "# Values below are single-quoted so that they never expand (SC2016 is the point).\n";
  s << "# shellcheck disable=SC2016\n";
  s << "# attnlab sweep job array: task i trains run_ids[i] below. Rendered by `attnlab sweep "
       "--launcher slurm`;\n";
  s << "# rerun that command instead of editing or resubmitting this file.\n";
  s << "#SBATCH --job-name=attnlab-" << job.sweep << "\n";
  s << "#SBATCH --array=0-" << job.run_ids.size() - 1;
  if (profile.max_running > 0) s << "%" << profile.max_running;
  s << "\n";
  s << "#SBATCH --ntasks=" << ranks << "\n";
  if (nodes > 0) s << "#SBATCH --nodes=" << nodes << "\n";
  if (per_node > 0) s << "#SBATCH --ntasks-per-node=" << per_node << "\n";
  s << "#SBATCH --cpus-per-task=" << cpus << "\n";
  s << "#SBATCH --time=" << profile.time << "\n";
  if (!profile.mem.empty()) s << "#SBATCH --mem=" << profile.mem << "\n";
  if (!profile.partition.empty()) s << "#SBATCH --partition=" << profile.partition << "\n";
  if (!profile.account.empty()) s << "#SBATCH --account=" << profile.account << "\n";
  if (!profile.qos.empty()) s << "#SBATCH --qos=" << profile.qos << "\n";
  if (profile.overcommit) s << "#SBATCH --overcommit\n";
  s << "#SBATCH --output=slurm/%A_%a.log\n";
  s << "#SBATCH --open-mode=append\n";
  s << "#SBATCH --requeue\n";
  if (profile.signal_seconds > 0) s << "#SBATCH --signal=B:USR1@" << profile.signal_seconds << "\n";
  for (const std::string& option : profile.sbatch) s << "#SBATCH " << option << "\n";
  s << "set -o pipefail\n\n";
}

// The job's data as quoted shell variables, and the run of this task.
void write_variables(std::ostream& s, const ArrayJob& job, const TaskLayout& layout) {
  const int64_t ranks = layout.ranks;
  const int64_t cpus = layout.cpus;
  const int64_t nodes = layout.nodes;
  const int64_t per_node = layout.per_node;
  const bool srun = layout.srun;
  s << "attnlab=" << shell_quote(job.binary) << "\n";
  s << "sweep_dir=" << shell_quote(job.sweep_dir) << "\n";
  s << "sweep_id=" << shell_quote(job.sweep) << "\n";
  s << "run_ids=(";
  for (size_t i = 0; i < job.run_ids.size(); ++i) {
    s << (i ? " " : "") << shell_quote(job.run_ids[i]);
  }
  s << ")\n";
  s << "ranks=" << ranks << "\n";
  if (nodes > 0 && srun) s << "nodes=" << nodes << "\n";  // mpirun takes the allocation's
  if (per_node > 0) s << "ranks_per_node=" << per_node << "\n";
  s << "threads=" << cpus << "\n\n";

  s << ": \"${SLURM_ARRAY_TASK_ID:?this script runs as a task of a Slurm job array (sbatch)}\"\n";
  s << "run_id=${run_ids[$SLURM_ARRAY_TASK_ID]}\n";
  s << "run_dir=$sweep_dir/$run_id\n\n";
}

// Threads, Open MPI's network, the profile's variables and set-up lines, cluster/env.sh.
void write_environment(std::ostream& s, const ArrayJob& job) {
  const SlurmProfile& profile = job.profile;
  s << "# attnlab splits its products over OpenMP's threads; OpenBLAS runs one thread.\n";
  s << "export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=1\n";
  if (!profile.network_interface.empty()) {
    s << "# Open MPI's TCP traffic, between ranks and its own out-of-band channel, only there.\n";
    s << "export OMPI_MCA_btl_tcp_if_include=" << shell_quote(profile.network_interface)
      << " OMPI_MCA_oob_tcp_if_include=" << shell_quote(profile.network_interface) << "\n";
  }
  for (const auto& [name, value] : profile.env) {
    s << "export " << name << "=" << shell_quote(value) << "\n";
  }
  s << "# Idle OpenMP threads sleep instead of spinning on cores other ranks need (a value from\n";
  s << "# the submitting shell or the profile wins).\n";
  s << "export OMP_WAIT_POLICY=\"${OMP_WAIT_POLICY:-passive}\"\n";
  if (!job.env_script.empty()) {
    s << "if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then\n";
    s << "  # shellcheck source=/dev/null\n";
    s << "  source " << shell_quote(job.env_script) << "\n";
    s << "fi\n";
  }
  if (!profile.setup.empty()) {
    s << "# set-up lines of the cluster profile\n";
    for (const std::string& line : profile.setup) s << line << "\n";
  }
  s << "\n";

  s << "echo \"attnlab: array task ${SLURM_ARRAY_TASK_ID} trains run ${run_id} on $(hostname)"
       " (restart ${SLURM_RESTART_COUNT:-0})\"\n\n";
}

// USR1 (Slurm's warning before the time limit, or a stop request) passed on to the launcher.
void write_signal_forwarding(std::ostream& s) {
  s << "# Slurm's warning signal (USR1 before the time limit, or scancel --batch --signal=USR1)\n";
  s << "# reaches this shell only: pass it to the launcher, which hands it to every rank. The\n";
  s << "# trainer then checkpoints, marks the run preempted and exits 3.\n";
  s << "launcher_pid=0\n";
  s << "stop_requested=0\n";
  s << "rm -f \"$run_dir/last_exit\"\n";
  s << "forward_usr1() {\n";
  s << "  stop_requested=1\n";
  s << "  if ((launcher_pid > 0)); then kill -USR1 \"$launcher_pid\" 2>/dev/null || true; fi\n";
  s << "}\n";
  s << "trap forward_usr1 USR1\n\n";
}

// srun or mpirun starting the ranks of `attnlab train` in the background; its exit status.
void write_launch(std::ostream& s, const ArrayJob& job, const TaskLayout& layout) {
  const SlurmProfile& profile = job.profile;
  const int64_t nodes = layout.nodes;
  const int64_t per_node = layout.per_node;
  if (layout.srun) {
    // --kill-on-bad-exit: a rank that dies (a crash, a lost node) ends the others, which would
    // otherwise wait for it in their next allreduce until the time limit.
    s << "srun --mpi=pmix --ntasks=\"$ranks\" --cpus-per-task=\"$threads\"";
    if (nodes > 0) s << " --nodes=\"$nodes\"";
    if (per_node > 0) s << " --ntasks-per-node=\"$ranks_per_node\"";
    if (profile.overcommit) s << " --overcommit";
    s << " --kill-on-bad-exit=1 \\\n";
  } else {
    s << "if [[ $EUID -eq 0 ]]; then\n";
    s << "  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n";
    s << "fi\n";
    s << "mpirun -np \"$ranks\" --bind-to none";
    // mpirun starts its daemons on the allocation's nodes through Slurm, then places the ranks.
    if (per_node > 0) {
      s << " --map-by \"ppr:$ranks_per_node:node\"";
    } else if (nodes > 0) {
      s << " --map-by node";
    }
    s << " \\\n";
  }
  s << "  \"$attnlab\" train -c \"$run_dir/config.yaml\" --out \"$run_dir\" --run-id \"$run_id\" "
       "\\\n";
  s << "  --sweep-id \"$sweep_id\" >>\"$run_dir/train.log\" 2>&1 &\n";
  s << "launcher_pid=$!\n";
  s << "# wait returns early (status > 128) each time the trap runs: wait until the launcher is\n";
  s << "# gone, then once more for its exit status.\n";
  s << "wait \"$launcher_pid\"\n";
  s << "while kill -0 \"$launcher_pid\" 2>/dev/null; do wait \"$launcher_pid\"; done\n";
  s << "wait \"$launcher_pid\"\n";
  s << "status=$?\n";
  const int killed_by_usr1 = 128 + SIGUSR1;
  s << "# A rank that USR1 reached before the trainer caught it died of it (status "
    << killed_by_usr1 << "): a\n";
  s << "# stop on request like exit " << kExitStopped << ", to be resumed, not a failure.\n";
  s << "if ((stop_requested && status == " << killed_by_usr1 << ")); then status=" << kExitStopped
    << "; fi\n";
  s << "echo \"$status\" >\"$run_dir/last_exit\"\n\n";
}

// What the task does with the trainer's exit status: done, requeued after a stop, or failed.
void write_exit_handling(std::ostream& s) {
  s << "case $status in\n";
  s << "  " << kExitOk << ")\n";
  s << "    echo \"attnlab: run ${run_id} completed\"\n";
  s << "    ;;\n";
  s << "  " << kExitStopped << ")\n";
  s << "    echo \"attnlab: run ${run_id} preempted after a checkpoint; requeueing its task\"\n";
  s << "    if scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"; then exit 0; "
       "fi\n";
  s << "    echo \"attnlab: requeue refused; rerun attnlab sweep to resume run ${run_id}\" >&2\n";
  s << "    exit " << kExitStopped << "\n";
  s << "    ;;\n";
  s << "  *)\n";
  s << "    echo \"attnlab: run ${run_id} failed (exit ${status}); see ${run_dir}/train.log\" "
       ">&2\n";
  s << "    exit \"$status\"\n";
  s << "    ;;\n";
  s << "esac\n";
}

}  // namespace

std::string render_array_script(const ArrayJob& job) {
  const TaskLayout layout = task_layout(job);
  std::ostringstream s;
  write_header(s, job, layout);
  write_variables(s, job, layout);
  write_environment(s, job);
  write_signal_forwarding(s);
  write_launch(s, job, layout);
  write_exit_handling(s);
  return s.str();
}

}  // namespace attnlab::cluster
