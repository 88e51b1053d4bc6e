// `attnlab cancel runs/<sweep>`: cancels the sweep's Slurm job arrays that still have tasks queued
// or running. A cancelled run checkpoints on SIGTERM; rerunning the sweep resumes it.
#include <iostream>
#include <vector>

#include "core/app/cli.h"
#include "core/cluster/plan.h"
#include "core/cluster/records.h"
#include "core/cluster/slurm.h"
#include "core/util/check.h"

namespace attnlab::cli {
namespace {

int run_cancel(const std::vector<std::string>& args) {
  po::options_description options("cancel options");
  options.add_options()("dir", po::value<std::string>(), "the sweep directory (runs/<sweep>)");
  po::positional_options_description positional;
  positional.add("dir", 1);
  po::variables_map values;
  if (!parse("cancel", "runs/<sweep>", args, options, positional, values)) return kExitOk;
  if (!values.count("dir")) throw UsageError("missing the sweep directory, e.g. runs/<sweep>");
  const std::string dir = values["dir"].as<std::string>();
  cluster::read_manifest_runs(dir);  // fails clearly when dir is not a sweep directory

  const std::vector<cluster::Submission> submissions = cluster::read_submissions(dir);
  if (submissions.empty()) {
    std::cout << dir << " has no Slurm submissions (a local sweep stops with Ctrl-C)\n";
    return kExitOk;
  }
  if (!cluster::slurm_installed()) throw Error("Slurm is not installed here (no sbatch on PATH)");
  std::vector<std::string> active_jobs;
  size_t active_tasks = 0;
  for (const cluster::Submission& submission : submissions) {
    size_t active = 0;
    for (const auto& [task, state] : cluster::array_task_states(submission.job_id)) {
      if (cluster::slurm_state_active(state)) ++active;
    }
    if (active > 0) active_jobs.push_back(submission.job_id);
    active_tasks += active;
  }
  if (active_jobs.empty()) {
    std::cout << "nothing to cancel: no task of " << submissions.size()
              << " job array(s) is queued or running\n";
    return kExitOk;
  }
  const std::string failure = cluster::cancel_jobs(active_jobs);
  if (!failure.empty()) throw Error("scancel failed: " + failure);
  std::cout << "cancelled job array";
  for (const std::string& job : active_jobs) std::cout << " " << job;
  std::cout << " (" << active_tasks << " tasks queued or running); rerun the sweep to resume\n";
  return kExitOk;
}

const CommandRegistration kRegister{"cancel", "cancel the Slurm jobs of a sweep directory",
                                    &run_cancel};

}  // namespace
}  // namespace attnlab::cli
