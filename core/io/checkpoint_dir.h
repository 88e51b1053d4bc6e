// CheckpointDir: the checkpoints of one run (<run>/ckpt/step_<n>.h5): listing, keep markers,
// pruning to the last K, and finding the newest checkpoint that is intact.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attnlab::io {

class CheckpointDir {
 public:
  // `dir` need not exist yet.
  explicit CheckpointDir(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  // <dir>/step_<step>.h5
  std::string path_for(int64_t step) const;
  // Creates the directory (and its parents) if missing.
  void create() const;
  // Steps of the files named step_<n>.h5, ascending (temporary .tmp files are not listed).
  std::vector<int64_t> steps() const;

  // Marks a checkpoint to survive pruning: an empty file step_<n>.keep beside it.
  void keep(int64_t step) const;
  bool is_kept(int64_t step) const;
  // Deletes every checkpoint but the newest `keep_last` and the kept ones, and any leftover
  // step_<n>.h5.tmp of an interrupted save; returns the deleted steps.
  std::vector<int64_t> prune(int64_t keep_last) const;

  struct Newest {
    bool found = false;
    int64_t step = 0;
    std::string path;
    // One line per newer checkpoint that was skipped because it is damaged, with the reason.
    std::vector<std::string> warnings;
    // The first checkpoint skipped for being of another architecture ("" when none was): when
    // nothing else is found, the caller reports this instead of starting afresh.
    std::string other_architecture;
  };
  // The newest checkpoint that opens, is an attnlab checkpoint of its file name's step, was
  // written for `architecture` (any, when it is empty) and whose metadata and tensors pass their
  // checksums. Nothing found (no directory, no files, or every file damaged) is not an error:
  // `found` is false and the warnings say why.
  Newest newest_valid(const std::string& architecture = "") const;

 private:
  std::string dir_;
};

}  // namespace attnlab::io
