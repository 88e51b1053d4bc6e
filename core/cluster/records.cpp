// Reading the manifest's run list and reading/writing the Slurm submissions of a sweep directory.
#include "core/cluster/records.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config/options.h"
#include "core/config/yaml_tree.h"
#include "core/util/check.h"
#include "core/util/files.h"

namespace attnlab::cluster {
namespace fs = std::filesystem;
namespace {

using config::YamlNode;

YamlNode load(const std::string& path) { return config::read_yaml_file(path, "the sweep record"); }

std::string text(const YamlNode* node) { return node ? node->text() : ""; }

}  // namespace

std::vector<ManifestRun> read_manifest_runs(const std::string& sweep_dir) {
  const std::string path = (fs::path(sweep_dir) / "manifest.yaml").string();
  if (!fs::exists(path)) {
    throw Error(sweep_dir +
                " is not a sweep directory: it has no manifest.yaml (attnlab sweep "
                "writes it)");
  }
  const YamlNode root = load(path);
  const YamlNode* list = root.find("runs");
  if (!list || !list->is_sequence()) throw Error(path + ": not a sweep manifest (no runs: list)");
  std::vector<ManifestRun> runs;
  for (const YamlNode& run : list->items) {
    ManifestRun entry{text(run.find("id")), text(run.find("name")), text(run.find("group")), ""};
    CHECK(!entry.id.empty()) << path << ": a run without an id";
    const std::string seed_suffix = ".seed" + text(run.find("seed"));
    const bool has_suffix = entry.name.size() > seed_suffix.size() &&
                            entry.name.compare(entry.name.size() - seed_suffix.size(),
                                               seed_suffix.size(), seed_suffix) == 0;
    entry.row =
        has_suffix ? entry.name.substr(0, entry.name.size() - seed_suffix.size()) : entry.name;
    runs.push_back(std::move(entry));
  }
  return runs;
}

std::string submissions_path(const std::string& sweep_dir) {
  return (fs::path(sweep_dir) / "slurm.yaml").string();
}

std::vector<Submission> read_submissions(const std::string& sweep_dir) {
  const std::string path = submissions_path(sweep_dir);
  if (!fs::exists(path)) return {};
  const YamlNode root = load(path);
  std::vector<Submission> out;
  const YamlNode* list = root.find("submissions");
  CHECK(list && list->is_sequence()) << path << ": expected a submissions: list";
  for (const YamlNode& item : list->items) {
    Submission submission{
        text(item.find("job_id")), text(item.find("script")), text(item.find("submitted")), {}};
    CHECK(!submission.job_id.empty()) << path << ": a submission without a job_id";
    if (const YamlNode* ids = item.find("runs"); ids && ids->is_sequence()) {
      for (const YamlNode& id : ids->items) submission.run_ids.push_back(id.text());
    }
    out.push_back(std::move(submission));
  }
  return out;
}

void append_submission(const std::string& sweep_dir, const Submission& submission) {
  std::vector<Submission> all = read_submissions(sweep_dir);
  all.push_back(submission);
  std::ostringstream out;
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
  write_file_atomically(submissions_path(sweep_dir), out.str());
}

}  // namespace attnlab::cluster
