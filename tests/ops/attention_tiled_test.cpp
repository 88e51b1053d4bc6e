// Tiled attention (online softmax, recomputed backward) against the standard path of
// core/ops/attention.cpp: outputs and every gradient within 1e-5 in float over odd shapes (T != S,
// S and T not multiples of the tiles, several query tiles), masks (padding, causal, query_offset,
// fully hidden rows), dropout and the learned scale; a hand-computed logsumexp; a double-precision
// central-difference check; and results independent of the number of workers.
#include "core/ops/attention_tiled.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/attention_scale.h"
#include "core/util/rng.h"

namespace attnlab::test {
namespace {

using ops::AttentionMask;

TEST(AttentionTiled, HandComputed) {
  // q = [1], keys k = [[0] [ln 3]], values [[4] [8]], scale 1: probs [1/4 3/4], out 7,
  // lse = log(e^0 + e^ln3) = log 4. Backward as in attention_test's hand computation.
  const double ln3 = std::log(3.0);
  std::vector<double> q = {1}, k = {0, ln3}, v = {4, 8}, out(1), lse(1);
  const int64_t scratch_size = ops::attention_tiled_scratch_elements(1);
  std::vector<double> scratch(static_cast<size_t>(scratch_size));
  ops::attention_tiled_forward<double>(view(out, {1, 1, 1, 1}), view(lse, {1, 1, 1}),
                                       view(scratch, {scratch_size}), const_view(q, {1, 1, 1, 1}),
                                       const_view(k, {1, 1, 2, 1}), const_view(v, {1, 1, 2, 1}),
                                       AttentionMask{}, 1.0);
  EXPECT_NEAR(out[0], 7.0, 1e-14);
  EXPECT_NEAR(lse[0], std::log(4.0), 1e-15);
  std::vector<double> dout = {1}, dq(1), dk(2), dv(2);
  double dscale = 0.5;
  ops::attention_tiled_backward<double>(
      view(dq, {1, 1, 1, 1}), view(dk, {1, 1, 2, 1}), view(dv, {1, 1, 2, 1}), &dscale,
      const_view(dout, {1, 1, 1, 1}), const_view(q, {1, 1, 1, 1}), const_view(k, {1, 1, 2, 1}),
      const_view(v, {1, 1, 2, 1}), const_view(out, {1, 1, 1, 1}), const_view(lse, {1, 1, 1}),
      view(scratch, {scratch_size}), AttentionMask{}, 1.0);
  EXPECT_NEAR(dv[0], 0.25, 1e-15);
  EXPECT_NEAR(dv[1], 0.75, 1e-15);
  EXPECT_NEAR(dq[0], 0.75 * ln3, 1e-14);
  EXPECT_NEAR(dk[0], -0.75, 1e-14);
  EXPECT_NEAR(dk[1], 0.75, 1e-14);
  EXPECT_NEAR(dscale, 0.5 + 0.75 * ln3, 1e-14);
}

TEST(AttentionTiled, QueryTileKeepsTileProductsSingleThreaded) {
  EXPECT_EQ(ops::attention_query_tile(64, 64), 64);  // 64 x 64 x 64 = 262144
  EXPECT_EQ(ops::attention_query_tile(512, 64), 8);  // 8 x 64 x 512 = 262144
  EXPECT_EQ(ops::attention_query_tile(3, 5), ops::kAttentionQueryTileMax);
  EXPECT_EQ(ops::attention_query_tile(100000, 1), 1);
}

TEST(AttentionTiled, ScratchTooSmallNamesTheNeed) {
  std::vector<float> q(4), k(4), v(4), out(4), lse(2), scratch(10);
  try {
    ops::attention_tiled_forward<float>(view(out, {1, 1, 2, 2}), view(lse, {1, 1, 2}),
                                        view(scratch, {10}), const_view(q, {1, 1, 2, 2}),
                                        const_view(k, {1, 1, 2, 2}), const_view(v, {1, 1, 2, 2}),
                                        AttentionMask{}, 1.0f);
    FAIL() << "a scratch of 10 values accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("attention_tiled_scratch_elements"), std::string::npos) << message;
  }
}

enum class MaskKind { kNone, kPadding, kCausal, kCausalOffset, kPaddingCausal, kHiddenRows };

struct TiledCase {
  int64_t batch, heads, queries, keys, key_width, value_width;
  MaskKind mask;
  std::string scale;  // an AttentionScale text
  float dropout;
};

std::string case_name(const ::testing::TestParamInfo<TiledCase>& info) {
  const TiledCase& c = info.param;
  static const char* kMaskNames[] = {"none",   "padding",        "causal",
                                     "offset", "padding_causal", "hidden_rows"};
  return std::to_string(info.index) + "_B" + std::to_string(c.batch) + "H" +
         std::to_string(c.heads) + "T" + std::to_string(c.queries) + "S" + std::to_string(c.keys) +
         "K" + std::to_string(c.key_width) + "V" + std::to_string(c.value_width) + "_" +
         kMaskNames[static_cast<int>(c.mask)] + "_" + (c.scale == "0.5" ? "const0_5" : c.scale) +
         (c.dropout > 0 ? "_dropout" : "");
}

// Padding that hides the last b + 1 keys of batch row b (fewer than S); with kHiddenRows batch
// row 1 hides every key (its query rows see nothing).
std::vector<uint8_t> make_padding(const TiledCase& c) {
  std::vector<uint8_t> padding(static_cast<size_t>(c.batch * c.keys), 0);
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t hidden =
        c.mask == MaskKind::kHiddenRows && b == 1 ? c.keys : std::min(b + 1, c.keys - 1);
    for (int64_t s = c.keys - hidden; s < c.keys; ++s) {
      padding[static_cast<size_t>(b * c.keys + s)] = 1;
    }
  }
  return padding;
}

AttentionMask make_mask(const TiledCase& c, const std::vector<uint8_t>& padding) {
  AttentionMask mask;
  if (c.mask == MaskKind::kPadding || c.mask == MaskKind::kPaddingCausal ||
      c.mask == MaskKind::kHiddenRows) {
    mask.key_padding = padding.data();
  }
  mask.causal = c.mask == MaskKind::kCausal || c.mask == MaskKind::kCausalOffset ||
                c.mask == MaskKind::kPaddingCausal || c.mask == MaskKind::kHiddenRows;
  if (c.mask == MaskKind::kCausalOffset) mask.query_offset = c.keys - c.queries;
  // Queries before key 0: the first two query rows of every batch row see nothing.
  if (c.mask == MaskKind::kHiddenRows) mask.query_offset = -2;
  return mask;
}

struct Shapes {
  Shape q, k, v, out, lse, probs;
};
Shapes shapes_of(const TiledCase& c) {
  return {Shape({c.batch, c.heads, c.queries, c.key_width}),
          Shape({c.batch, c.heads, c.keys, c.key_width}),
          Shape({c.batch, c.heads, c.keys, c.value_width}),
          Shape({c.batch, c.heads, c.queries, c.value_width}),
          Shape({c.batch, c.heads, c.queries}),
          Shape({c.batch, c.heads, c.queries, c.keys})};
}

template <typename T>
struct AttentionRun {
  std::vector<T> out, dq, dk, dv;
  T dscale = T(0);
};

template <typename T>
struct Inputs {
  std::vector<T> q, k, v, dout;
  T scale;
};

template <typename T>
Inputs<T> make_inputs(const TiledCase& c, uint64_t seed) {
  const Shapes s = shapes_of(c);
  // Spread logits (|q|,|k| up to 2) so that online rescaling across tiles matters.
  return {convert<T>(random_uniform(s.q.numel(), seed, -2.0, 2.0)),
          convert<T>(random_uniform(s.k.numel(), seed + 1, -2.0, 2.0)),
          convert<T>(random_uniform(s.v.numel(), seed + 2)),
          convert<T>(random_uniform(s.out.numel(), seed + 3)),
          static_cast<T>(AttentionScale::parse(c.scale).initial_value(c.key_width))};
}

constexpr uint64_t kDropoutKey = 0x5eed;

template <typename T>
AttentionRun<T> run_standard(const TiledCase& c, const Inputs<T>& in) {
  const Shapes s = shapes_of(c);
  const std::vector<uint8_t> padding = make_padding(c);
  const AttentionMask mask = make_mask(c, padding);
  AttentionRun<T> run;
  run.out.resize(static_cast<size_t>(s.out.numel()));
  run.dq.resize(in.q.size());
  run.dk.resize(in.k.size());
  run.dv.resize(in.v.size());
  std::vector<T> probs(static_cast<size_t>(s.probs.numel())), scratch(probs.size());
  ops::attention_forward<T>(view(run.out, s.out), view(probs, s.probs), const_view(in.q, s.q),
                            const_view(in.k, s.k), const_view(in.v, s.v), mask, in.scale, c.dropout,
                            kDropoutKey);
  ops::attention_backward<T>(view(run.dq, s.q), view(run.dk, s.k), view(run.dv, s.v), &run.dscale,
                             const_view(in.dout, s.out), const_view(in.q, s.q),
                             const_view(in.k, s.k), const_view(in.v, s.v),
                             const_view(probs, s.probs), view(scratch, s.probs), in.scale,
                             c.dropout, kDropoutKey);
  return run;
}

template <typename T>
AttentionRun<T> run_tiled(const TiledCase& c, const Inputs<T>& in, int workers,
                          std::vector<T>* logsumexp = nullptr) {
  const Shapes s = shapes_of(c);
  const std::vector<uint8_t> padding = make_padding(c);
  const AttentionMask mask = make_mask(c, padding);
  AttentionRun<T> run;
  run.out.resize(static_cast<size_t>(s.out.numel()));
  run.dq.assign(in.q.size(), T(7));  // assigned outputs: stale values must not survive
  run.dk.assign(in.k.size(), T(7));
  run.dv.assign(in.v.size(), T(7));
  std::vector<T> lse(static_cast<size_t>(s.lse.numel()));
  const int64_t scratch_size = ops::attention_tiled_scratch_elements(workers);
  std::vector<T> scratch(static_cast<size_t>(scratch_size));
  ops::attention_tiled_forward<T>(
      view(run.out, s.out), view(lse, s.lse), view(scratch, {scratch_size}), const_view(in.q, s.q),
      const_view(in.k, s.k), const_view(in.v, s.v), mask, in.scale, c.dropout, kDropoutKey);
  ops::attention_tiled_backward<T>(
      view(run.dq, s.q), view(run.dk, s.k), view(run.dv, s.v), &run.dscale,
      const_view(in.dout, s.out), const_view(in.q, s.q), const_view(in.k, s.k),
      const_view(in.v, s.v), const_view(run.out, s.out), const_view(lse, s.lse),
      view(scratch, {scratch_size}), mask, in.scale, c.dropout, kDropoutKey);
  if (logsumexp != nullptr) *logsumexp = lse;
  return run;
}

class AttentionTiledTest : public ::testing::TestWithParam<TiledCase> {};

TEST_P(AttentionTiledTest, FloatEqualsStandardPath) {
  const Inputs<float> in = make_inputs<float>(GetParam(), 211);
  const AttentionRun<float> standard = run_standard<float>(GetParam(), in);
  const AttentionRun<float> tiled = run_tiled<float>(GetParam(), in, 1);
  EXPECT_LT(max_scaled_difference(tiled.out, standard.out), 1e-5);
  EXPECT_LT(max_scaled_difference(tiled.dq, standard.dq), 1e-5);
  EXPECT_LT(max_scaled_difference(tiled.dk, standard.dk), 1e-5);
  EXPECT_LT(max_scaled_difference(tiled.dv, standard.dv), 1e-5);
  EXPECT_NEAR(tiled.dscale, standard.dscale, 1e-5 * std::max(1.0f, std::fabs(standard.dscale)));
}

TEST_P(AttentionTiledTest, LogsumexpMatchesItsDefinition) {
  const TiledCase& c = GetParam();  // dropout acts after the softmax: lse is the same
  const Inputs<double> in = make_inputs<double>(c, 212);
  std::vector<double> lse;
  run_tiled<double>(c, in, 1, &lse);
  const std::vector<uint8_t> padding = make_padding(c);
  const AttentionMask mask = make_mask(c, padding);
  for (int64_t pair = 0; pair < c.batch * c.heads; ++pair) {
    const int64_t b = pair / c.heads;
    for (int64_t t = 0; t < c.queries; ++t) {
      double sum = 0.0;
      for (int64_t s = 0; s < c.keys; ++s) {
        const bool hidden = (mask.key_padding && mask.key_padding[b * c.keys + s]) ||
                            (mask.causal && s > t + mask.query_offset);
        if (hidden) continue;
        double dot = 0.0;
        for (int64_t j = 0; j < c.key_width; ++j) {
          dot += in.q[static_cast<size_t>((pair * c.queries + t) * c.key_width + j)] *
                 in.k[static_cast<size_t>((pair * c.keys + s) * c.key_width + j)];
        }
        sum += std::exp(in.scale * dot);
      }
      const double got = lse[static_cast<size_t>(pair * c.queries + t)];
      if (sum == 0.0) {
        EXPECT_EQ(got, -std::numeric_limits<double>::infinity()) << "pair " << pair << " t " << t;
      } else {
        EXPECT_NEAR(got, std::log(sum), 1e-12) << "pair " << pair << " t " << t;
      }
    }
  }
}

TEST_P(AttentionTiledTest, WorkersDoNotChangeTheResult) {
  const TiledCase& c = GetParam();
  const Inputs<float> in = make_inputs<float>(c, 213);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(3);
  const AttentionRun<float> one = run_tiled<float>(c, in, 1);
  const AttentionRun<float> three = run_tiled<float>(c, in, 3);
  omp_set_num_threads(threads);
  // Each (pair, query tile) is computed by one worker in a fixed order: bit-identical.
  EXPECT_TRUE(bitwise_equal(one.out, three.out));
  EXPECT_TRUE(bitwise_equal(one.dq, three.dq));
  EXPECT_TRUE(bitwise_equal(one.dk, three.dk));
  EXPECT_TRUE(bitwise_equal(one.dv, three.dv));
  EXPECT_EQ(one.dscale, three.dscale);
}

const TiledCase kCases[] = {
    {1, 1, 1, 1, 1, 1, MaskKind::kNone, "rsqrt_dk", 0.0f},       // the smallest case
    {2, 3, 5, 70, 4, 3, MaskKind::kNone, "learned", 0.0f},       // S = one tile + 6
    {2, 2, 70, 5, 3, 6, MaskKind::kPadding, "rsqrt_dk", 0.0f},   // T = one query tile + 6
    {2, 2, 67, 131, 8, 5, MaskKind::kCausal, "inv_dk", 0.0f},    // three key tiles
    {1, 2, 9, 140, 5, 5, MaskKind::kCausalOffset, "0.5", 0.0f},  // offset S - T
    {3, 1, 130, 130, 4, 4, MaskKind::kPaddingCausal, "learned", 0.0f},
    {2, 2, 66, 129, 6, 7, MaskKind::kHiddenRows, "learned", 0.0f},     // rows that see nothing
    {1, 1, 13, 70, 600, 520, MaskKind::kPadding, "rsqrt_dk", 0.0f},    // query tile 6: 3 tiles
    {2, 2, 65, 100, 8, 8, MaskKind::kPaddingCausal, "learned", 0.3f},  // attention dropout
    {2, 1, 7, 3, 3, 1, MaskKind::kHiddenRows, "none", 0.25f},  // T > S, dropout, hidden rows
    // Above kParallelMinElements (B*H*T*S = 72000): the workers test runs three threads.
    {2, 4, 100, 90, 8, 8, MaskKind::kPaddingCausal, "learned", 0.1f},
};

INSTANTIATE_TEST_SUITE_P(Cases, AttentionTiledTest, ::testing::ValuesIn(kCases), case_name);

// At a logit scale of 1e30 (model.attention_scale) every row is a point mass: softmax's Jacobian
// is 0, so dQ and dK are 0 and dV takes dO whole. The standard path computes exactly that; the
// tiled one must too, rather than multiply rounding errors of dP - D by 1e30 into infinities.
TEST(AttentionTiled, HugeScaleGivesTheStandardPathsFiniteGradients) {
  for (const TiledCase& c : {TiledCase{2, 2, 70, 67, 8, 8, MaskKind::kPaddingCausal, "1e30", 0.0f},
                             TiledCase{2, 2, 65, 100, 8, 8, MaskKind::kPadding, "1e30", 0.3f}}) {
    SCOPED_TRACE(c.keys);
    const Inputs<float> in = make_inputs<float>(c, 214);
    const AttentionRun<float> standard = run_standard<float>(c, in);
    const AttentionRun<float> tiled = run_tiled<float>(c, in, 1);
    for (const std::vector<float>* values :
         {&standard.out, &standard.dq, &standard.dk, &standard.dv, &tiled.out, &tiled.dq, &tiled.dk,
          &tiled.dv}) {
      for (float value : *values) ASSERT_TRUE(std::isfinite(value));
    }
    for (float value : standard.dq) ASSERT_EQ(value, 0.0f);
    EXPECT_LT(max_scaled_difference(tiled.out, standard.out), 1e-5);
    EXPECT_TRUE(bitwise_equal(tiled.dq, standard.dq));
    EXPECT_TRUE(bitwise_equal(tiled.dk, standard.dk));
    EXPECT_LT(max_scaled_difference(tiled.dv, standard.dv), 1e-5);
  }
}

// Central differences in double over a case that crosses a key tile, with padding, causal offset
// rows that see nothing, dropout and a learned scale.
TEST(AttentionTiled, GradientMatchesCentralDifferences) {
  for (const TiledCase& c :
       {TiledCase{2, 2, 5, 70, 3, 4, MaskKind::kHiddenRows, "learned", 0.2f},
        TiledCase{1, 2, 4, 67, 2, 3, MaskKind::kCausalOffset, "learned", 0.0f}}) {
    SCOPED_TRACE(c.queries);
    const Shapes s = shapes_of(c);
    Inputs<double> in = make_inputs<double>(c, 301);
    std::vector<double> scale = {in.scale};
    const std::vector<uint8_t> padding = make_padding(c);
    const AttentionMask mask = make_mask(c, padding);
    const int64_t scratch_size = ops::attention_tiled_scratch_elements(1);
    std::vector<double> out(static_cast<size_t>(s.out.numel())),
        lse(static_cast<size_t>(s.lse.numel())), scratch(static_cast<size_t>(scratch_size));
    auto objective = [&] {
      ops::attention_tiled_forward<double>(
          view(out, s.out), view(lse, s.lse), view(scratch, {scratch_size}), const_view(in.q, s.q),
          const_view(in.k, s.k), const_view(in.v, s.v), mask, scale[0], c.dropout, kDropoutKey);
      return weighted_sum(out.data(), in.dout);
    };
    objective();
    std::vector<double> dq(in.q.size()), dk(in.k.size()), dv(in.v.size()), dscale = {0.0};
    ops::attention_tiled_backward<double>(
        view(dq, s.q), view(dk, s.k), view(dv, s.v), dscale.data(), const_view(in.dout, s.out),
        const_view(in.q, s.q), const_view(in.k, s.k), const_view(in.v, s.v), const_view(out, s.out),
        const_view(lse, s.lse), view(scratch, {scratch_size}), mask, scale[0], c.dropout,
        kDropoutKey);
    const GradCheckResult result =
        check_gradients(objective, {{"q", in.q.data(), dq.data(), s.q.numel()},
                                    {"k", in.k.data(), dk.data(), s.k.numel()},
                                    {"v", in.v.data(), dv.data(), s.v.numel()},
                                    {"scale", scale.data(), dscale.data(), 1}});
    EXPECT_TRUE(result.passed) << result.report;
    EXPECT_GT(result.checked, 500);
  }
}

}  // namespace
}  // namespace attnlab::test
