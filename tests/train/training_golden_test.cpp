// Training numerics kept bit for bit: a few Adam steps of Transformer<float> with dropout, label
// smoothing and padded batches, for four architecture variants, against the losses and the final
// parameters that an earlier build of the model wrote (tests/fixtures/golden/training_steps.txt).
//
// The golden file was first written by this test built from the model code of main at 21c3b68,
// before the decoder layer of core/model/layer.h existed. It was written again, on purpose, when
// the training forward began to compute the loss's gradient (a block of rows at a time): the
// gradient became that of the summed loss, scaled by 1 / tokens afterwards (scale_grads, as the
// trainer always scaled it) instead of inside the loss's backward, which moves the last bits from
// step 1 on (step 0's loss is unchanged). The command, at the commit that rewrote it:
//
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
//   ATTNLAB_WRITE_GOLDEN=tests/fixtures/golden/training_steps.txt
//   build/tests/train/test_train --gtest_filter='TrainingGolden.*'
//
// (one command line).
//
// A refactoring of the model that is meant to keep the arithmetic must keep this test passing.
// Float sums depend on the GEMM and vector kernels and on the compiler's code, so the file records
// the OpenBLAS kernel, the vector extension and the build (type, compiler, sanitizers) it was
// written with; on another CPU or build (the sanitizer build of CI) the comparison cannot hold and
// the test is skipped with the reason (rewrite the file there from the old commit to compare).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/data/synthetic.h"
#include "core/model/transformer.h"
#include "core/optim/adam.h"
#include "core/tensor/blas.h"
#include "core/util/rng.h"
#include "core/util/sha256.h"
#include "tests/common/tiny_model.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

// tests/train/<this file> -> tests/fixtures/golden (CMake compiles sources by absolute path).
const std::string kGoldenFile =
    (fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "golden" / "training_steps.txt")
        .string();

struct Variant {
  const char* name;
  NormPlacement norm;
  NormType norm_type;
  PositionKind positions;
  AttentionKernel kernel;
  const char* scale;
  bool tie_embeddings;
};

// Every norm placement and type, both position kinds and kernels, a learned scale and untied
// embeddings with an output bias.
const Variant kVariants[] = {
    {"post-layernorm-sinusoidal-standard", NormPlacement::kPost, NormType::kLayerNorm,
     PositionKind::kSinusoidal, AttentionKernel::kStandard, "rsqrt_dk", true},
    {"pre-rmsnorm-learned-tiled", NormPlacement::kPre, NormType::kRmsNorm, PositionKind::kLearned,
     AttentionKernel::kTiled, "rsqrt_dk", true},
    {"pre-layernorm-learnedscale-untied", NormPlacement::kPre, NormType::kLayerNorm,
     PositionKind::kSinusoidal, AttentionKernel::kStandard, "learned", false},
    {"post-rmsnorm-learned-tiled-untied", NormPlacement::kPost, NormType::kRmsNorm,
     PositionKind::kLearned, AttentionKernel::kTiled, "inv_dk", false},
};

std::string hex(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", value);
  return text;
}

// The lines of one variant: each step's summed loss and NLL, then the final parameters' SHA-256.
std::vector<std::string> train_variant(const Variant& v) {
  ModelConfig c = test::tiny_model_config();
  c.norm = v.norm;
  c.norm_type = v.norm_type;
  c.positions = v.positions;
  c.attention = v.kernel;
  c.attention_scale = AttentionScale::parse(v.scale);
  c.tie_embeddings = v.tie_embeddings;
  c.output_bias = !v.tie_embeddings;
  c.dropout = 0.1;
  c.attention_dropout = 0.1;
  c.vocab_size = 13;  // the sort task's 10 symbols after pad, bos and eos
  Transformer<float> model(c, 5);
  // Lengths 3..7: every batch is padded on both sides.
  const SyntheticSplit split = make_synthetic_split(SyntheticTask::kSort, 10, 3, 7, 12, 0, 9);
  Adam adam(model.table().size(), {0.9, 0.98, 1e-9});
  std::vector<std::string> lines;
  for (int step = 0; step < 4; ++step) {
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < 4; ++i) rows.push_back((step * 3 + i) % 12);
    const Batch batch = make_batch(split.train, rows, c.pad_id, c.bos_id, c.eos_id);
    model.zero_grads();
    const ops::LossSums sums = model.forward(batch, 0.1f, true, rng_key(17, step));
    model.backward();
    model.scale_grads(1.0f / static_cast<float>(sums.tokens));
    adam.step(model.params().data(), model.grads().data(), 3e-3);
    lines.push_back(std::string(v.name) + " step " + std::to_string(step) + " loss " +
                    hex(sums.loss) + " nll " + hex(sums.nll));
  }
  const std::string bytes(reinterpret_cast<const char*>(model.params().data()),
                          model.params().size() * sizeof(float));
  lines.push_back(std::string(v.name) + " params " + sha256_hex(bytes));
  return lines;
}

// What the float bits depend on besides the code: the GEMM kernel, the vector code paths, and the
// compiler with its flags (tests/train/CMakeLists.txt defines ATTNLAB_TEST_BUILD).
std::string machine_line() {
  return "kernel " + blas::core_name() + " vector " + blas::cpu_vector_extension() + " build " +
         ATTNLAB_TEST_BUILD;
}

TEST(TrainingGolden, LossesAndParametersEqualTheRecordedBits) {
  blas::set_threads(1);
  std::vector<std::string> lines = {machine_line()};
  for (const Variant& v : kVariants) {
    for (std::string& line : train_variant(v)) lines.push_back(std::move(line));
  }
  if (const char* out = std::getenv("ATTNLAB_WRITE_GOLDEN")) {
    std::ofstream file(out);
    for (const std::string& line : lines) file << line << "\n";
    ASSERT_TRUE(file.good()) << "cannot write " << out;
    GTEST_SKIP() << "wrote " << out;
  }
  std::ifstream file(kGoldenFile);
  ASSERT_TRUE(file.good()) << "cannot read " << kGoldenFile;
  std::vector<std::string> expected;
  for (std::string line; std::getline(file, line);) expected.push_back(line);
  ASSERT_FALSE(expected.empty()) << kGoldenFile << " is empty";
  if (expected[0] != lines[0]) {
    GTEST_SKIP() << kGoldenFile << " was written on '" << expected[0] << "', this machine is '"
                 << lines[0] << "': float sums differ between kernels and builds";
  }
  ASSERT_EQ(expected.size(), lines.size()) << kGoldenFile;
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(lines[i], expected[i]);
}

}  // namespace
}  // namespace attnlab
