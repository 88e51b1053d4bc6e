// Reading the manifest's run list and reading/writing the Slurm submissions of a sweep directory.
#include "core/cluster/records.h"

// GCC 12 reports -Wdangling-pointer inside yaml-cpp 0.7's inline node code, a false positive on
// its shared memory holder; the pragma covers only yaml-cpp's own lines.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop
#else
#include <yaml-cpp/yaml.h>
#endif

#include <ctime>
#include <filesystem>
#include <fstream>

#include "core/config/options.h"
#include "core/util/check.h"

namespace attnlab::cluster {
namespace fs = std::filesystem;
namespace {

YAML::Node load(const std::string& path) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw Error("cannot read " + path);
  } catch (const YAML::Exception& error) {
    throw Error(path + ":" + std::to_string(error.mark.line + 1) + ": " + error.msg);
  }
}

std::string text(const YAML::Node& node) { return node && node.IsScalar() ? node.Scalar() : ""; }

}  // namespace

std::vector<ManifestRun> read_manifest_runs(const std::string& sweep_dir) {
  const std::string path = (fs::path(sweep_dir) / "manifest.yaml").string();
  if (!fs::exists(path)) {
    throw Error(sweep_dir +
                " is not a sweep directory: it has no manifest.yaml (attnlab sweep "
                "writes it)");
  }
  const YAML::Node root = load(path);
  if (!root.IsMap() || !root["runs"] || !root["runs"].IsSequence()) {
    throw Error(path + ": not a sweep manifest (no runs: list)");
  }
  std::vector<ManifestRun> runs;
  for (const YAML::Node& run : root["runs"]) {
    runs.push_back(ManifestRun{text(run["id"]), text(run["name"]), text(run["group"])});
    CHECK(!runs.back().id.empty()) << path << ": a run without an id";
  }
  return runs;
}

std::string submissions_path(const std::string& sweep_dir) {
  return (fs::path(sweep_dir) / "slurm.yaml").string();
}

std::vector<Submission> read_submissions(const std::string& sweep_dir) {
  const std::string path = submissions_path(sweep_dir);
  if (!fs::exists(path)) return {};
  const YAML::Node root = load(path);
  std::vector<Submission> out;
  const YAML::Node list = root.IsMap() ? root["submissions"] : YAML::Node();
  CHECK(list && list.IsSequence()) << path << ": expected a submissions: list";
  for (const YAML::Node& item : list) {
    Submission submission{text(item["job_id"]), text(item["script"]), text(item["submitted"]), {}};
    CHECK(!submission.job_id.empty()) << path << ": a submission without a job_id";
    if (item["runs"] && item["runs"].IsSequence()) {
      for (const YAML::Node& id : item["runs"]) submission.run_ids.push_back(text(id));
    }
    out.push_back(std::move(submission));
  }
  return out;
}

void append_submission(const std::string& sweep_dir, const Submission& submission) {
  std::vector<Submission> all = read_submissions(sweep_dir);
  all.push_back(submission);
  const std::string path = submissions_path(sweep_dir);
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial);
    out << "# Slurm job arrays submitted for this sweep, oldest first; array task i runs "
           "runs[i].\n";
    out << "submissions:\n";
    for (const Submission& entry : all) {
      out << "  - job_id: " << config::format_string(entry.job_id) << "\n";
      out << "    script: " << config::format_string(entry.script) << "\n";
      out << "    submitted: " << config::format_string(entry.submitted) << "\n";
      out << "    runs: [";
      for (size_t i = 0; i < entry.run_ids.size(); ++i) {
        out << (i ? ", " : "") << config::format_string(entry.run_ids[i]);
      }
      out << "]\n";
    }
    CHECK(out.good()) << "cannot write " << partial;
  }
  std::error_code error;
  fs::rename(partial, path, error);
  CHECK(!error) << "cannot rename " << partial << " to " << path << ": " << error.message();
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buffer;
}

}  // namespace attnlab::cluster
