// `attnlab archive runs/<sweep> --to DIR`: copies into DIR what continuing a sweep on another
// machine needs, so that DIR can be committed or carried there:
//   - the manifest;
//   - every completed run's log: run.h5, config.yaml and the hypotheses of `attnlab eval`
//     (hyp.<split>.txt). Checkpoints of a run that has since completed leave DIR;
//   - every run stopped part-way (preempted, or interrupted with no trainer left): its log and
//     the checkpoints its resume reads, the newest intact one (as many as eval.average_last
//     averages at the end) and best.h5. Older checkpoints of it leave DIR.
// Running runs are left out (stop the sweep first: its runs checkpoint), and so are failed and
// damaged ones. A completed log in DIR is never replaced by an unfinished one, and a DIR that
// holds runs this sweep does not declare is refused. On the new machine,
//   cp -r DIR/. runs/<sweep>/ && attnlab sweep <sweep.yaml> --out runs
// skips the completed runs and resumes the others where they stopped.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "core/app/cli.h"
#include "core/cluster/records.h"
#include "core/cluster/run_progress.h"
#include "core/io/checkpoint_dir.h"
#include "core/io/run_log.h"
#include "core/util/check.h"
#include "core/util/files.h"

namespace attnlab::cli {
namespace fs = std::filesystem;

namespace {

bool same_bytes(const fs::path& a, const fs::path& b) {
  std::error_code error;
  if (!fs::is_regular_file(b, error) || fs::file_size(a) != fs::file_size(b, error)) return false;
  std::ifstream left(a, std::ios::binary), right(b, std::ios::binary);
  return std::equal(std::istreambuf_iterator<char>(left), std::istreambuf_iterator<char>(),
                    std::istreambuf_iterator<char>(right));
}

// What the archive does, and what it did; printed as it goes and summed at the end.
class Archiver {
 public:
  Archiver(fs::path to, bool dry_run) : to_(std::move(to)), dry_run_(dry_run) {}

  // Copies `from` to `to_/relative` unless the same bytes are there: written next to it as .tmp,
  // then put in place by replace_file (core/util/files.h), so an interrupted archive never leaves
  // half a file under the real name.
  void copy(const fs::path& from, const fs::path& relative) {
    const fs::path target = to_ / relative;
    if (same_bytes(from, target)) return;
    const bool replacing = fs::exists(target);
    std::printf("  %s %s\n", replacing ? "update" : "add   ", relative.string().c_str());
    bytes_ += fs::file_size(from);
    ++files_;
    if (dry_run_) return;
    fs::create_directories(target.parent_path());
    const fs::path partial = target.string() + ".tmp";
    fs::copy_file(from, partial, fs::copy_options::overwrite_existing);
    replace_file(partial.string(), target.string());
  }

  void remove(const fs::path& relative) {
    if (!fs::exists(to_ / relative)) return;
    std::printf("  remove %s\n", relative.string().c_str());
    ++removed_;
    if (!dry_run_) fs::remove_all(to_ / relative);
  }

  size_t files() const { return files_; }
  size_t removed() const { return removed_; }
  uintmax_t bytes() const { return bytes_; }

 private:
  fs::path to_;
  bool dry_run_;
  size_t files_ = 0;
  size_t removed_ = 0;
  uintmax_t bytes_ = 0;
};

// The log files of a run: run.h5, config.yaml and hyp.<split>.txt, those that exist.
std::vector<fs::path> log_files(const fs::path& run_dir) {
  std::vector<fs::path> files{run_dir / "run.h5"};
  if (fs::exists(run_dir / "config.yaml")) files.push_back(run_dir / "config.yaml");
  for (const fs::directory_entry& entry : fs::directory_iterator(run_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("hyp.", 0) == 0 && entry.path().extension() == ".txt") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

int64_t checkpoints_averaged(const fs::path& run_file) {
  for (const auto& [key, value] : io::read_run(run_file.string()).config) {
    if (key == "eval.average_last") return std::max<int64_t>(1, std::stoll(value));
  }
  return 1;
}

// The checkpoint steps a resume of run_dir needs: the newest intact one and the ones before it
// that the final average reads; {} when no checkpoint is intact.
std::vector<int64_t> steps_to_resume(const fs::path& run_dir) {
  const io::CheckpointDir checkpoints((run_dir / "ckpt").string());
  const io::CheckpointDir::Newest newest = checkpoints.newest_valid();
  if (!newest.found) return {};
  std::vector<int64_t> steps;
  for (int64_t step : checkpoints.steps()) {
    if (step <= newest.step) steps.push_back(step);
  }
  const auto keep = static_cast<size_t>(checkpoints_averaged(run_dir / "run.h5"));
  if (steps.size() > keep) steps.erase(steps.begin(), steps.end() - static_cast<ptrdiff_t>(keep));
  return steps;
}

// Refuses a destination that already archives another sweep: its manifest may list fewer runs
// (adaptive seeds add runs) but none that this sweep does not.
void check_same_sweep(const fs::path& from, const fs::path& to) {
  if (!fs::exists(to / "manifest.yaml")) return;
  std::set<std::string> declared;
  for (const cluster::ManifestRun& run : cluster::read_manifest_runs(from.string())) {
    declared.insert(run.id);
  }
  std::vector<std::string> foreign;
  for (const cluster::ManifestRun& run : cluster::read_manifest_runs(to.string())) {
    if (!declared.count(run.id)) foreign.push_back(run.name + " (" + run.id + ")");
  }
  if (foreign.empty()) return;
  std::string list;
  for (size_t i = 0; i < foreign.size() && i < 5; ++i) list += (i ? ", " : "") + foreign[i];
  if (foreign.size() > 5) list += ", ...";
  throw Error((to / "manifest.yaml").string() + " lists " + std::to_string(foreign.size()) +
              " run(s) that " + (from / "manifest.yaml").string() + " does not declare (" + list +
              "): it archives another sweep; choose another --to");
}

int run_archive(const std::vector<std::string>& args) {
  po::options_description options("archive options");
  options.add_options()("dir", po::value<std::string>(), "the sweep directory (runs/<sweep>)")(
      "to", po::value<std::string>(),
      "the archive directory (e.g. docs/results/<sweep>/runs); created if missing")(
      "completed-only", po::bool_switch(),
      "leave out runs stopped part-way (their logs and checkpoints)")(
      "dry-run", po::bool_switch(), "print what would be copied and removed; write nothing");
  po::positional_options_description positional;
  positional.add("dir", 1);
  po::variables_map values;
  if (!parse("archive", "runs/<sweep> --to DIR", args, options, positional, values)) {
    return kExitOk;
  }
  if (!values.count("dir")) throw UsageError("missing the sweep directory, e.g. runs/<sweep>");
  if (!values.count("to")) throw UsageError("missing --to DIR, the archive directory");
  const fs::path from = values["dir"].as<std::string>();
  const fs::path to = values["to"].as<std::string>();
  const bool completed_only = values["completed-only"].as<bool>();
  const bool dry_run = values["dry-run"].as<bool>();
  const std::vector<cluster::ManifestRun> runs = cluster::read_manifest_runs(from.string());
  if (fs::exists(to) && fs::equivalent(from, to)) {
    throw UsageError("--to " + to.string() + " is the sweep directory itself");
  }
  check_same_sweep(from, to);

  Archiver archive(to, dry_run);
  std::printf("%s %s into %s\n", dry_run ? "would archive" : "archiving", from.string().c_str(),
              to.string().c_str());
  archive.copy(from / "manifest.yaml", "manifest.yaml");
  size_t completed = 0, in_progress = 0, not_started = 0;
  std::vector<std::string> left_out;
  for (const cluster::ManifestRun& run : runs) {
    const fs::path run_dir = from / run.id;
    const cluster::RunProgress progress = cluster::read_run_progress(run_dir.string());
    if (progress.state == cluster::RunState::kNotStarted) {
      ++not_started;
      continue;
    }
    if (progress.state == cluster::RunState::kCompleted) {
      ++completed;
      for (const fs::path& file : log_files(run_dir))
        archive.copy(file, fs::path(run.id) / file.filename());
      archive.remove(fs::path(run.id) / "ckpt");  // a completed log needs no checkpoint
      continue;
    }
    if (!cluster::resumable(progress.state)) {
      left_out.push_back(run.name + ": " + cluster::run_state_names().name(progress.state) +
                         (progress.state == cluster::RunState::kRunning
                              ? " (stop the sweep first; its runs checkpoint, and archive again)"
                              : ""));
      continue;
    }
    if (completed_only) {
      left_out.push_back(run.name + ": stopped at step " + std::to_string(progress.step) +
                         " (--completed-only)");
      continue;
    }
    if (cluster::read_run_progress((to / run.id).string()).state == cluster::RunState::kCompleted) {
      left_out.push_back(run.name + ": stopped here at step " + std::to_string(progress.step) +
                         ", but " + (to / run.id / "run.h5").string() +
                         " is completed; it is kept");
      continue;
    }
    const std::vector<int64_t> steps = steps_to_resume(run_dir);
    if (steps.empty()) {
      left_out.push_back(run.name + ": stopped at step " + std::to_string(progress.step) +
                         " with no intact checkpoint (it starts again wherever it runs)");
      continue;
    }
    ++in_progress;
    for (const fs::path& file : log_files(run_dir))
      archive.copy(file, fs::path(run.id) / file.filename());
    const io::CheckpointDir source((run_dir / "ckpt").string());
    const fs::path ckpt = fs::path(run.id) / "ckpt";
    for (int64_t step : steps) {
      archive.copy(source.path_for(step), ckpt / fs::path(source.path_for(step)).filename());
    }
    const fs::path best = run_dir / "ckpt" / "best.h5";
    if (fs::exists(best)) archive.copy(best, ckpt / "best.h5");
    const io::CheckpointDir archived((to / ckpt).string());
    for (int64_t step : archived.steps()) {
      if (!std::binary_search(steps.begin(), steps.end(), step)) {
        archive.remove(ckpt / fs::path(archived.path_for(step)).filename());
      }
    }
  }
  for (const std::string& line : left_out) std::printf("  not archived: %s\n", line.c_str());
  std::printf(
      "%zu runs: %zu completed, %zu stopped part-way (with checkpoints), %zu not started, "
      "%zu not archived; %zu file(s) %s (%.1f MB), %zu removed\n",
      runs.size(), completed, in_progress, not_started, left_out.size(), archive.files(),
      dry_run ? "to write" : "written", static_cast<double>(archive.bytes()) / 1e6,
      archive.removed());
  return kExitOk;
}

const CommandRegistration kRegister{
    "archive", "copy a sweep's completed logs and resumable checkpoints to carry or commit it",
    &run_archive};

}  // namespace
}  // namespace attnlab::cli
