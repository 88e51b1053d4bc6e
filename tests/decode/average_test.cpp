// Checkpoint averaging: the mean of two checkpoint files equals the elementwise mean; choosing the
// last K files of a run; a tensor of another shape is an error naming it.
#include "core/decode/average.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/io/h5.h"
#include "core/util/check.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

ParamTable small_table() {
  ParamTable table;
  table.add("encoder.embed_tokens.weight", Shape({3, 2}), "embeddings", ParamInit::kZeros);
  table.add("decoder.layer_norm.bias", Shape({2}), "decoder", ParamInit::kZeros);
  return table;
}

// A checkpoint file in the trainer's layout: root attribute step, /params/<name> tensors.
void write_checkpoint(const std::string& path, int64_t step, const ParamTable& table,
                      const std::vector<float>& values) {
  h5::File file = h5::File::create(path, true);
  file.root().set_string("schema", "attnlab-checkpoint");
  file.root().set_int("step", step);
  h5::Group params = file.root().create_group("params");
  for (const ParamEntry& e : table.entries()) {
    params.write<float>(e.name, e.shape.dims(), values.data() + e.offset, {true});
  }
}

std::vector<float> flat(const ParamTable& table, const std::vector<std::vector<float>>& tensors) {
  std::vector<float> buffer(static_cast<size_t>(table.size()), 0.0f);
  for (size_t t = 0; t < tensors.size(); ++t) {
    std::copy(tensors[t].begin(), tensors[t].end(), buffer.begin() + table.entries()[t].offset);
  }
  return buffer;
}

std::vector<std::vector<float>> by_tensor(const ParamTable& table,
                                          const std::vector<float>& buffer) {
  std::vector<std::vector<float>> tensors;
  for (const ParamEntry& e : table.entries()) {
    tensors.emplace_back(buffer.begin() + e.offset, buffer.begin() + e.offset + e.shape.numel());
  }
  return tensors;
}

class AverageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attnlab-average-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "ckpt");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string ckpt(int64_t step) const {
    return (dir_ / "ckpt" / ("step_" + std::to_string(step) + ".h5")).string();
  }
  fs::path dir_;
};

TEST_F(AverageTest, TwoCheckpointsAverageToTheElementwiseMean) {
  const ParamTable table = small_table();
  // Values by tensor; the flat buffers follow the table's (aligned) offsets.
  const std::vector<std::vector<float>> a = {{1, 2, 3, 4, 5, 6}, {-1, 0.5f}};
  const std::vector<std::vector<float>> b = {{3, 2, 0, -4, 5.5f, 7}, {1, 0.25f}};
  const std::vector<std::vector<float>> expected = {{2, 2, 1.5f, 0, 5.25f, 6.5f}, {0, 0.375f}};
  write_checkpoint(ckpt(10), 10, table, flat(table, a));
  write_checkpoint(ckpt(20), 20, table, flat(table, b));
  std::vector<float> mean(static_cast<size_t>(table.size()), -99.0f);
  average_checkpoints({ckpt(10), ckpt(20)}, table, mean.data());
  EXPECT_EQ(by_tensor(table, mean), expected);
  // One checkpoint "averaged" is itself.
  average_checkpoints({ckpt(20)}, table, mean.data());
  EXPECT_EQ(by_tensor(table, mean), b);
  EXPECT_EQ(checkpoint_step(ckpt(20)), 20);
}

TEST_F(AverageTest, LastKAreTheNewestStepsOldestFirst) {
  const ParamTable table = small_table();
  const std::vector<float> zeros(static_cast<size_t>(table.size()), 0.0f);
  for (int64_t step : {5, 100, 20, 1000}) write_checkpoint(ckpt(step), step, table, zeros);
  EXPECT_EQ(last_checkpoints(dir_.string(), 2), (std::vector<std::string>{ckpt(100), ckpt(1000)}));
  EXPECT_EQ(last_checkpoints(dir_.string(), 4).front(), ckpt(5));
  try {
    last_checkpoints(dir_.string(), 5);
    FAIL() << "5 of 4 checkpoints were found";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("found 4"), std::string::npos) << error.what();
  }
}

TEST_F(AverageTest, AnotherShapeIsAnErrorNamingTheTensor) {
  ParamTable wider;
  wider.add("encoder.embed_tokens.weight", Shape({4, 2}), "embeddings", ParamInit::kZeros);
  wider.add("decoder.layer_norm.bias", Shape({2}), "decoder", ParamInit::kZeros);
  write_checkpoint(ckpt(1), 1, small_table(),
                   std::vector<float>(static_cast<size_t>(small_table().size()), 1.0f));
  std::vector<float> out(static_cast<size_t>(wider.size()));
  try {
    average_checkpoints({ckpt(1)}, wider, out.data());
    FAIL() << "a (3,2) tensor was read as (4,2)";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'encoder.embed_tokens.weight' has shape (3,2)"), std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace attnlab
