// Attention masks as exact invariants: hidden keys influence nothing (compared bit for bit), a
// query with every key hidden gets zeros, and causal attention with query_offset reproduces the
// matching rows of full causal attention (incremental decoding).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/tensor_testing.h"
#include "core/ops/ops.h"
#include "core/util/rng.h"

namespace attnlab::test {
namespace {

using ops::attention_backward;
using ops::attention_forward;
using ops::AttentionMask;

// One attention problem in double with every buffer it needs.
struct AttentionProblem {
  int64_t b, h, t, s, kw, vw;
  std::vector<double> q, k, v, dout, out, probs, dq, dk, dv, scratch;
  double dscale = 0.0;

  AttentionProblem(int64_t batch, int64_t heads, int64_t queries, int64_t keys, int64_t key_width,
                   int64_t value_width, uint64_t seed)
      : b(batch), h(heads), t(queries), s(keys), kw(key_width), vw(value_width) {
    q = random_uniform(b * h * t * kw, seed);
    k = random_uniform(b * h * s * kw, seed + 1);
    v = random_uniform(b * h * s * vw, seed + 2);
    dout = random_uniform(b * h * t * vw, seed + 3);
  }
  Shape q_shape() const { return Shape({b, h, t, kw}); }
  Shape k_shape() const { return Shape({b, h, s, kw}); }
  Shape v_shape() const { return Shape({b, h, s, vw}); }
  Shape out_shape() const { return Shape({b, h, t, vw}); }
  Shape probs_shape() const { return Shape({b, h, t, s}); }

  void run(const AttentionMask& mask, double scale, float dropout = 0.0f, uint64_t key = 0) {
    out.assign(static_cast<size_t>(out_shape().numel()), 0.0);
    probs.assign(static_cast<size_t>(probs_shape().numel()), 0.0);
    attention_forward<double>(view(out, out_shape()), view(probs, probs_shape()),
                              const_view(q, q_shape()), const_view(k, k_shape()),
                              const_view(v, v_shape()), mask, scale, dropout, key);
    dq.assign(q.size(), 0.0);
    dk.assign(k.size(), 0.0);
    dv.assign(v.size(), 0.0);
    scratch.assign(probs.size(), 0.0);
    dscale = 0.0;
    attention_backward<double>(view(dq, q_shape()), view(dk, k_shape()), view(dv, v_shape()),
                               &dscale, const_view(dout, out_shape()), const_view(q, q_shape()),
                               const_view(k, k_shape()), const_view(v, v_shape()),
                               const_view(probs, probs_shape()), view(scratch, probs_shape()),
                               scale, dropout, key);
  }
  // Overwrites key s of batch row bi (every head) in k and v with new random values.
  void change_key(int64_t bi, int64_t si, uint64_t seed) {
    Rng rng(seed);
    for (int64_t hi = 0; hi < h; ++hi) {
      for (int64_t j = 0; j < kw; ++j)
        k[static_cast<size_t>(((bi * h + hi) * s + si) * kw + j)] = rng.uniform(-10, 10);
      for (int64_t j = 0; j < vw; ++j)
        v[static_cast<size_t>(((bi * h + hi) * s + si) * vw + j)] = rng.uniform(-10, 10);
    }
  }
};

TEST(AttentionMask, PaddedKeysChangeNothing) {
  // Batch row 0 pads keys 4 and 5, row 1 pads key 0; with and without attention dropout.
  for (float dropout : {0.0f, 0.2f}) {
    AttentionProblem problem(2, 3, 4, 6, 5, 3, 201);
    const std::vector<uint8_t> padding = {0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0};
    const AttentionMask mask{padding.data(), false, 0};
    problem.run(mask, 0.4, dropout, 99);
    const AttentionProblem before = problem;
    problem.change_key(0, 4, 1);
    problem.change_key(0, 5, 2);
    problem.change_key(1, 0, 3);
    problem.run(mask, 0.4, dropout, 99);
    EXPECT_TRUE(bitwise_equal(problem.out, before.out));
    EXPECT_TRUE(bitwise_equal(problem.probs, before.probs));
    EXPECT_TRUE(bitwise_equal(problem.dq, before.dq));
    EXPECT_EQ(problem.dscale, before.dscale);
    // Padded keys and values receive exactly zero gradient.
    for (int64_t bi = 0; bi < 2; ++bi) {
      for (int64_t hi = 0; hi < 3; ++hi) {
        for (int64_t si = 0; si < 6; ++si) {
          if (padding[static_cast<size_t>(bi * 6 + si)] == 0) continue;
          for (int64_t j = 0; j < 5; ++j) {
            EXPECT_EQ(problem.dk[static_cast<size_t>(((bi * 3 + hi) * 6 + si) * 5 + j)], 0.0);
          }
          for (int64_t j = 0; j < 3; ++j) {
            EXPECT_EQ(problem.dv[static_cast<size_t>(((bi * 3 + hi) * 6 + si) * 3 + j)], 0.0);
          }
        }
      }
    }
  }
}

TEST(AttentionMask, ChangingAVisibleKeyChangesTheOutput) {
  // The counterpart of the invariants: the same change to an unpadded key is seen.
  AttentionProblem problem(2, 3, 4, 6, 5, 3, 201);
  const std::vector<uint8_t> padding = {0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0};
  problem.run(AttentionMask{padding.data(), false, 0}, 0.4);
  const std::vector<double> before = problem.out;
  problem.change_key(0, 3, 1);
  problem.run(AttentionMask{padding.data(), false, 0}, 0.4);
  EXPECT_FALSE(bitwise_equal(problem.out, before));
}

TEST(AttentionMask, FutureKeysChangeNoEarlierRow) {
  // Causal, T = S = 6 with query_offset 0, and T = 3 queries at positions 3..5 of S = 6 keys.
  for (int64_t offset : {0, 3}) {
    const int64_t queries = 6 - offset;
    for (int64_t future = 1; future < 6; ++future) {
      AttentionProblem problem(2, 2, queries, 6, 4, 3, 301);
      const AttentionMask mask{nullptr, true, offset};
      problem.run(mask, 0.5);
      const std::vector<double> before = problem.out;
      problem.change_key(0, future, 7);
      problem.change_key(1, future, 8);
      problem.run(mask, 0.5);
      // Query row t (position t + offset) sees keys s <= t + offset.
      for (int64_t pair = 0; pair < 4; ++pair) {
        for (int64_t t = 0; t < queries; ++t) {
          const size_t row = static_cast<size_t>((pair * queries + t) * 3);
          const std::vector<double> now(problem.out.begin() + row, problem.out.begin() + row + 3);
          const std::vector<double> old(before.begin() + row, before.begin() + row + 3);
          if (t + offset < future) {
            EXPECT_TRUE(bitwise_equal(now, old))
                << "offset " << offset << " key " << future << " row " << t;
          } else {
            EXPECT_FALSE(bitwise_equal(now, old))
                << "offset " << offset << " key " << future << " row " << t;
          }
        }
      }
    }
  }
}

TEST(AttentionMask, QueryOffsetMatchesFullCausalRows) {
  // Incremental decoding: the last 3 of 7 queries with query_offset 4 equal rows 4..6 of the full
  // causal attention (same keys). Different GEMM sizes, so equal to round-off, not bitwise.
  AttentionProblem full(2, 2, 7, 7, 4, 5, 401);
  full.run(AttentionMask{nullptr, true, 0}, 0.5);
  AttentionProblem tail(2, 2, 3, 7, 4, 5, 401);
  tail.k = full.k;
  tail.v = full.v;
  for (int64_t pair = 0; pair < 4; ++pair) {
    for (int64_t t = 0; t < 3; ++t) {
      for (int64_t j = 0; j < 4; ++j) {
        tail.q[static_cast<size_t>((pair * 3 + t) * 4 + j)] =
            full.q[static_cast<size_t>((pair * 7 + t + 4) * 4 + j)];
      }
    }
  }
  tail.run(AttentionMask{nullptr, true, 4}, 0.5);
  for (int64_t pair = 0; pair < 4; ++pair) {
    for (int64_t t = 0; t < 3; ++t) {
      for (int64_t j = 0; j < 5; ++j) {
        EXPECT_NEAR(tail.out[static_cast<size_t>((pair * 3 + t) * 5 + j)],
                    full.out[static_cast<size_t>((pair * 7 + t + 4) * 5 + j)], 1e-14);
      }
    }
  }
}

TEST(AttentionMask, EveryKeyHiddenGivesZerosAndZeroGradients) {
  // Batch row 1 is all padding: its outputs and all its gradients are exactly 0 (no NaN).
  AttentionProblem problem(2, 2, 3, 4, 3, 2, 501);
  const std::vector<uint8_t> padding = {0, 0, 1, 0, 1, 1, 1, 1};
  problem.run(AttentionMask{padding.data(), true, 0}, 1.0);
  const int64_t half_out = 2 * 3 * 2, half_q = 2 * 3 * 3, half_k = 2 * 4 * 3, half_v = 2 * 4 * 2;
  for (int64_t i = 0; i < half_out; ++i) {
    EXPECT_EQ(problem.out[static_cast<size_t>(half_out + i)], 0.0);
  }
  for (int64_t i = 0; i < half_q; ++i) EXPECT_EQ(problem.dq[static_cast<size_t>(half_q + i)], 0.0);
  for (int64_t i = 0; i < half_k; ++i) EXPECT_EQ(problem.dk[static_cast<size_t>(half_k + i)], 0.0);
  for (int64_t i = 0; i < half_v; ++i) EXPECT_EQ(problem.dv[static_cast<size_t>(half_v + i)], 0.0);
  EXPECT_TRUE(std::isfinite(problem.dscale));
}

TEST(AttentionDropout, SameKeySameOutputOtherKeyOtherOutput) {
  AttentionProblem problem(1, 2, 5, 6, 3, 4, 601);
  problem.run(AttentionMask{}, 0.5, 0.3f, 10);
  const std::vector<double> first = problem.out;
  problem.run(AttentionMask{}, 0.5, 0.3f, 10);
  EXPECT_TRUE(bitwise_equal(problem.out, first));
  problem.run(AttentionMask{}, 0.5, 0.3f, 11);
  EXPECT_FALSE(bitwise_equal(problem.out, first));
}

}  // namespace
}  // namespace attnlab::test
