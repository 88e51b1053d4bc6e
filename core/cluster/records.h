// What a sweep directory (runs/<sweep>/) records besides the runs themselves: the manifest's run
// list (written by config::write_manifest) and the Slurm submissions (slurm.yaml), so that status,
// cancel and a rerun of the sweep find the jobs again.
#pragma once

#include <string>
#include <vector>

namespace attnlab::cluster {

struct ManifestRun {
  std::string id;
  std::string name;
  std::string group;
  std::string row;  // the name without its ".seed<n>" (config::SweepRun::row)
};

// The runs listed in <sweep_dir>/manifest.yaml, in manifest order; an Error if it is missing or
// not a manifest.
std::vector<ManifestRun> read_manifest_runs(const std::string& sweep_dir);

// One `sbatch` of a job array: array task i runs run_ids[i].
struct Submission {
  std::string job_id;
  std::string script;     // path of the rendered script, relative to the sweep directory
  std::string submitted;  // ISO 8601 UTC
  std::vector<std::string> run_ids;
};

// <sweep_dir>/slurm.yaml
std::string submissions_path(const std::string& sweep_dir);
// The submissions recorded, oldest first ({} when there is no file).
std::vector<Submission> read_submissions(const std::string& sweep_dir);
// Adds one submission to the file (rewritten whole, then renamed into place).
void append_submission(const std::string& sweep_dir, const Submission& submission);

}  // namespace attnlab::cluster
