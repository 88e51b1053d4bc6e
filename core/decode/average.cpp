// Checkpoint averaging over the trainer's checkpoint files (/params/<name> float32 tensors), read
// through io::Checkpoint.
#include "core/decode/average.h"

#include <algorithm>

#include "core/io/checkpoint.h"
#include "core/io/checkpoint_dir.h"
#include "core/util/check.h"

namespace attnlab {

std::vector<std::string> last_checkpoints(const std::string& run_dir, int64_t count) {
  CHECK(count >= 1) << "cannot average the last " << count << " checkpoints (need >= 1)";
  const io::CheckpointDir dir(run_dir + "/ckpt");
  const std::vector<int64_t> steps = dir.steps();
  CHECK(static_cast<int64_t>(steps.size()) >= count)
      << "averaging the last " << count << " checkpoints needs " << count << " files in "
      << dir.dir() << ", found " << steps.size()
      << " (train.keep_checkpoints must be >= eval.average_last)";
  std::vector<std::string> paths;
  for (size_t i = steps.size() - static_cast<size_t>(count); i < steps.size(); ++i) {
    paths.push_back(dir.path_for(steps[i]));
  }
  return paths;
}

// Through io::Checkpoint: its schema and metadata checksum are checked on open, the group must
// hold exactly the table's tensors with the table's shapes, and every tensor's checksum is
// checked as it is read.
void read_checkpoint_params(const std::string& path, const ParamTable& table, float* out) {
  io::Checkpoint::open(path).load(io::kParamsGroup, table.named_views(out));
}

void average_checkpoints(const std::vector<std::string>& paths, const ParamTable& table,
                         float* out) {
  CHECK(!paths.empty()) << "no checkpoints to average";
  const size_t size = static_cast<size_t>(table.size());
  std::vector<double> sum(size, 0.0);
  std::vector<float> one(size);
  std::string architecture;
  for (const std::string& path : paths) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(path);
    // Averaging parameters of different models is meaningless even where the shapes agree.
    if (architecture.empty()) {
      architecture = checkpoint.state().architecture;
    } else {
      checkpoint.check_architecture(architecture);
    }
    checkpoint.load(io::kParamsGroup, table.named_views(one.data()));
    for (size_t i = 0; i < size; ++i) sum[i] += static_cast<double>(one[i]);
  }
  const double scale = 1.0 / static_cast<double>(paths.size());
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<float>(sum[i] * scale);
}

int64_t checkpoint_step(const std::string& path) { return io::Checkpoint::open(path).state().step; }

}  // namespace attnlab
