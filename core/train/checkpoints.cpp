// Trainer checkpoints as HDF5 files: /params/<name>, /adam_m/<name>, /adam_v/<name> (checksummed),
// root attributes step, tokens, data_epoch, data_offset, architecture, config_yaml. Written to a
// temporary name and renamed, so a checkpoint is either complete or absent.
#include "core/train/checkpoints.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "core/config/config.h"
#include "core/io/h5.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCheckpointSchema = "attnlab-checkpoint";

// The architecture-defining part of the config: a checkpoint loads only into the same one.
std::string architecture(const ModelConfig& m) {
  return "layers=" + std::to_string(m.encoder_layers) + "+" + std::to_string(m.decoder_layers) +
         " d_model=" + std::to_string(m.d_model) + " d_ff=" + std::to_string(m.d_ff) +
         " heads=" + std::to_string(m.heads) + " d_k=" + std::to_string(m.d_k) +
         " d_v=" + std::to_string(m.d_v) + " norm=" + to_string(m.norm) +
         " positions=" + to_string(m.positions) + " max_positions=" +
         std::to_string(m.max_positions) + " scale=" + m.attention_scale.str() +
         " tied=" + (m.tie_embeddings ? "yes" : "no") + " output_bias=" +
         (m.output_bias ? "yes" : "no") + " vocab=" + std::to_string(m.vocab_size);
}

// Checkpoints of a run directory, oldest first: (step, path).
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& run_dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  const fs::path dir = fs::path(run_dir) / "ckpt";
  if (!fs::is_directory(dir)) return found;
  static const std::regex pattern(R"(step_(\d+)\.h5)");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, match, pattern)) {
      found.emplace_back(std::stoll(match[1].str()), entry.path().string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

void write_tensors(h5::Group group, const ParamTable& table, const float* buffer) {
  for (const ParamEntry& e : table.entries()) {
    group.write<float>(e.name, e.shape.dims(), buffer + e.offset, {true});
  }
}

void read_tensors(const h5::Group& group, const ParamTable& table, float* buffer,
                  const std::string& path) {
  for (const ParamEntry& e : table.entries()) {
    CHECK(group.has_dataset(e.name)) << "checkpoint " << path << ": tensor '" << e.name
                                     << "' is missing (" << group.path() << ")";
    const h5::Array<float> array = group.read<float>(e.name);
    CHECK(array.dims == e.shape.dims())
        << "checkpoint " << path << ": tensor '" << e.name << "' has shape "
        << Shape(array.dims).str() << ", the model expects " << e.shape.str();
    std::copy(array.values.begin(), array.values.end(), buffer + e.offset);
  }
}

}  // namespace

std::string save_checkpoint(const std::string& run_dir, Trainer& trainer, int64_t keep) {
  const fs::path dir = fs::path(run_dir) / "ckpt";
  fs::create_directories(dir);
  const std::string path = (dir / ("step_" + std::to_string(trainer.step()) + ".h5")).string();
  const std::string temporary = path + ".tmp";
  {
    h5::File file = h5::File::create(temporary, true);
    h5::Group& root = file.root();
    const ModelConfig& model = trainer.model().config();
    root.set_string("schema", kCheckpointSchema);
    root.set_int("schema_version", 1);
    root.set_int("step", trainer.step());
    root.set_int("tokens", trainer.tokens_seen());
    const DataPosition position = trainer.data().position();
    root.set_int("data_epoch", position.epoch);
    root.set_int("data_offset", position.offset);
    root.set_string("architecture", architecture(model));
    const ParamTable& table = trainer.model().table();
    write_tensors(root.create_group("params"), table, trainer.model().params().data());
    write_tensors(root.create_group("adam_m"), table, trainer.optimizer().m().data());
    write_tensors(root.create_group("adam_v"), table, trainer.optimizer().v().data());
    file.flush();
  }
  fs::rename(temporary, path);
  // Keep the newest `keep` (a file named step_<n>.keep beside one keeps it forever).
  auto all = list_checkpoints(run_dir);
  const int64_t excess = static_cast<int64_t>(all.size()) - std::max<int64_t>(keep, 1);
  for (int64_t i = 0; i < excess; ++i) {
    const fs::path old(all[static_cast<size_t>(i)].second);
    if (fs::exists(fs::path(old).replace_extension(".keep"))) continue;
    fs::remove(old);
  }
  return path;
}

std::string newest_valid_checkpoint(const std::string& run_dir, std::string* warning) {
  auto all = list_checkpoints(run_dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      h5::File file = h5::File::open(it->second, h5::Access::read);
      CHECK(file.root().has_attribute("schema") &&
            file.root().get_string("schema") == kCheckpointSchema)
          << it->second << " is not an attnlab checkpoint";
      for (const char* group : {"params", "adam_m", "adam_v"}) {
        CHECK(file.root().has_group(group)) << it->second << " has no /" << group;
      }
      return it->second;
    } catch (const Error& error) {
      if (warning != nullptr) {
        *warning += std::string(warning->empty() ? "" : "; ") + "skipping unreadable checkpoint " +
                    it->second + " (" + error.what() + ")";
      }
    }
  }
  return "";
}

CheckpointState load_checkpoint(const std::string& path, Trainer& trainer) {
  h5::File file = h5::File::open(path, h5::Access::read);
  const h5::Group& root = file.root();
  CHECK(root.has_attribute("schema") && root.get_string("schema") == kCheckpointSchema)
      << path << " is not an attnlab checkpoint";
  const std::string expected = architecture(trainer.model().config());
  const std::string stored = root.get_string("architecture");
  CHECK(stored == expected) << "checkpoint " << path << " holds a different architecture: '"
                            << stored << "', the config asks for '" << expected << "'";
  const ParamTable& table = trainer.model().table();
  read_tensors(root.group("params"), table, trainer.model().params().data(), path);
  read_tensors(root.group("adam_m"), table, trainer.optimizer().m().data(), path);
  read_tensors(root.group("adam_v"), table, trainer.optimizer().v().data(), path);
  CheckpointState state;
  state.step = root.get_int("step");
  state.tokens = root.get_int("tokens");
  state.position = {root.get_int("data_epoch"), root.get_int("data_offset")};
  return state;
}

}  // namespace attnlab
