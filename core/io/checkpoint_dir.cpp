// CheckpointDir: listing, keep markers, pruning and the newest intact checkpoint.
#include "core/io/checkpoint_dir.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/io/checkpoint.h"
#include "core/util/check.h"
#include "core/util/isolated.h"

namespace attnlab::io {

namespace fs = std::filesystem;

namespace {

// The n of "step_<n><suffix>", or -1 for any other name.
int64_t step_of(const std::string& name, const std::string& suffix) {
  const std::string prefix = "step_";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return -1;
  }
  const char* begin = name.data() + prefix.size();
  const char* end = name.data() + name.size() - suffix.size();
  int64_t step = -1;
  auto [stop, error] = std::from_chars(begin, end, step);
  return error == std::errc() && stop == end && step >= 0 ? step : -1;
}

}  // namespace

std::string CheckpointDir::path_for(int64_t step) const {
  return (fs::path(dir_) / ("step_" + std::to_string(step) + ".h5")).string();
}

void CheckpointDir::create() const {
  std::error_code error;
  fs::create_directories(dir_, error);
  CHECK(!error) << dir_ << ": cannot create the checkpoint directory: " << error.message();
}

std::vector<int64_t> CheckpointDir::steps() const {
  std::vector<int64_t> steps;
  std::error_code error;
  if (!fs::is_directory(dir_, error)) return steps;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_)) {
    int64_t step = step_of(entry.path().filename().string(), ".h5");
    if (step >= 0 && entry.is_regular_file()) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

void CheckpointDir::keep(int64_t step) const {
  std::string marker = (fs::path(dir_) / ("step_" + std::to_string(step) + ".keep")).string();
  std::ofstream out(marker);
  CHECK(out.good()) << marker << ": cannot create the keep marker";
}

bool CheckpointDir::is_kept(int64_t step) const {
  return fs::exists(fs::path(dir_) / ("step_" + std::to_string(step) + ".keep"));
}

std::vector<int64_t> CheckpointDir::prune(int64_t keep_last) const {
  CHECK(keep_last >= 0) << dir_ << ": cannot keep the last " << keep_last << " checkpoints";
  std::vector<int64_t> all = steps();
  std::vector<int64_t> deleted;
  int64_t removable = static_cast<int64_t>(all.size()) - keep_last;
  for (int64_t i = 0; i < removable; ++i) {
    int64_t step = all[static_cast<size_t>(i)];
    if (is_kept(step)) continue;
    std::error_code error;
    fs::remove(path_for(step), error);
    CHECK(!error) << path_for(step) << ": cannot delete: " << error.message();
    deleted.push_back(step);
  }
  std::error_code error;
  if (fs::is_directory(dir_, error)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_)) {
      if (step_of(entry.path().filename().string(), ".h5.tmp") >= 0) fs::remove(entry.path());
    }
  }
  return deleted;
}

CheckpointDir::Newest CheckpointDir::newest_valid(const std::string& architecture) const {
  Newest newest;
  std::vector<int64_t> all = steps();
  for (auto step = all.rbegin(); step != all.rend(); ++step) {
    std::string path = path_for(*step);
    try {
      // Opening and reading every tensor happen first in a child process: a damaged file that
      // crashes HDF5 is then a skipped checkpoint, not a crashed resume.
      run_in_child(
          [&] {
            Checkpoint probe = Checkpoint::open(path);
            probe.verify();
          },
          path);
      Checkpoint checkpoint = Checkpoint::open(path);
      CHECK(checkpoint.state().step == *step)
          << path << ": holds step " << checkpoint.state().step << ", its name says " << *step;
      if (!architecture.empty()) {
        try {
          checkpoint.check_architecture(architecture);
        } catch (const Error& error) {
          if (newest.other_architecture.empty()) newest.other_architecture = error.what();
          newest.warnings.push_back("skipping checkpoint " + path +
                                    " of another architecture: " + error.what());
          continue;
        }
      }
      newest.found = true;
      newest.step = *step;
      newest.path = path;
      return newest;
    } catch (const Error& error) {
      newest.warnings.push_back("skipping damaged checkpoint " + path + ": " + error.what());
    }
  }
  return newest;
}

}  // namespace attnlab::io
