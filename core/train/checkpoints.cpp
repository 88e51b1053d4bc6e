// Trainer checkpoints through core/io's Checkpoint files: parameters and Adam moments by name,
// the step, target tokens seen and the data position, checked against the model's architecture.
#include "core/train/checkpoints.h"

#include <optional>

#include "core/config/config.h"
#include "core/io/checkpoint.h"
#include "core/io/checkpoint_dir.h"

namespace attnlab {
namespace {

io::CheckpointDir checkpoint_dir(const std::string& run_dir) {
  return io::CheckpointDir(run_dir + "/ckpt");
}

void write_checkpoint(const std::string& path, Trainer& trainer) {
  io::CheckpointState state;
  state.step = trainer.step();
  state.architecture = config::architecture_text(trainer.model().config());
  state.config_yaml = config::dump_yaml(trainer.config(), false);
  const StopState& stopping = trainer.stopping().state();
  state.scalars = {{"tokens", static_cast<double>(trainer.tokens_seen())},
                   {"stop.best_loss", stopping.best_loss},
                   {"stop.best_step", static_cast<double>(stopping.best_step)},
                   {"stop.mark_loss", stopping.mark_loss},
                   {"stop.evals_since_gain", static_cast<double>(stopping.evals_since_gain)},
                   {"stop.lr_factor", stopping.lr_factor},
                   {"train_seconds", trainer.train_seconds()}};
  const DataPosition position = trainer.data().position();
  state.data_position = {{"epoch", position.epoch}, {"offset", position.offset}};
  const ParamTable& table = trainer.model().table();
  const Transformer<float>& model = trainer.model();
  const Adam& adam = trainer.optimizer();
  io::save_checkpoint(path, state,
                      {{io::kParamsGroup, table.named_views(model.params().data())},
                       {io::kAdamMGroup, table.named_views(adam.m().data())},
                       {io::kAdamVGroup, table.named_views(adam.v().data())}});
}

}  // namespace

std::string save_checkpoint(const std::string& run_dir, Trainer& trainer, int64_t keep) {
  const io::CheckpointDir dir = checkpoint_dir(run_dir);
  dir.create();
  std::string path = dir.path_for(trainer.step());
  write_checkpoint(path, trainer);
  dir.prune(std::max<int64_t>(keep, 1));
  return path;
}

std::string best_checkpoint_path(const std::string& run_dir) {
  return checkpoint_dir(run_dir).dir() + "/best.h5";
}

void save_best_checkpoint(const std::string& run_dir, Trainer& trainer) {
  checkpoint_dir(run_dir).create();
  write_checkpoint(best_checkpoint_path(run_dir), trainer);
}

std::string newest_valid_checkpoint(const std::string& run_dir, const ModelConfig& model,
                                    std::string* warning) {
  ModelConfig resolved = model;
  resolved.resolve_defaults();
  const io::CheckpointDir::Newest newest =
      checkpoint_dir(run_dir).newest_valid(config::architecture_text(resolved));
  if (!newest.found && !newest.other_architecture.empty()) throw Error(newest.other_architecture);
  if (warning != nullptr) {
    for (const std::string& line : newest.warnings) {
      *warning += (warning->empty() ? "" : "\n") + line;
    }
  }
  return newest.found ? newest.path : "";
}

CheckpointState load_checkpoint(const std::string& path, Trainer& trainer) {
  const io::Checkpoint checkpoint = io::Checkpoint::open(path);
  checkpoint.check_architecture(config::architecture_text(trainer.model().config()));
  const ParamTable& table = trainer.model().table();
  checkpoint.load(io::kParamsGroup, table.named_views(trainer.model().params().data()));
  checkpoint.load(io::kAdamMGroup, table.named_views(trainer.optimizer().m().data()));
  checkpoint.load(io::kAdamVGroup, table.named_views(trainer.optimizer().v().data()));
  CheckpointState state;
  state.step = checkpoint.state().step;
  // Scalars absent from older checkpoints (the stop state, training time) take `fallback`.
  auto scalar = [&](const std::string& name, std::optional<double> fallback) -> double {
    for (const auto& [key, value] : checkpoint.state().scalars) {
      if (key == name) return value;
    }
    CHECK(fallback.has_value()) << "checkpoint " << path << " has no scalar '" << name << "'";
    return *fallback;
  };
  auto position = [&](const std::string& name) -> int64_t {
    for (const auto& [key, value] : checkpoint.state().data_position) {
      if (key == name) return value;
    }
    CHECK(false) << "checkpoint " << path << " has no data position '" << name << "'";
    return 0;
  };
  state.tokens = static_cast<int64_t>(scalar("tokens", std::nullopt));
  state.position = {position("epoch"), position("offset")};
  state.stopping.best_loss = scalar("stop.best_loss", state.stopping.best_loss);
  state.stopping.best_step = static_cast<int64_t>(scalar("stop.best_step", 0.0));
  // Checkpoints written before the mark existed counted from the best loss, with min_delta.
  state.stopping.mark_loss = scalar("stop.mark_loss", state.stopping.best_loss);
  state.stopping.evals_since_gain =
      static_cast<int64_t>(scalar("stop.evals_since_gain", scalar("stop.evals_since_best", 0.0)));
  state.stopping.lr_factor = scalar("stop.lr_factor", 1.0);
  state.train_seconds = scalar("train_seconds", 0.0);
  return state;
}

}  // namespace attnlab
