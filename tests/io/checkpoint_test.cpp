// core/io/checkpoint and checkpoint_dir: round trips, mismatches, damaged files, atomic writes,
// pruning and the newest intact checkpoint.
#include "core/io/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/io/checkpoint_dir.h"
#include "core/io/h5.h"
#include "io/expect_error.h"
#include "io/temp_dir.h"

namespace attnlab::io {
namespace {

using test::expect_error;
using test::TempDir;

// A tiny model's tensors: names, shapes and values that differ per tensor and per group.
struct FakeModel {
  std::vector<std::string> names = {"encoder.embed_tokens.weight", "encoder.layers.0.fc1.weight",
                                    "encoder.layers.0.fc1.bias",
                                    "decoder.layers.3.encoder_attn.q_proj.weight"};
  std::vector<Shape> shapes = {Shape{10, 4}, Shape{128, 32}, Shape{128}, Shape{4, 4}};
  std::vector<std::vector<float>> values;

  explicit FakeModel(float offset) {
    for (size_t t = 0; t < names.size(); ++t) {
      std::vector<float> tensor(static_cast<size_t>(shapes[t].numel()));
      for (size_t i = 0; i < tensor.size(); ++i) {
        tensor[i] = offset + 1000.0f * static_cast<float>(t) + static_cast<float>(i) * 1e-3f;
      }
      values.push_back(tensor);
    }
  }
  ConstTensors const_views() const {
    ConstTensors views;
    for (size_t t = 0; t < names.size(); ++t) {
      views.emplace_back(names[t], TensorView<const float>(values[t].data(), shapes[t]));
    }
    return views;
  }
  Tensors views() {
    Tensors views;
    for (size_t t = 0; t < names.size(); ++t) {
      views.emplace_back(names[t], TensorView<float>(values[t].data(), shapes[t]));
    }
    return views;
  }
};

CheckpointState sample_state(int64_t step) {
  CheckpointState state;
  state.step = step;
  state.architecture = "encoder_layers: 1\ndecoder_layers: 4\nheads: 8\nd_model: 4\n";
  state.config_yaml = "model:\n  heads: 8\n";
  state.scalars = {{"lr", 7e-4}, {"schedule.warmup", 4000}};
  state.data_position = {{"epoch", 2}, {"batch", 1234567890123}};
  return state;
}

void save_sample(const std::string& path, int64_t step) {
  FakeModel params(0.0f), adam_m(100.0f), adam_v(200.0f);
  save_checkpoint(path, sample_state(step),
                  {{kParamsGroup, params.const_views()},
                   {kAdamMGroup, adam_m.const_views()},
                   {kAdamVGroup, adam_v.const_views()}});
}

TEST(Checkpoint, RoundTripIsBitwise) {
  TempDir dir;
  std::string path = dir.file("step_7.h5");
  save_sample(path, 7);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  Checkpoint checkpoint = Checkpoint::open(path);
  const CheckpointState& state = checkpoint.state();
  EXPECT_EQ(state.step, 7);
  EXPECT_EQ(state.architecture, sample_state(7).architecture);
  EXPECT_EQ(state.config_yaml, "model:\n  heads: 8\n");
  // Scalars and positions come back sorted by name.
  EXPECT_EQ(state.scalars,
            (std::vector<std::pair<std::string, double>>{{"lr", 7e-4}, {"schedule.warmup", 4000}}));
  EXPECT_EQ(state.data_position,
            (std::vector<std::pair<std::string, int64_t>>{{"batch", 1234567890123}, {"epoch", 2}}));
  EXPECT_EQ(checkpoint.groups(), (std::vector<std::string>{"adam_m", "adam_v", "params"}));
  EXPECT_EQ(checkpoint.tensor_names(kParamsGroup).size(), 4u);
  checkpoint.check_architecture(sample_state(0).architecture);
  checkpoint.verify();

  for (auto [group, offset] : {std::pair{kParamsGroup, 0.0f}, std::pair{kAdamMGroup, 100.0f},
                               std::pair{kAdamVGroup, 200.0f}}) {
    FakeModel expected(offset);
    FakeModel loaded(-1.0f);
    checkpoint.load(group, loaded.views());
    for (size_t t = 0; t < expected.values.size(); ++t) {
      ASSERT_EQ(std::memcmp(loaded.values[t].data(), expected.values[t].data(),
                            expected.values[t].size() * sizeof(float)),
                0)
          << group << " " << expected.names[t];
    }
  }
  // Dotted names are dataset names in one group, not nested groups.
  h5::File file = h5::File::open(path, h5::Access::read);
  EXPECT_TRUE(
      file.root().group("params").has_dataset("decoder.layers.3.encoder_attn.q_proj.weight"));
}

TEST(Checkpoint, ArchitectureMismatchQuotesTheFirstDifferentLine) {
  TempDir dir;
  std::string path = dir.file("step_1.h5");
  save_sample(path, 1);
  Checkpoint checkpoint = Checkpoint::open(path);
  expect_error(
      [&] { checkpoint.check_architecture("encoder_layers: 1\ndecoder_layers: 4\nheads: 4\n"); },
      {"checkpoint " + path, "another architecture", "line 3 is 'heads: 8'",
       "the model has 'heads: 4'"});
  expect_error([&] { checkpoint.check_architecture("encoder_layers: 1\ndecoder_layers: 4\n"); },
               {"line 3 is 'heads: 8', the model has '<end>'"});
}

TEST(Checkpoint, TensorMismatchesAreAllNamedAndNothingIsRead) {
  TempDir dir;
  std::string path = dir.file("step_1.h5");
  save_sample(path, 1);
  Checkpoint checkpoint = Checkpoint::open(path);

  std::vector<float> fc1(64 * 32, -5.0f);
  FakeModel model(-1.0f);
  Tensors tensors = model.views();
  tensors[1].second = TensorView<float>(fc1.data(), Shape{64, 32});
  expect_error([&] { checkpoint.load(kParamsGroup, tensors); },
               {"checkpoint " + path +
                ": tensor 'encoder.layers.0.fc1.weight' has shape (128,32), the model "
                "expects (64,32)"});
  EXPECT_EQ(fc1[0], -5.0f);
  EXPECT_EQ(model.values[0][0], -1.0f) << "a failed load must not fill any tensor";

  std::vector<float> extra(3);
  Tensors renamed = model.views();
  renamed.pop_back();
  renamed.emplace_back("decoder.layers.9.fc2.bias", TensorView<float>(extra.data(), Shape{3}));
  expect_error([&] { checkpoint.load(kAdamVGroup, renamed); },
               {"tensor 'decoder.layers.9.fc2.bias' that the model expects is missing from /adam_v",
                "/adam_v holds tensor 'decoder.layers.3.encoder_attn.q_proj.weight' that the "
                "model does not have"});
  expect_error([&] { checkpoint.load("adam_w", model.views()); },
               {path, "no tensor group 'adam_w'"});
}

TEST(Checkpoint, DamagedAndForeignFilesAreClearErrors) {
  TempDir dir;
  std::string missing = dir.file("step_9.h5");
  expect_error([&] { Checkpoint::open(missing); }, {missing, "no such file"});

  std::string path = dir.file("step_1.h5");
  save_sample(path, 1);
  std::string bytes = test::file_bytes(path);

  std::string truncated = dir.file("truncated.h5");
  test::write_bytes(truncated, bytes.substr(0, bytes.size() / 2));
  expect_error([&] { Checkpoint::open(truncated); }, {truncated, "truncated file"});

  std::string empty = dir.file("empty.h5");
  test::write_bytes(empty, "");
  expect_error([&] { Checkpoint::open(empty); }, {empty, "not an HDF5 file"});

  // One flipped bit inside fc1.weight's values (1000 + i*1e-3 for i = 1000..1003, found by their
  // bytes) fails its checksum on read.
  FakeModel params(0.0f);
  std::string pattern(reinterpret_cast<const char*>(params.values[1].data() + 1000),
                      4 * sizeof(float));
  size_t at = bytes.find(pattern);
  ASSERT_NE(at, std::string::npos);
  std::string flipped = bytes;
  flipped[at] = static_cast<char>(flipped[at] ^ 0x01);
  std::string corrupt = dir.file("corrupt.h5");
  test::write_bytes(corrupt, flipped);
  Checkpoint damaged = Checkpoint::open(corrupt);
  expect_error([&] { damaged.verify(); }, {corrupt, "/params/encoder.layers.0.fc1.weight"});

  std::string run_file = dir.file("run.h5");
  { h5::File::create(run_file).root().set_string("schema", "attnlab-run"); }
  expect_error([&] { Checkpoint::open(run_file); }, {run_file, "not an attnlab checkpoint"});
}

TEST(Checkpoint, AFailedSaveLeavesTheEarlierFileIntact) {
  TempDir dir;
  std::string path = dir.file("step_5.h5");
  save_sample(path, 5);
  std::string before = test::file_bytes(path);

  FakeModel model(3.0f);
  ConstTensors twice = model.const_views();
  twice.push_back(twice.front());
  expect_error(
      [&] {
        save_checkpoint(path, sample_state(5), {{kParamsGroup, twice}});
      },
      {"tensor 'encoder.embed_tokens.weight' given twice"});
  ConstTensors slash = {{"a/b", model.const_views()[0].second}};
  expect_error(
      [&] {
        save_checkpoint(path, sample_state(5), {{kParamsGroup, slash}});
      },
      {"'a/b' must be non-empty without '/'"});
  EXPECT_EQ(test::file_bytes(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ(Checkpoint::open(path).state().step, 5);

  std::string nowhere = dir.file("absent/step_5.h5");
  expect_error([&] { save_sample(nowhere, 5); }, {nowhere + ".tmp"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent")));
}

TEST(CheckpointDir, ListsStepsNumericallyAndIgnoresOtherFiles) {
  TempDir dir;
  CheckpointDir checkpoints(dir.file("ckpt"));
  EXPECT_TRUE(checkpoints.steps().empty());
  checkpoints.create();
  for (const char* name : {"step_100.h5", "step_2.h5", "step_10.h5", "step_3.h5.tmp", "step_x.h5",
                           "notes.txt", "step_.h5", "step_-4.h5"}) {
    test::write_bytes(checkpoints.dir() + "/" + name, "x");
  }
  EXPECT_EQ(checkpoints.steps(), (std::vector<int64_t>{2, 10, 100}));
  EXPECT_EQ(checkpoints.path_for(10), dir.file("ckpt") + "/step_10.h5");
}

TEST(CheckpointDir, PruneKeepsTheLastKAndMarkedOnes) {
  TempDir dir;
  CheckpointDir checkpoints(dir.file("ckpt"));
  checkpoints.create();
  for (int64_t step : {100, 200, 300, 400, 500}) test::write_bytes(checkpoints.path_for(step), "");
  test::write_bytes(checkpoints.path_for(600) + ".tmp", "partial");
  checkpoints.keep(200);
  EXPECT_TRUE(checkpoints.is_kept(200));
  EXPECT_FALSE(checkpoints.is_kept(300));
  EXPECT_EQ(checkpoints.prune(2), (std::vector<int64_t>{100, 300}));
  EXPECT_EQ(checkpoints.steps(), (std::vector<int64_t>{200, 400, 500}));
  EXPECT_FALSE(std::filesystem::exists(checkpoints.path_for(600) + ".tmp"));
  EXPECT_TRUE(checkpoints.prune(2).empty());
  EXPECT_EQ(checkpoints.prune(0), (std::vector<int64_t>{400, 500}));
  EXPECT_EQ(checkpoints.steps(), (std::vector<int64_t>{200}));
}

TEST(CheckpointDir, NewestValidSkipsDamagedNewerFilesWithAWarning) {
  TempDir dir;
  CheckpointDir checkpoints(dir.file("ckpt"));
  CheckpointDir::Newest none = checkpoints.newest_valid();
  EXPECT_FALSE(none.found);
  EXPECT_TRUE(none.warnings.empty());

  checkpoints.create();
  save_sample(checkpoints.path_for(10), 10);
  save_sample(checkpoints.path_for(20), 20);
  CheckpointDir::Newest newest = checkpoints.newest_valid();
  ASSERT_TRUE(newest.found);
  EXPECT_EQ(newest.step, 20);
  EXPECT_TRUE(newest.warnings.empty());

  // A truncated newest file (a copy interrupted by a full disk) and a file whose name and step
  // disagree are skipped, each with a warning naming it.
  std::string bytes = test::file_bytes(checkpoints.path_for(20));
  test::write_bytes(checkpoints.path_for(30), bytes.substr(0, bytes.size() - 4096));
  test::write_bytes(checkpoints.path_for(40), bytes);
  newest = checkpoints.newest_valid();
  ASSERT_TRUE(newest.found);
  EXPECT_EQ(newest.step, 20);
  EXPECT_EQ(newest.path, checkpoints.path_for(20));
  ASSERT_EQ(newest.warnings.size(), 2u);
  EXPECT_NE(newest.warnings[0].find(checkpoints.path_for(40)), std::string::npos);
  EXPECT_NE(newest.warnings[0].find("holds step 20, its name says 40"), std::string::npos)
      << newest.warnings[0];
  EXPECT_NE(newest.warnings[1].find("skipping damaged checkpoint " + checkpoints.path_for(30)),
            std::string::npos)
      << newest.warnings[1];
  EXPECT_NE(newest.warnings[1].find("truncated file"), std::string::npos) << newest.warnings[1];

  test::write_bytes(checkpoints.path_for(10), "garbage");
  test::write_bytes(checkpoints.path_for(20), "");
  newest = checkpoints.newest_valid();
  EXPECT_FALSE(newest.found);
  EXPECT_EQ(newest.warnings.size(), 4u);
}

}  // namespace
}  // namespace attnlab::io
