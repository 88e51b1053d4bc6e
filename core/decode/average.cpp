// Checkpoint averaging over the trainer's checkpoint files (/params/<name> float32 tensors).
#include "core/decode/average.h"

#include <algorithm>

#include "core/io/checkpoint_dir.h"
#include "core/io/h5.h"
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

void read_checkpoint_params(const std::string& path, const ParamTable& table, float* out) {
  const h5::File file = h5::File::open(path, h5::Access::read);
  CHECK(file.root().has_group("params")) << "checkpoint " << path << " has no /params group";
  const h5::Group params = file.root().group("params");
  for (const ParamEntry& e : table.entries()) {
    CHECK(params.has_dataset(e.name))
        << "checkpoint " << path << ": tensor '" << e.name << "' is missing from /params";
    const h5::Dataset dataset = params.dataset(e.name);
    CHECK(dataset.dims() == e.shape.dims())
        << "checkpoint " << path << ": tensor '" << e.name << "' has shape "
        << Shape(dataset.dims()).str() << ", the model expects " << e.shape.str();
    dataset.read_into(out + e.offset, e.shape.numel());
  }
}

void average_checkpoints(const std::vector<std::string>& paths, const ParamTable& table,
                         float* out) {
  CHECK(!paths.empty()) << "no checkpoints to average";
  const size_t size = static_cast<size_t>(table.size());
  std::vector<double> sum(size, 0.0);
  std::vector<float> one(size);
  for (const std::string& path : paths) {
    read_checkpoint_params(path, table, one.data());
    for (size_t i = 0; i < size; ++i) sum[i] += static_cast<double>(one[i]);
  }
  const double scale = 1.0 / static_cast<double>(paths.size());
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<float>(sum[i] * scale);
}

int64_t checkpoint_step(const std::string& path) {
  const h5::File file = h5::File::open(path, h5::Access::read);
  CHECK(file.root().has_attribute("step")) << "checkpoint " << path << " has no step attribute";
  return file.root().get_int("step");
}

}  // namespace attnlab
