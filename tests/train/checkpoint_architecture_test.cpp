// The architecture text of checkpoints, derived from the option table's tags
// (config::architecture_text): every model variant keeps the text that checkpoints were written
// with before the table decided it, a new key appears only when not at its default, and a
// checkpoint an older build wrote (tests/fixtures/checkpoints) still resumes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/config/options.h"
#include "core/dist/comm.h"
#include "core/io/checkpoint.h"
#include "core/train/checkpoints.h"
#include "core/train/data_source.h"
#include "tests/common/model_variants.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

// The text as checkpoints were written before the option table decided it (the hand-written list
// of core/train/checkpoints.cpp up to then): the reference that older checkpoints hold.
std::string text_before_the_table(const ModelConfig& m) {
  const std::string norm_type =
      m.norm_type == NormType::kLayerNorm ? "" : "\nnorm_type: " + to_string(m.norm_type);
  return "layers: " + std::to_string(m.encoder_layers) + "+" + std::to_string(m.decoder_layers) +
         "\nd_model: " + std::to_string(m.d_model) + "\nd_ff: " + std::to_string(m.d_ff) +
         "\nheads: " + std::to_string(m.heads) + "\nd_k: " + std::to_string(m.d_k) +
         "\nd_v: " + std::to_string(m.d_v) + "\nnorm: " + to_string(m.norm) +
         "\npositions: " + to_string(m.positions) +
         "\nmax_positions: " + std::to_string(m.max_positions) +
         "\nattention_scale: " + m.attention_scale.str() +
         "\ntie_embeddings: " + (m.tie_embeddings ? "true" : "false") +
         "\noutput_bias: " + (m.output_bias ? "true" : "false") +
         "\nvocab_size: " + std::to_string(m.vocab_size) + norm_type;
}

// The tiny model with depths that differ, so that the "layers: E+D" line shows their order.
ModelConfig odd_sizes() {
  ModelConfig m = test::tiny_model_config();
  m.decoder_layers = 3;
  return m;
}

// The keys tagged kUnlessDefault that the text before the table did not know (all but norm_type).
std::vector<const config::Option*> keys_added_later() {
  std::vector<const config::Option*> added;
  for (const config::Option& option : config::options()) {
    if (option.architecture == config::InArchitecture::kUnlessDefault &&
        option.key != "model.norm_type") {
      added.push_back(&option);
    }
  }
  return added;
}

TEST(ArchitectureText, EveryVariantKeepsTheTextOfOlderCheckpoints) {
  const ExperimentConfig defaults;
  for (const test::ModelVariant& variant : test::model_variants()) {
    SCOPED_TRACE(variant.name());
    ExperimentConfig config;
    config.model = variant.applied_to(odd_sizes());
    // With every later key at its default, the text is the one older checkpoints hold.
    ExperimentConfig older = config;
    for (const config::Option* option : keys_added_later()) {
      config::RawValue value;
      value.kind = config::RawValue::Kind::kScalar;
      value.text = option->show(defaults);
      ASSERT_EQ(option->assign(older, value), "");
    }
    EXPECT_EQ(config::architecture_text(older.model), text_before_the_table(older.model));
    // A later key appears, and only then, when it is not at its default.
    const std::string text = config::architecture_text(config.model);
    for (const config::Option* option : keys_added_later()) {
      const std::string line = "\n" + option->key.substr(6) + ": " + option->show(config);
      const bool set = option->show(config) != option->show(defaults);
      EXPECT_EQ(text.find(line) != std::string::npos, set) << option->key << " in\n" << text;
    }
  }
  ModelConfig numeric_scale = odd_sizes();
  numeric_scale.attention_scale = AttentionScale::parse("0.125");
  EXPECT_EQ(config::architecture_text(numeric_scale), text_before_the_table(numeric_scale));
}

TEST(ArchitectureText, KeysThatLeaveTheParametersAloneAreNotInIt) {
  const ModelConfig m = odd_sizes();
  ModelConfig other = m;
  other.dropout = 0.3;
  other.attention_dropout = 0.2;
  other.attention = AttentionKernel::kTiled;
  other.layer_norm_eps = 1e-6;
  EXPECT_EQ(config::architecture_text(other), config::architecture_text(m));
}

// A temporary run directory holding the fixture as its one checkpoint.
class OlderCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = fs::temp_directory_path() /
               ("attnlab_older_checkpoint_" + std::to_string(getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(run_dir_);
    fs::create_directories(run_dir_ / "ckpt");
    checkpoint_ = (run_dir_ / "ckpt" / "step_2.h5").string();
    fs::copy_file(fixture(), checkpoint_);
    // The config the checkpoint was written with, as it stored it.
    const std::string yaml = io::Checkpoint::open(checkpoint_).state().config_yaml;
    const fs::path config_file = run_dir_ / "config.yaml";
    std::ofstream(config_file) << yaml;
    config_ = config::load(config_file.string());
  }
  void TearDown() override { fs::remove_all(run_dir_); }

  static fs::path fixture() {
    // tests/train/<this file> -> tests/fixtures/checkpoints (CMake compiles by absolute path).
    return fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "checkpoints" /
           "before_derived_architecture.h5";
  }

  fs::path run_dir_;
  std::string checkpoint_;
  ExperimentConfig config_;
};

TEST_F(OlderCheckpoint, ResumesIntoTheModelItsConfigDescribes) {
  ASSERT_EQ(config_.model.norm_type, NormType::kRmsNorm);  // the fixture's conditional line
  std::string warning;
  EXPECT_EQ(newest_valid_checkpoint(run_dir_.string(), config_.model, &warning), checkpoint_);
  EXPECT_EQ(warning, "");
  dist::LocalComm comm;
  Trainer trainer(config_, make_synthetic_source(config_), comm);
  EXPECT_EQ(load_checkpoint(checkpoint_, trainer).step, 2);
}

TEST_F(OlderCheckpoint, DoesNotFitAModelOfAnotherArchitecture) {
  ExperimentConfig other = config_;
  other.model.attention_scale = AttentionScale::parse("none");  // the same tensors, another model
  std::string warning;
  EXPECT_THROW(newest_valid_checkpoint(run_dir_.string(), other.model, &warning), Error);
  dist::LocalComm comm;
  Trainer trainer(other, make_synthetic_source(other), comm);
  EXPECT_THROW(load_checkpoint(checkpoint_, trainer), Error);
}

}  // namespace
}  // namespace attnlab
