// Checkpoints of a Trainer: parameters and Adam moments by name, step, tokens, data position and
// the resolved config, through core/io's atomic Checkpoint files (ckpt/step_<n>.h5).
#pragma once

#include <cstdint>
#include <string>

#include "core/train/data_source.h"
#include "core/train/trainer.h"

namespace attnlab {

struct CheckpointState {
  int64_t step = 0;
  int64_t tokens = 0;
  DataPosition position;
  StopState stopping;          // defaults for checkpoints written before stop rules existed
  double train_seconds = 0.0;  // training time of every process up to this checkpoint
};

// Writes <run_dir>/ckpt/step_<step>.h5 and keeps the newest `keep` (plus any marked kept).
std::string save_checkpoint(const std::string& run_dir, Trainer& trainer, int64_t keep);
// Writes <run_dir>/ckpt/best.h5 (the parameters of the lowest dev loss so far), never pruned.
void save_best_checkpoint(const std::string& run_dir, Trainer& trainer);
// <run_dir>/ckpt/best.h5
std::string best_checkpoint_path(const std::string& run_dir);
// The newest checkpoint of run_dir that opens intact and was written for `model`'s architecture;
// "" if none. Newer files that are damaged or of another architecture are skipped and reported in
// *warning. When every checkpoint is skipped and one of them is of another architecture, an Error
// says so (the experiment changed under the run directory: starting afresh would hide it).
std::string newest_valid_checkpoint(const std::string& run_dir, const ModelConfig& model,
                                    std::string* warning);
// Loads parameters and moments into the trainer's model and optimizer (names and shapes must
// match the model's: a mismatch names the tensor) and returns the counters to restore.
CheckpointState load_checkpoint(const std::string& path, Trainer& trainer);

}  // namespace attnlab
