// Scaled dot-product attention: hand-computed values and gradients, and the central-difference
// check of dq, dk, dv and dscale over shapes (d_k != d_v, T != S), masks, every scale mode and
// attention dropout with a fixed key.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/attention_scale.h"
#include "core/ops/ops.h"
#include "core/util/rng.h"

namespace attnlab::test {
namespace {

using ops::attention_backward;
using ops::attention_forward;
using ops::AttentionMask;

TEST(Attention, HandComputed) {
  // One query q = [1], keys k = [[0] [ln 3]], values v = [[4] [8]], scale 1:
  //   logits = [0, ln 3], probs = [1/4, 3/4], out = 4/4 + 3*8/4 = 7.
  const double ln3 = std::log(3.0);
  std::vector<double> q = {1}, k = {0, ln3}, v = {4, 8}, out(1), probs(2);
  attention_forward<double>(view(out, {1, 1, 1, 1}), view(probs, {1, 1, 1, 2}),
                            const_view(q, {1, 1, 1, 1}), const_view(k, {1, 1, 2, 1}),
                            const_view(v, {1, 1, 2, 1}), AttentionMask{}, 1.0);
  EXPECT_NEAR(probs[0], 0.25, 1e-15);
  EXPECT_NEAR(probs[1], 0.75, 1e-15);
  EXPECT_NEAR(out[0], 7.0, 1e-14);
  // dout = 1: dv = probs = [1/4 3/4]; dprobs = v = [4 8]; sum(dprobs * probs) = 7;
  //   dlogits = probs * (dprobs - 7) = [-3/4, 3/4];
  //   dq = scale * sum_s dlogits_s k_s = 3/4 ln 3; dk = scale * dlogits * q = [-3/4 3/4];
  //   dscale += sum dlogits * (q k) = 3/4 ln 3 (starting from 0.5).
  std::vector<double> dout = {1}, dq(1), dk(2), dv(2), scratch(2);
  double dscale = 0.5;
  attention_backward<double>(view(dq, {1, 1, 1, 1}), view(dk, {1, 1, 2, 1}), view(dv, {1, 1, 2, 1}),
                             &dscale, const_view(dout, {1, 1, 1, 1}), const_view(q, {1, 1, 1, 1}),
                             const_view(k, {1, 1, 2, 1}), const_view(v, {1, 1, 2, 1}),
                             const_view(probs, {1, 1, 1, 2}), view(scratch, {1, 1, 1, 2}), 1.0);
  EXPECT_NEAR(dv[0], 0.25, 1e-15);
  EXPECT_NEAR(dv[1], 0.75, 1e-15);
  EXPECT_NEAR(dq[0], 0.75 * ln3, 1e-14);
  EXPECT_NEAR(dk[0], -0.75, 1e-14);
  EXPECT_NEAR(dk[1], 0.75, 1e-14);
  EXPECT_NEAR(dscale, 0.5 + 0.75 * ln3, 1e-14);
}

TEST(Attention, HandComputedMasks) {
  // The same keys and values, two queries q = [[1] [1]].
  //   padding on key 1: both rows see key 0 only -> out = [4 4]
  //   causal: row 0 sees key 0 only (out 4), row 1 sees both (out 7)
  //   causal with query_offset 1 (queries at positions 1 and 2): both rows see both keys -> [7 7]
  const double ln3 = std::log(3.0);
  std::vector<double> q = {1, 1}, k = {0, ln3}, v = {4, 8}, out(2), probs(4);
  const std::vector<uint8_t> padding = {0, 1};
  auto run = [&](const AttentionMask& mask) {
    attention_forward<double>(view(out, {1, 1, 2, 1}), view(probs, {1, 1, 2, 2}),
                              const_view(q, {1, 1, 2, 1}), const_view(k, {1, 1, 2, 1}),
                              const_view(v, {1, 1, 2, 1}), mask, 1.0);
    return out;
  };
  std::vector<double> padded = run(AttentionMask{padding.data(), false, 0});
  EXPECT_EQ(padded, (std::vector<double>{4, 4}));
  EXPECT_EQ(probs, (std::vector<double>{1, 0, 1, 0}));
  std::vector<double> causal = run(AttentionMask{nullptr, true, 0});
  EXPECT_EQ(causal[0], 4.0);
  EXPECT_NEAR(causal[1], 7.0, 1e-14);
  std::vector<double> offset = run(AttentionMask{nullptr, true, 1});
  EXPECT_NEAR(offset[0], 7.0, 1e-14);
  EXPECT_NEAR(offset[1], 7.0, 1e-14);
}

TEST(Attention, ShapeMismatchNamesBothShapes) {
  std::vector<double> q(6), k(8), v(4), out(4), probs(4);
  try {
    attention_forward<double>(view(out, {1, 1, 2, 2}), view(probs, {1, 1, 2, 2}),
                              const_view(q, {1, 1, 2, 3}), const_view(k, {1, 1, 2, 4}),
                              const_view(v, {1, 1, 2, 2}), AttentionMask{}, 1.0);
    FAIL() << "q of width 3 with keys of width 4 accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("(1,1,2,3)"), std::string::npos) << message;
    EXPECT_NE(message.find("(1,1,2,4)"), std::string::npos) << message;
  }
}
TEST(Attention, FloatRowsHideScatteredKeysExactlyAndMatchDouble) {
  // 40 keys with padding scattered through them (not only at the end), causal with offset -1 so
  // that query 0 sees no key at all (a zero row) and the others see up to t - 1 + 1 keys.
  constexpr int64_t kQueries = 24, kKeys = 40, kWidth = 8;
  std::vector<uint8_t> padding(kKeys, 0);
  for (int64_t s = 0; s < kKeys; ++s) padding[static_cast<size_t>(s)] = s % 7 == 3 || s > 33;
  const AttentionMask mask{padding.data(), true, -1};
  const Shape q_shape({1, 1, kQueries, kWidth}), k_shape({1, 1, kKeys, kWidth}),
      out_shape({1, 1, kQueries, kWidth}), probs_shape({1, 1, kQueries, kKeys});
  const std::vector<double> q = random_uniform(q_shape.numel(), 5),
                            k = random_uniform(k_shape.numel(), 6),
                            v = random_uniform(k_shape.numel(), 7);
  std::vector<double> out(static_cast<size_t>(out_shape.numel())),
      probs(static_cast<size_t>(probs_shape.numel()));
  attention_forward<double>(view(out, out_shape), view(probs, probs_shape), const_view(q, q_shape),
                            const_view(k, k_shape), const_view(v, k_shape), mask, 3.0);
  const std::vector<float> qf = convert<float>(q), kf = convert<float>(k), vf = convert<float>(v);
  std::vector<float> out_f(out.size()), probs_f(probs.size(), 123.0f);
  attention_forward<float>(view(out_f, out_shape), view(probs_f, probs_shape),
                           const_view(qf, q_shape), const_view(kf, k_shape),
                           const_view(vf, k_shape), mask, 3.0f);
  for (int64_t t = 0; t < kQueries; ++t) {
    double row_sum = 0.0;
    for (int64_t s = 0; s < kKeys; ++s) {
      const size_t i = static_cast<size_t>(t * kKeys + s);
      const bool hidden = padding[static_cast<size_t>(s)] != 0 || s > t - 1;
      if (hidden) {
        EXPECT_EQ(probs_f[i], 0.0f) << "query " << t << " key " << s;
      } else {
        EXPECT_NEAR(probs_f[i], probs[i], 2e-7 + 1e-6 * probs[i]) << "query " << t << " key " << s;
      }
      row_sum += probs_f[i];
    }
    EXPECT_NEAR(row_sum, t == 0 ? 0.0 : 1.0, 1e-6) << "query " << t;
  }
  EXPECT_LT(max_scaled_difference(convert<double>(out_f), out), 1e-6);
}

enum class MaskKind { kNone, kPadding, kCausal, kCausalOffset, kPaddingCausal };

struct AttentionShape {
  int64_t batch, heads, queries, keys, key_width, value_width;
};

struct AttentionCase {
  AttentionShape shape;
  MaskKind mask;
  std::string scale;  // an AttentionScale text
  float dropout;
};

std::string case_name(const ::testing::TestParamInfo<AttentionCase>& info) {
  const AttentionCase& c = info.param;
  const AttentionShape& s = c.shape;
  static const char* kMaskNames[] = {"none", "padding", "causal", "causal_offset",
                                     "padding_causal"};
  std::string scale = c.scale == "0.5" ? "const0_5" : c.scale;
  return std::to_string(info.index) + "_B" + std::to_string(s.batch) + "H" +
         std::to_string(s.heads) + "T" + std::to_string(s.queries) + "S" + std::to_string(s.keys) +
         "K" + std::to_string(s.key_width) + "V" + std::to_string(s.value_width) + "_" +
         kMaskNames[static_cast<int>(c.mask)] + "_" + scale + (c.dropout > 0 ? "_dropout" : "");
}

// Key padding that hides the last min(b + 1, S - 1) keys of batch row b (never every key).
std::vector<uint8_t> trailing_padding(int64_t batch, int64_t keys) {
  std::vector<uint8_t> padding(static_cast<size_t>(batch * keys), 0);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t padded = std::min(b + 1, keys - 1);
    for (int64_t s = keys - padded; s < keys; ++s) padding[static_cast<size_t>(b * keys + s)] = 1;
  }
  return padding;
}

// The mask of a case; `padding` is used when the case pads keys.
AttentionMask make_mask(const AttentionCase& c, const std::vector<uint8_t>& padding) {
  AttentionMask mask;
  if (c.mask == MaskKind::kPadding || c.mask == MaskKind::kPaddingCausal) {
    mask.key_padding = padding.data();
  }
  mask.causal = c.mask == MaskKind::kCausal || c.mask == MaskKind::kCausalOffset ||
                c.mask == MaskKind::kPaddingCausal;
  if (c.mask == MaskKind::kCausalOffset) {
    mask.query_offset = std::max<int64_t>(c.shape.keys - c.shape.queries, 1);
  }
  return mask;
}

// Forward and backward of a case in T; every result returned in double.
struct AttentionRun {
  std::vector<double> out, dq, dk, dv;
  double dscale;
};

template <typename T>
AttentionRun run_attention(const AttentionCase& c, uint64_t seed) {
  const auto [b, h, t, s, kw, vw] = c.shape;
  const Shape q_shape({b, h, t, kw}), k_shape({b, h, s, kw}), v_shape({b, h, s, vw}),
      out_shape({b, h, t, vw}), probs_shape({b, h, t, s});
  const std::vector<T> q = convert<T>(random_uniform(q_shape.numel(), seed)),
                       k = convert<T>(random_uniform(k_shape.numel(), seed + 1)),
                       v = convert<T>(random_uniform(v_shape.numel(), seed + 2)),
                       dout = convert<T>(random_uniform(out_shape.numel(), seed + 3));
  const T scale = static_cast<T>(AttentionScale::parse(c.scale).initial_value(kw));
  const std::vector<uint8_t> padding = trailing_padding(b, s);
  const AttentionMask mask = make_mask(c, padding);
  std::vector<T> out(static_cast<size_t>(out_shape.numel())),
      probs(static_cast<size_t>(probs_shape.numel())), dq(q.size()), dk(k.size()), dv(v.size()),
      scratch(probs.size());
  T dscale = T(0);
  attention_forward<T>(view(out, out_shape), view(probs, probs_shape), const_view(q, q_shape),
                       const_view(k, k_shape), const_view(v, v_shape), mask, scale, c.dropout,
                       rng_key(19));
  attention_backward<T>(view(dq, q_shape), view(dk, k_shape), view(dv, v_shape), &dscale,
                        const_view(dout, out_shape), const_view(q, q_shape), const_view(k, k_shape),
                        const_view(v, v_shape), const_view(probs, probs_shape),
                        view(scratch, probs_shape), scale, c.dropout, rng_key(19));
  return {convert<double>(out), convert<double>(dq), convert<double>(dk), convert<double>(dv),
          static_cast<double>(dscale)};
}

class AttentionGradTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionGradTest, FloatMatchesDouble) {
  const AttentionRun reference = run_attention<double>(GetParam(), 111);
  const AttentionRun single = run_attention<float>(GetParam(), 111);
  EXPECT_LT(max_scaled_difference(single.out, reference.out), 1e-5);
  EXPECT_LT(max_scaled_difference(single.dq, reference.dq), 1e-5);
  EXPECT_LT(max_scaled_difference(single.dk, reference.dk), 1e-5);
  EXPECT_LT(max_scaled_difference(single.dv, reference.dv), 1e-5);
  EXPECT_NEAR(single.dscale, reference.dscale, 1e-5 * std::max(1.0, std::fabs(reference.dscale)));
}

TEST_P(AttentionGradTest, GradientMatchesCentralDifferences) {
  const AttentionCase& c = GetParam();
  const auto [b, h, t, s, kw, vw] = c.shape;
  const Shape q_shape({b, h, t, kw}), k_shape({b, h, s, kw}), v_shape({b, h, s, vw}),
      out_shape({b, h, t, vw}), probs_shape({b, h, t, s});
  std::vector<double> q = random_uniform(q_shape.numel(), 101, -1.5, 1.5),
                      k = random_uniform(k_shape.numel(), 102, -1.5, 1.5),
                      v = random_uniform(v_shape.numel(), 103),
                      dout = random_uniform(out_shape.numel(), 104);
  std::vector<double> scale = {AttentionScale::parse(c.scale).initial_value(kw)};
  const std::vector<uint8_t> padding = trailing_padding(b, s);
  const AttentionMask mask = make_mask(c, padding);
  const uint64_t key = rng_key(17);

  std::vector<double> out(static_cast<size_t>(out_shape.numel())),
      probs(static_cast<size_t>(probs_shape.numel()));
  auto objective = [&] {
    attention_forward<double>(view(out, out_shape), view(probs, probs_shape),
                              const_view(q, q_shape), const_view(k, k_shape),
                              const_view(v, v_shape), mask, scale[0], c.dropout, key);
    return weighted_sum(out.data(), dout);
  };
  objective();
  std::vector<double> dq(q.size(), 5.0), dk(k.size(), 5.0), dv(v.size(), 5.0),
      scratch(probs.size()), dscale = {0.0};
  attention_backward<double>(view(dq, q_shape), view(dk, k_shape), view(dv, v_shape), dscale.data(),
                             const_view(dout, out_shape), const_view(q, q_shape),
                             const_view(k, k_shape), const_view(v, v_shape),
                             const_view(probs, probs_shape), view(scratch, probs_shape), scale[0],
                             c.dropout, key);
  GradCheckResult result = check_gradients(objective, {{"q", q.data(), dq.data(), q_shape.numel()},
                                                       {"k", k.data(), dk.data(), k_shape.numel()},
                                                       {"v", v.data(), dv.data(), v_shape.numel()},
                                                       {"scale", scale.data(), dscale.data(), 1}});
  EXPECT_TRUE(result.passed) << result.report;
}

const AttentionShape kShapes[] = {
    {1, 1, 1, 1, 1, 1},    // the smallest case
    {2, 2, 3, 5, 4, 3},    // T < S, d_k != d_v
    {1, 3, 7, 7, 2, 5},    // T = S, d_v > d_k
    {2, 1, 7, 3, 3, 1},    // T > S, d_v = 1
    {2, 2, 19, 37, 8, 8},  // rows longer than a vector (float rows run 8 or 16 lanes + a tail)
    // One query (decoding's dot-product path when there is no dropout), widths with vector tails.
    {3, 2, 1, 37, 24, 20},
    {2, 3, 1, 5, 8, 3},
};
const char* kScales[] = {"rsqrt_dk", "none", "inv_dk", "0.5", "learned"};
const MaskKind kMasks[] = {MaskKind::kNone, MaskKind::kPadding, MaskKind::kCausal,
                           MaskKind::kCausalOffset, MaskKind::kPaddingCausal};

// Every shape with every mask (scales cycling through the modes), then dropout cases.
std::vector<AttentionCase> attention_cases() {
  std::vector<AttentionCase> cases;
  int index = 0;
  for (const AttentionShape& shape : kShapes) {
    for (MaskKind mask : kMasks) cases.push_back({shape, mask, kScales[index++ % 5], 0.0f});
  }
  for (const char* scale : kScales) {
    cases.push_back({kShapes[1], MaskKind::kNone, scale, 0.0f});
    cases.push_back({kShapes[1], MaskKind::kPaddingCausal, scale, 0.25f});
  }
  for (const AttentionShape& shape : kShapes) {
    cases.push_back({shape, MaskKind::kPadding, "learned", 0.3f});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionGradTest, ::testing::ValuesIn(attention_cases()),
                         case_name);

}  // namespace
}  // namespace attnlab::test
