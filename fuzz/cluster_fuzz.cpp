// The YAML files of the cluster layer, each read by the function the program uses: a cluster
// profile (cluster::load_profile: `attnlab sweep --profile`, `attnlab plan`), a sweep's
// manifest.yaml (cluster::read_manifest_runs: `attnlab status`, `cancel`) and its slurm.yaml
// (cluster::read_submissions: `status`, `cancel`, a rerun of a Slurm sweep). The input is written
// to all three files; each reader takes what it understands.
//
// Beyond crashes, one property is checked: a Slurm record read back after append_submission (how
// the program adds a submission to slurm.yaml) holds the submissions read before, unchanged, and
// the new one, so values that do not survive being written are a finding.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster/profile.h"
#include "core/cluster/records.h"
#include "core/config/yaml_tree.h"
#include "core/util/check.h"
#include "fuzz/fuzz_common.h"

namespace {

using attnlab::Error;
namespace cluster = attnlab::cluster;
namespace fuzz = attnlab::fuzz;

bool same(const cluster::Submission& a, const cluster::Submission& b) {
  return a.job_id == b.job_id && a.script == b.script && a.submitted == b.submitted &&
         a.run_ids == b.run_ids;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::clear_scratch();
  const std::string_view text = fuzz::as_text(data, size);
  const std::filesystem::path sweep_dir = fuzz::scratch_dir();
  fuzz::write_file(sweep_dir / "profile.yaml", text);
  fuzz::write_file(sweep_dir / "manifest.yaml", text);
  fuzz::write_file(sweep_dir / "slurm.yaml", text);

  // The three readers parse the same text with config::read_yaml_file first; when that fails,
  // each of them reports the same error.
  try {
    (void)attnlab::config::read_yaml_file((sweep_dir / "profile.yaml").string(), "the input");
  } catch (const Error&) {
    return 0;
  }
  try {
    (void)cluster::load_profile((sweep_dir / "profile.yaml").string());
  } catch (const Error&) {
  }
  try {
    (void)cluster::read_manifest_runs(sweep_dir.string());
  } catch (const Error&) {
  }
  std::vector<cluster::Submission> before;
  try {
    before = cluster::read_submissions(sweep_dir.string());
  } catch (const Error&) {
    return 0;
  }
  const cluster::Submission added{
      "4242", "slurm/array-2.sbatch", "2024-05-01T12:00:00Z", {"0123456789ab"}};
  std::vector<cluster::Submission> after;
  try {
    cluster::append_submission(sweep_dir.string(), added);
    after = cluster::read_submissions(sweep_dir.string());
  } catch (const Error& error) {
    std::fprintf(stderr, "slurm.yaml does not read back after append_submission: %s\n",
                 error.what());
    __builtin_trap();
  }
  bool kept = after.size() == before.size() + 1 && same(after.back(), added);
  for (size_t i = 0; kept && i < before.size(); ++i) kept = same(before[i], after[i]);
  if (!kept) {
    std::fprintf(stderr,
                 "append_submission changed the submissions it rewrote (%zu before, %zu "
                 "after)\n",
                 before.size(), after.size());
    __builtin_trap();
  }
  return 0;
}
