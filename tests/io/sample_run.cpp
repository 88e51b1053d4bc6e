// Writes a small run directory the way a training run does (run.h5 with every section, and one
// checkpoint in ckpt/), for the schema test tests/python/test_run_schema.py.
//   attnlab_io_sample_run RUN_DIR
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/io/checkpoint.h"
#include "core/io/checkpoint_dir.h"
#include "core/io/run_log.h"

namespace {

using namespace attnlab;  // NOLINT(google-build-using-namespace): a test program's main file

constexpr int kLayers = 2;
constexpr int kHeads = 4;
constexpr int kSteps = 40;
constexpr int kEvalEvery = 10;

// Attention rows: a softmax over made-up scores, so every row sums to 1 like a model's.
std::vector<float> attention(int64_t rows, int64_t cols, int salt) {
  std::vector<float> weights(static_cast<size_t>(kHeads * rows * cols));
  for (int64_t h = 0; h < kHeads; ++h) {
    for (int64_t r = 0; r < rows; ++r) {
      float* row = weights.data() + (h * rows + r) * cols;
      double total = 0;
      for (int64_t c = 0; c < cols; ++c) {
        row[c] = static_cast<float>(std::exp(std::sin(double(salt + h * 7 + r * 3 + c))));
        total += row[c];
      }
      for (int64_t c = 0; c < cols; ++c) row[c] = static_cast<float>(row[c] / total);
    }
  }
  return weights;
}

void write_run(const std::string& dir) {
  io::RunInfo info;
  info.run_id = "sample-h4-s1";
  info.sweep_id = "sample";
  info.world_size = 2;
  info.threads = 1;
  info.seed = 1;
  info.config_yaml = "name: sample\nseed: 1\nmodel:\n  heads: 4\n  d_model: 16\n";
  info.command_line = "attnlab train -c experiments/tasks/sample.yaml";
  io::ConfigEntries config = {{"name", "sample"},
                              {"seed", "1"},
                              {"model.encoder_layers", "2"},
                              {"model.decoder_layers", "2"},
                              {"model.d_model", "16"},
                              {"model.heads", "4"},
                              {"model.dropout", "0.1"},
                              {"model.norm", "post"},
                              {"train.lr.warmup", "4000"},
                              {"train.optimizer.eps", "1.0e-9"}};
  io::RunLog log = io::RunLog::create(dir + "/run.h5", info, config);
  std::vector<std::string> layers = {"encoder.layers.0", "encoder.layers.1", "decoder.layers.0",
                                     "decoder.layers.1"};
  for (int step = 1; step <= kSteps; ++step) {
    double loss = 8.0 * std::exp(-step / 20.0) + 1.0;
    log.append_train({{"step", step},
                      {"tokens", 512.0 * step},
                      {"loss", loss},
                      {"nll", loss - 0.3},
                      {"lr", 1e-3 * std::min(1.0, step / 10.0)},
                      {"grad_norm", 2.0 / std::sqrt(double(step))},
                      {"tokens_per_sec", 5000.0 + step},
                      {"wall_time", 0.1 * step}});
    if (step % kEvalEvery == 0) {
      double nll = loss - 0.5;
      log.append_eval({{"step", step},
                       {"loss", nll + 0.2},
                       {"nll", nll},
                       {"ppl", std::exp(nll)},
                       {"bleu", 2.0 * step}});
      std::vector<double> norms;
      for (size_t l = 0; l < layers.size(); ++l) norms.push_back(1.0 / (step + double(l)));
      log.append_diagnostic("grad_norm", step, {4}, norms, layers);
      std::vector<double> entropy;
      for (int v = 0; v < 4 * kHeads; ++v) entropy.push_back(std::log(5.0) - v * 0.01);
      log.append_diagnostic("attention_entropy", step, {4, kHeads}, entropy, layers);
    }
  }
  std::vector<std::string> source = {"▁a", "▁b", "▁c", "▁d", "</s>"};
  std::vector<std::string> target = {"<s>", "▁d", "▁c", "▁b"};
  log.set_attention_probe("probe_0", source, target);
  auto S = static_cast<int64_t>(source.size());
  auto T = static_cast<int64_t>(target.size());
  for (int layer = 0; layer < kLayers; ++layer) {
    std::vector<float> encoder = attention(S, S, layer);
    std::vector<float> decoder = attention(T, T, 10 + layer);
    std::vector<float> cross = attention(T, S, 20 + layer);
    log.write_attention("probe_0", AttentionStack::kEncoderSelf, layer,
                        TensorView<const float>(encoder.data(), Shape{kHeads, S, S}));
    log.write_attention("probe_0", AttentionStack::kDecoderSelf, layer,
                        TensorView<const float>(decoder.data(), Shape{kHeads, T, T}));
    log.write_attention("probe_0", AttentionStack::kDecoderCross, layer,
                        TensorView<const float>(cross.data(), Shape{kHeads, T, S}));
  }
  log.set_summary("final_train_loss", 8.0 * std::exp(-kSteps / 20.0) + 1.0);
  log.set_summary("best_dev_bleu", 2.0 * kSteps);
  log.set_summary("params", 12345.0);
  log.set_summary("train_seconds", 4.0);
  log.set_summary("best_checkpoint", std::string("ckpt/step_40.h5"));
  log.set_status(io::RunStatus::completed);
}

void write_checkpoint(const std::string& dir) {
  io::CheckpointDir checkpoints(dir + "/ckpt");
  checkpoints.create();
  std::vector<float> embed(10 * 16, 0.5f), bias(16, -0.25f);
  io::ConstTensors params = {
      {"encoder.embed_tokens.weight", TensorView<const float>(embed.data(), Shape{10, 16})},
      {"encoder.layers.0.fc1.bias", TensorView<const float>(bias.data(), Shape{16})}};
  io::CheckpointState state;
  state.step = kSteps;
  state.architecture = "encoder_layers: 2\ndecoder_layers: 2\nd_model: 16\nheads: 4\n";
  state.config_yaml = "name: sample\n";
  state.scalars = {{"lr", 1e-3}};
  state.data_position = {{"epoch", 0}, {"batch", kSteps}};
  io::save_checkpoint(
      checkpoints.path_for(kSteps), state,
      {{io::kParamsGroup, params}, {io::kAdamMGroup, params}, {io::kAdamVGroup, params}});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR\n", argv[0]);
    return 2;
  }
  try {
    write_run(argv[1]);
    write_checkpoint(argv[1]);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "sample_run: %s\n", error.what());
    return 1;
  }
  return 0;
}
