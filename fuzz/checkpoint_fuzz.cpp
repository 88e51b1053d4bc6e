// Checkpoints (ckpt/step_<n>.h5): the input is written as a run's only checkpoint and read as
// `attnlab train` reads it when it resumes: io::CheckpointDir::newest_valid (opens it, checks its
// step against its name, verifies every tensor's checksum), then, when it is found intact,
// io::Checkpoint::open, check_architecture and load of the three tensor groups into a model's
// parameter table, as core/train/checkpoints.cpp does. The model is the one of the seed checkpoints
// (fuzz/corpus/ checkpoint, made by a 4-step training of experiments/tasks/reverse.yaml at the size
// below), so the seeds load whole and mutations of them fail one check or another.
//
// Only attnlab's own code is instrumented, not the HDF5 library (Debian's), so coverage guides the
// mutations through what attnlab does with what HDF5 returns.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/io/checkpoint.h"
#include "core/io/checkpoint_dir.h"
#include "core/model/model_config.h"
#include "core/model/param_table.h"
#include "core/util/check.h"
#include "fuzz/fuzz_common.h"

namespace {

using attnlab::Error;
namespace fuzz = attnlab::fuzz;
namespace io = attnlab::io;

// The seeds' model and its architecture text (as config::architecture_text writes it).
attnlab::ModelConfig seed_model() {
  attnlab::ModelConfig model;
  model.encoder_layers = 1;
  model.decoder_layers = 1;
  model.d_model = 8;
  model.d_ff = 16;
  model.heads = 2;
  model.d_k = 4;
  model.d_v = 4;
  model.max_positions = 16;
  model.vocab_size = 13;
  return model;
}

constexpr const char* kSeedArchitecture =
    "layers: 1+1\nd_model: 8\nd_ff: 16\nheads: 2\nd_k: 4\nd_v: 4\nnorm: post\n"
    "positions: sinusoidal\nmax_positions: 16\nattention_scale: rsqrt_dk\ntie_embeddings: true\n"
    "output_bias: false\nvocab_size: 13";

constexpr int64_t kSeedStep = 4;

io::Tensors views(const attnlab::ParamTable& table, std::vector<float>& buffer) {
  io::Tensors tensors;
  for (const attnlab::ParamEntry& entry : table.entries()) {
    tensors.emplace_back(entry.name,
                         attnlab::TensorView<float>(buffer.data() + entry.offset, entry.shape));
  }
  return tensors;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const attnlab::ParamTable table(seed_model());
  const std::filesystem::path dir = fuzz::fresh_path("ckpt", "");
  std::filesystem::create_directory(dir);
  const io::CheckpointDir checkpoints(dir.string());
  fuzz::write_file(checkpoints.path_for(kSeedStep), fuzz::as_text(data, size));

  // What `attnlab train` does on resume: the newest intact checkpoint, then load_checkpoint
  // (core/train/checkpoints.cpp) on it.
  const io::CheckpointDir::Newest newest = checkpoints.newest_valid();
  if (newest.found) {
    try {
      const io::Checkpoint checkpoint = io::Checkpoint::open(newest.path);
      checkpoint.check_architecture(kSeedArchitecture);
      std::vector<float> buffer(static_cast<size_t>(table.size()));
      for (const char* group : {io::kParamsGroup, io::kAdamMGroup, io::kAdamVGroup}) {
        checkpoint.load(group, views(table, buffer));
      }
    } catch (const Error&) {
    }
  }
  std::filesystem::remove_all(dir);
  return 0;
}
