// `attnlab dump-step`: one training step's numbers, in float64 (or float32), written to HDF5 so
// that an independent implementation can recompute them (tests/python/test_torch_parity.py does, in
// float64 PyTorch): the first training batch (token ids and the attention key-padding masks),
// every parameter by name, the log-probabilities, the label-smoothed loss and the NLL, and every
// gradient by name. The layout is in docs/hdf5-schema.md ("Step dump").
//
// The step is the trainer's first one without dropout: the batch DataSource::next_batch() gives
// first (the data position of a fresh run), forward with train.label_smoothing, and backward of
// the mean loss per target token (the trainer's gradient before clipping). The model is a
// Transformer<double> holding the float32 parameters training uses (the seeded initialisation,
// or a run's newest checkpoint), so the arithmetic adds only double round-off to them;
// --precision float32 runs the training model itself (Transformer<float>) instead.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/app/cli.h"
#include "core/config/config.h"
#include "core/decode/average.h"
#include "core/io/checkpoint_dir.h"
#include "core/io/h5.h"
#include "core/model/transformer.h"
#include "core/train/corpus_source.h"
#include "core/train/data_source.h"
#include "core/util/build_info.h"
#include "core/util/check.h"
#include "core/util/files.h"

namespace attnlab::cli {
namespace {

namespace fs = std::filesystem;

inline constexpr const char* kStepDumpSchema = "attnlab-step-dump";
inline constexpr int64_t kStepDumpSchemaVersion = 1;

// The experiment, and the float32 parameters of the step with where they came from.
struct StepSource {
  ExperimentConfig config;
  std::vector<float> params;
  std::string params_from;  // "initialisation (seed N)" or a checkpoint's path
};

StepSource from_experiment(const std::vector<std::string>& files,
                           const std::vector<std::string>& sets) {
  StepSource source;
  source.config = config::load(files, sets);
  config::make_paths_absolute(source.config, fs::current_path().string());
  config::check_data_files_exist(source.config);
  // The parameters a fresh run starts from (Trainer seeds its model with config.seed).
  const Transformer<float> initial(source.config.model, source.config.seed);
  source.params = initial.params();
  source.params_from = "initialisation (seed " + std::to_string(source.config.seed) + ")";
  return source;
}

StepSource from_run(const std::string& run_dir) {
  StepSource source;
  source.config = load_run_config(run_dir);
  config::check_data_files_exist(source.config);
  const io::CheckpointDir::Newest newest = io::CheckpointDir(run_dir + "/ckpt").newest_valid();
  // A damaged newer checkpoint is passed over, never in silence.
  for (const std::string& warning : newest.warnings) {
    std::cerr << "attnlab dump-step: skipped " << warning << "\n";
  }
  CHECK(newest.found) << run_dir << " has no intact checkpoint in " << run_dir << "/ckpt";
  const ParamTable table(source.config.model);
  source.params.resize(static_cast<size_t>(table.size()));
  read_checkpoint_params(newest.path, table, source.params.data());
  source.params_from = newest.path;
  return source;
}

// The training data a run of `config` reads (as run_training chooses it).
std::unique_ptr<DataSource> training_data(const ExperimentConfig& config) {
  if (config.data.task == DataTask::kCorpus) return make_corpus_source(config);
  return make_synthetic_source(config);
}

// Every tensor of a buffer laid out by `table`, by name, as datasets of its shape.
template <typename T>
void write_named(h5::Group group, const ParamTable& table, const std::vector<T>& buffer) {
  for (const ParamEntry& entry : table.entries()) {
    group.write<T>(entry.name, entry.shape.dims(), buffer.data() + entry.offset);
  }
}

template <typename T>
void dump_step(const StepSource& source, const std::string& out) {
  const ExperimentConfig& config = source.config;
  // Evaluation arithmetic: no dropout, in the loss pass and in the gradient's training pass.
  ModelConfig without_dropout = config.model;
  without_dropout.dropout = without_dropout.attention_dropout = 0.0;
  Transformer<T> model(without_dropout, config.seed);
  CHECK(static_cast<int64_t>(source.params.size()) == model.table().size())
      << "parameter count " << source.params.size() << " differs from the model's "
      << model.table().size();
  std::copy(source.params.begin(), source.params.end(), model.params().begin());

  const Batch batch = training_data(config)->next_batch();
  const auto label_smoothing = static_cast<float>(config.train.label_smoothing);
  model.keep_log_probs(true);
  const ops::LossSums sums = model.forward(batch, label_smoothing, /*training=*/false, 0);
  CHECK(sums.tokens > 0) << "the first training batch has no target tokens";
  const auto tokens = static_cast<double>(sums.tokens);
  const TensorView<const T> log_probs = model.log_probs();
  const std::vector<T> kept_log_probs(log_probs.data(), log_probs.data() + log_probs.numel());
  // The key padding of the encoder's and the cross-attention's keys, and of the decoder's
  // self-attention keys (which is causal besides).
  const uint8_t* source_padding = model.attention_mask(AttentionStack::kEncoderSelf).key_padding;
  const uint8_t* target_padding = model.attention_mask(AttentionStack::kDecoderSelf).key_padding;
  const std::vector<int32_t> source_mask(source_padding,
                                         source_padding + batch.size * batch.src_length);
  const std::vector<int32_t> target_mask(target_padding,
                                         target_padding + batch.size * batch.tgt_length);
  // The mean loss's gradient: a training forward (with the dropout off, the same arithmetic)
  // begins it, backward completes it.
  model.keep_log_probs(false);
  model.zero_grads();
  model.forward(batch, label_smoothing, /*training=*/true, 0);
  model.backward();
  model.scale_grads(static_cast<T>(1.0 / tokens));

  const std::string temporary = out + ".tmp";
  {
    h5::File file = h5::File::create(temporary, /*overwrite=*/true);
    h5::Group& root = file.root();
    root.set_string("schema", kStepDumpSchema);
    root.set_int("schema_version", kStepDumpSchemaVersion);
    root.set_string("attnlab_version", attnlab_version());
    root.set_string("git_commit", git_commit());
    root.set_string("config_yaml", config::dump_yaml(config, false));
    root.set_string("params_from", source.params_from);
    root.set_string("precision", sizeof(T) == sizeof(double) ? "float64" : "float32");
    root.set_double("label_smoothing", config.train.label_smoothing);
    root.set_double("loss_sum", sums.loss);
    root.set_double("nll_sum", sums.nll);
    root.set_int("target_tokens", sums.tokens);
    root.set_double("loss", sums.loss / tokens);
    root.set_double("nll", sums.nll / tokens);
    h5::Group flat = root.create_group("config");
    for (const auto& [key, value] : config::flatten(config)) flat.set_string(key, value);

    h5::Group batch_group = root.create_group("batch");
    const std::vector<int64_t> source_dims = {batch.size, batch.src_length};
    const std::vector<int64_t> target_dims = {batch.size, batch.tgt_length};
    batch_group.write<int32_t>("src", source_dims, batch.src.data());
    batch_group.write<int32_t>("tgt_in", target_dims, batch.tgt_in.data());
    batch_group.write<int32_t>("tgt_out", target_dims, batch.tgt_out.data());
    batch_group.write<int32_t>("src_key_padding", source_dims, source_mask.data());
    batch_group.write<int32_t>("tgt_key_padding", target_dims, target_mask.data());

    root.write<T>("log_probs", {batch.size, batch.tgt_length, config.model.vocab_size},
                  kept_log_probs.data());
    write_named<T>(root.create_group("params"), model.table(), model.params());
    write_named<T>(root.create_group("grads"), model.table(), model.grads());
    file.flush();
  }
  replace_file(temporary, out);
  std::cout << "attnlab dump-step: " << out << ": " << batch.size << " sentences, " << sums.tokens
            << " target tokens, loss " << sums.loss / tokens << ", nll " << sums.nll / tokens
            << " per token, " << model.table().entries().size()
            << " gradients (parameters: " << source.params_from << ")\n";
}

int run_dump_step(const std::vector<std::string>& args) {
  po::options_description options("dump-step options");
  add_config_options(options);
  options.add_options()("run", po::value<std::string>(),
                        "a run directory: its config and the parameters of its newest intact "
                        "checkpoint (instead of -c, which takes the initial parameters)")(
      "out", po::value<std::string>(), "the HDF5 file to write")(
      "precision", po::value<std::string>()->default_value("float64"),
      "float64 (Transformer<double>) or float32 (the training model's arithmetic)")(
      "force", "replace an existing --out file");
  po::positional_options_description positional;
  positional.add("config", -1);
  po::variables_map values;
  if (!parse("dump-step",
             "(-c FILE [-c FILE ...] [--set KEY=VALUE ...] | --run DIR) --out FILE.h5 "
             "[--precision float64|float32]",
             args, options, positional, values)) {
    return kExitOk;
  }
  if (!values.count("out")) throw UsageError("dump-step needs --out FILE.h5");
  const std::string out = values["out"].as<std::string>();
  // Before any work: an existing file is replaced only when asked.
  if (fs::exists(out) && values.count("force") == 0) {
    throw UsageError(out + " exists; give --force to replace it");
  }
  const std::string precision = values["precision"].as<std::string>();
  if (precision != "float64" && precision != "float32") {
    throw UsageError("--precision must be float64 or float32, got '" + precision + "'");
  }
  const std::vector<std::string> files = strings(values, "config");
  const std::vector<std::string> sets = strings(values, "set");
  StepSource source;
  if (values.count("run")) {
    if (!files.empty() || !sets.empty()) {
      throw UsageError("--run takes the run's own config: give either --run DIR or -c/--set");
    }
    source = from_run(values["run"].as<std::string>());
  } else {
    if (files.empty()) {
      throw UsageError("dump-step needs an experiment file or a run: -c FILE or --run DIR");
    }
    source = from_experiment(files, sets);
  }
  if (precision == "float64") {
    dump_step<double>(source, out);
  } else {
    dump_step<float>(source, out);
  }
  return kExitOk;
}

const CommandRegistration kRegister{
    "dump-step",
    "debug: one training step in float64 (batch, log-probabilities, loss, every gradient) to HDF5",
    &run_dump_step};

}  // namespace
}  // namespace attnlab::cli
