// Attention scale modes: their values by hand, parse errors, and the paper's reason for
// 1/sqrt(d_k): with iid unit-variance q and k, q.k has variance d_k, and the scaled logits 1.
#include "core/ops/attention_scale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/tensor_testing.h"
#include "core/tensor/blas.h"

namespace attnlab::test {
namespace {

TEST(AttentionScale, ValuesByHand) {
  // d_k = 64: rsqrt_dk 1/8, inv_dk 1/64, none 1, constant 0.5, learned starts at 1/8.
  EXPECT_EQ(AttentionScale::parse("rsqrt_dk").initial_value(64), 0.125);
  EXPECT_EQ(AttentionScale::parse("inv_dk").initial_value(64), 1.0 / 64);
  EXPECT_EQ(AttentionScale::parse("none").initial_value(64), 1.0);
  EXPECT_EQ(AttentionScale::parse("0.5").initial_value(64), 0.5);
  EXPECT_EQ(AttentionScale::parse("learned").initial_value(64), 0.125);
  EXPECT_TRUE(AttentionScale::parse("learned").learned());
  EXPECT_FALSE(AttentionScale::parse("rsqrt_dk").learned());
}

TEST(AttentionScale, TextRoundTrips) {
  for (const char* text : {"rsqrt_dk", "none", "inv_dk", "learned", "0.25"}) {
    EXPECT_EQ(AttentionScale::parse(text).str(), text);
    EXPECT_EQ(AttentionScale::parse(AttentionScale::parse(text).str()),
              AttentionScale::parse(text));
  }
}

TEST(AttentionScale, UnknownTextIsAnErrorNamingIt) {
  for (const char* text : {"sqrt", "", "-1", "0", "2x"}) {
    try {
      AttentionScale::parse(text);
      FAIL() << "'" << text << "' accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("'" + std::string(text) + "'"), std::string::npos)
          << error.what();
    }
  }
}

// Variance (about the known mean 0) of the logits alpha * Q K^T, computed as attention does
// (one GEMM per independent block of 128 queries by 128 keys).
double logit_variance(int64_t width, double alpha, uint64_t seed) {
  const int64_t blocks = 8, rows = 128;
  std::vector<double> q = random_normal(blocks * rows * width, seed),
                      k = random_normal(blocks * rows * width, seed + 1),
                      logits(static_cast<size_t>(blocks * rows * rows));
  blas::gemm_strided_batched<double>(false, true, rows, rows, width, alpha, q.data(), width,
                                     rows * width, k.data(), width, rows * width, 0.0,
                                     logits.data(), rows, rows * rows, blocks);
  double sum_squares = 0.0;
  for (double logit : logits) sum_squares += logit * logit;
  return sum_squares / static_cast<double>(logits.size());
}

class LogitVarianceTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(LogitVarianceTest, UnscaledGrowsLikeDkScaledStaysNearOne) {
  // Var(q.k) = sum_i Var(q_i k_i) = d_k. The estimate over 131072 logits has a relative standard
  // error of about sqrt(2 (2/128 + 1/d_k) / 8 / 128), at most 2.5% (d_k = 16): 10% is 4 sigma.
  const int64_t width = GetParam();
  const double none = AttentionScale::parse("none").initial_value(width);
  const double rsqrt = AttentionScale::parse("rsqrt_dk").initial_value(width);
  const double inv = AttentionScale::parse("inv_dk").initial_value(width);
  const double unscaled = logit_variance(width, none, 1000 + static_cast<uint64_t>(width));
  const double scaled = logit_variance(width, rsqrt, 1000 + static_cast<uint64_t>(width));
  const double over_scaled = logit_variance(width, inv, 1000 + static_cast<uint64_t>(width));
  EXPECT_NEAR(unscaled / static_cast<double>(width), 1.0, 0.1) << "unscaled " << unscaled;
  EXPECT_NEAR(scaled, 1.0, 0.1) << "rsqrt_dk-scaled " << scaled;
  // 1/d_k over-corrects: variance 1/d_k.
  EXPECT_NEAR(over_scaled * static_cast<double>(width), 1.0, 0.1) << "inv_dk " << over_scaled;
}

INSTANTIATE_TEST_SUITE_P(Widths, LogitVarianceTest, ::testing::Values(16, 64, 256));

}  // namespace
}  // namespace attnlab::test
