// Checkpoint averaging: the mean of two checkpoint files equals the elementwise mean; choosing the
// last K files of a run; a tensor of another shape is an error naming it.
#include "core/decode/average.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/io/checkpoint.h"
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

// A checkpoint of `table`'s parameters as the trainer writes it (io::save_checkpoint).
void write_checkpoint(const std::string& path, int64_t step, const ParamTable& table,
                      const std::vector<float>& values,
                      const std::string& architecture = "model: small") {
  io::CheckpointState state;
  state.step = step;
  state.architecture = architecture;
  io::save_checkpoint(path, state, {{io::kParamsGroup, table.named_views(values.data())}});
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

TEST_F(AverageTest, CheckpointsOfAnotherArchitectureAreNotAveraged) {
  const ParamTable table = small_table();
  const std::vector<float> zeros(static_cast<size_t>(table.size()), 0.0f);
  write_checkpoint(ckpt(10), 10, table, zeros, "model: small\nnorm: post");
  write_checkpoint(ckpt(20), 20, table, zeros, "model: small\nnorm: pre");
  std::vector<float> out(static_cast<size_t>(table.size()));
  try {
    average_checkpoints({ckpt(10), ckpt(20)}, table, out.data());
    FAIL() << "a post-LN and a pre-LN checkpoint were averaged";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(ckpt(20)), std::string::npos) << message;
    EXPECT_NE(message.find("norm: pre"), std::string::npos) << message;
  }
}

TEST_F(AverageTest, ADamagedTensorIsAnErrorNotAverageValues) {
  const ParamTable table = small_table();
  write_checkpoint(ckpt(10), 10, table, std::vector<float>(static_cast<size_t>(table.size()), 1));
  // Flip one bit of the last stored 1.0f (00 00 80 3f), inside a tensor's data: the tensor's
  // Fletcher-32 checksum no longer matches.
  const std::string path = ckpt(10);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.rfind(std::string("\x00\x00\x80\x3f", 4));
  ASSERT_NE(at, std::string::npos) << "no 1.0f in " << path;
  bytes[at + 3] = static_cast<char>(bytes[at + 3] ^ 0x01);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  std::vector<float> out(static_cast<size_t>(table.size()));
  EXPECT_THROW(average_checkpoints({path}, table, out.data()), Error);
}

}  // namespace
}  // namespace attnlab
