// Checkpoints: one HDF5 file per saved step (ckpt/step_<n>.h5), schema "attnlab-checkpoint"
// version 2, holding what a run needs to continue exactly (docs/hdf5-schema.md):
//
//   /                  attrs: schema, schema_version, step, architecture, config_yaml,
//                      attnlab_version, git_commit, metadata_sha256 (over all of these but the
//                      schema, and /scalars and /data_position)
//   /scalars           attrs: float64 values by name (LR schedule state, loss scale, ...)
//   /data_position     attrs: int64 values by name (data iterator: epoch, batch index, ...)
//   /params/<name>     float32 tensors by parameter name ("decoder.layers.3.fc1.weight"; the
//   /adam_m/<name>     dots are part of the dataset name, not nested groups), each with a
//   /adam_v/<name>     Fletcher-32 checksum
//
// A checkpoint is written to <path>.tmp, synced and renamed over <path>: a crash or an error
// while writing leaves any earlier file at <path> as it was.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/io/h5.h"
#include "core/tensor/tensor.h"

namespace attnlab::io {

inline constexpr const char* kCheckpointSchema = "attnlab-checkpoint";
// Version 2 adds metadata_sha256; version 1 files (without it) still load.
inline constexpr int64_t kCheckpointSchemaVersion = 2;

// The tensor groups the trainer writes.
inline constexpr const char* kParamsGroup = "params";
inline constexpr const char* kAdamMGroup = "adam_m";
inline constexpr const char* kAdamVGroup = "adam_v";

// Named views in table order, e.g. a ParamTable's entries over a flat buffer.
using ConstTensors = std::vector<std::pair<std::string, TensorView<const float>>>;
using Tensors = std::vector<std::pair<std::string, TensorView<float>>>;

// Everything in a checkpoint but its tensors.
struct CheckpointState {
  int64_t step = 0;
  // Text that identifies the model's shape (e.g. the model section of the resolved config); a
  // checkpoint loads only into a model of the same architecture text.
  std::string architecture;
  std::string config_yaml;
  std::vector<std::pair<std::string, double>> scalars;
  std::vector<std::pair<std::string, int64_t>> data_position;
};

// Writes a checkpoint of `state` and the tensor groups (group name, tensors) atomically to `path`.
// Names must be non-empty, without '/', and distinct within their group.
void save_checkpoint(const std::string& path, const CheckpointState& state,
                     const std::vector<std::pair<std::string, ConstTensors>>& groups);

// A checkpoint file opened for reading.
class Checkpoint {
 public:
  // Opens `path` and reads its state. Errors name the file: missing, not HDF5, truncated, not an
  // attnlab checkpoint, newer schema.
  static Checkpoint open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const CheckpointState& state() const { return state_; }
  // Tensor groups in the file, alphabetical ("adam_m", "adam_v", "params").
  std::vector<std::string> groups() const;
  // Tensor names of one group, alphabetical.
  std::vector<std::string> tensor_names(const std::string& group) const;

  // Throws unless the checkpoint was written for `architecture`, quoting the first line where
  // the two differ.
  void check_architecture(const std::string& architecture) const;
  // Reads group `group` into `tensors`: the group must hold exactly these names, each with the
  // view's shape. One Error lists every missing, extra or wrongly shaped tensor:
  //   "checkpoint ckpt/step_9.h5: tensor 'encoder.layers.0.fc1.weight' has shape (64,32), the
  //    model expects (128,32)".
  void load(const std::string& group, const Tensors& tensors) const;
  // Reads every tensor (checking its checksum) and throws on the first damaged one.
  void verify() const;

 private:
  Checkpoint(h5::File file, CheckpointState state)
      : file_(std::move(file)), state_(std::move(state)) {}
  h5::File file_;
  CheckpointState state_;
};

}  // namespace attnlab::io
