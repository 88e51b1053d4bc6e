// Threaded op paths (inputs above kParallelMinElements) agree with the same op on one thread: bit
// for bit where rows are independent, to round-off where OpenMP reduces a sum.
#include <gtest/gtest.h>
#include <omp.h>

#include <functional>
#include <vector>

#include "common/tensor_testing.h"
#include "core/ops/ops.h"
#include "core/util/rng.h"

namespace attnlab::test {
namespace {

using ops::AttentionMask;

// Runs `body` with one thread and then with two, restoring the thread count afterwards.
void with_one_then_two_threads(const std::function<void(int)>& body) {
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    body(threads);
  }
  omp_set_num_threads(saved);
}

TEST(Parallel, LayerNormMatchesOneThread) {
  const int64_t m = 512, d = 128;
  static_assert(512 * 128 >= ops::kParallelMinElements, "large enough to thread");
  const std::vector<double> inp = random_uniform(m * d, 131, -2, 2),
                            weight = random_uniform(d, 132), bias = random_uniform(d, 133),
                            dout = random_uniform(m * d, 134);
  std::vector<std::vector<double>> results[2];
  with_one_then_two_threads([&](int threads) {
    std::vector<double> out(m * d), mean(m), rstd(m), dinp(m * d), dweight(d), dbias(d);
    ops::layernorm_forward<double>(view(out, {m, d}), view(mean, {m}), view(rstd, {m}),
                                   const_view(inp, {m, d}), const_view(weight, {d}),
                                   const_view(bias, {d}));
    ops::layernorm_backward<double>(view(dinp, {m, d}), view(dweight, {d}), view(dbias, {d}),
                                    const_view(dout, {m, d}), const_view(inp, {m, d}),
                                    const_view(weight, {d}), const_view(mean, {m}),
                                    const_view(rstd, {m}));
    results[threads - 1] = {out, mean, rstd, dinp, dweight, dbias};
  });
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TRUE(bitwise_equal(results[0][i], results[1][i])) << "result " << i;
  }
}

TEST(Parallel, AttentionMatchesOneThread) {
  // B*H*T*S = 4*4*64*64 = 65536, with padding, the causal mask and attention dropout.
  const int64_t b = 4, h = 4, t = 64, s = 64, kw = 8, vw = 6;
  const Shape q_shape({b, h, t, kw}), k_shape({b, h, s, kw}), v_shape({b, h, s, vw}),
      out_shape({b, h, t, vw}), probs_shape({b, h, t, s});
  const std::vector<double> q = random_uniform(q_shape.numel(), 141),
                            k = random_uniform(k_shape.numel(), 142),
                            v = random_uniform(v_shape.numel(), 143),
                            dout = random_uniform(out_shape.numel(), 144);
  std::vector<uint8_t> padding(static_cast<size_t>(b * s), 0);
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t si = s - 5 * bi; si < s; ++si) padding[static_cast<size_t>(bi * s + si)] = 1;
  }
  const AttentionMask mask{padding.data(), true, 0};
  std::vector<std::vector<double>> results[2];
  with_one_then_two_threads([&](int threads) {
    std::vector<double> out(out_shape.numel()), probs(probs_shape.numel()), dq(q.size()),
        dk(k.size()), dv(v.size()), scratch(probs.size()), dscale(1, 0.0);
    ops::attention_forward<double>(view(out, out_shape), view(probs, probs_shape),
                                   const_view(q, q_shape), const_view(k, k_shape),
                                   const_view(v, v_shape), mask, 0.3, 0.1f, rng_key(8));
    ops::attention_backward<double>(view(dq, q_shape), view(dk, k_shape), view(dv, v_shape),
                                    dscale.data(), const_view(dout, out_shape),
                                    const_view(q, q_shape), const_view(k, k_shape),
                                    const_view(v, v_shape), const_view(probs, probs_shape),
                                    view(scratch, probs_shape), 0.3, 0.1f, rng_key(8));
    results[threads - 1] = {out, probs, dq, dk, dv, dscale};
  });
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TRUE(bitwise_equal(results[0][i], results[1][i])) << "result " << i;
  }
}

TEST(Parallel, CrossEntropyMatchesOneThread) {
  const int64_t m = 64, n = 1024;
  const std::vector<double> logits = random_uniform(m * n, 151, -4, 4);
  std::vector<int32_t> targets(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r)
    targets[static_cast<size_t>(r)] = static_cast<int32_t>((r * 13 + 1) % n);
  targets[5] = 0;  // a pad row
  std::vector<double> log_probs[2], dlogits[2];
  ops::LossSums sums[2];
  with_one_then_two_threads([&](int threads) {
    const int i = threads - 1;
    log_probs[i].resize(static_cast<size_t>(m * n));
    dlogits[i].resize(static_cast<size_t>(m * n));
    sums[i] = ops::cross_entropy_forward<double>(
        view(log_probs[i], {m, n}), const_view(logits, {m, n}), targets.data(), 0.1f, 0);
    ops::cross_entropy_backward<double>(view(dlogits[i], {m, n}), 1.0,
                                        const_view(log_probs[i], {m, n}), targets.data(), 0.1f, 0);
  });
  EXPECT_TRUE(bitwise_equal(log_probs[0], log_probs[1]));
  EXPECT_TRUE(bitwise_equal(dlogits[0], dlogits[1]));
  // The loss is an OpenMP reduction: the summation order depends on the thread count.
  EXPECT_NEAR(sums[1].loss, sums[0].loss, 1e-12 * sums[0].loss);
  EXPECT_NEAR(sums[1].nll, sums[0].nll, 1e-12 * sums[0].nll);
  EXPECT_EQ(sums[1].tokens, sums[0].tokens);
  EXPECT_EQ(sums[0].tokens, m - 1);
}

TEST(Parallel, LinearBiasAndHeadsMatchOneThread) {
  // 512 rows of 160 features: the bias broadcast, the bias gradient (odd column blocks) and the
  // heads permutations (B=8, T=64, H=5, K=32) all run threaded at two threads.
  const int64_t b = 8, t = 64, heads = 5, width = 32, rows = b * t, in = 24, out = heads * width;
  static_assert(8 * 64 * 5 * 32 >= ops::kParallelMinElements, "large enough to thread");
  const std::vector<double> inp = random_uniform(rows * in, 151),
                            weight = random_uniform(out * in, 152), bias = random_uniform(out, 153),
                            dout = random_uniform(rows * out, 154);
  std::vector<std::vector<double>> results[2];
  with_one_then_two_threads([&](int threads) {
    std::vector<double> y(rows * out), dinp(rows * in), dweight(out * in, 0.0), dbias(out, 0.25),
        split(rows * out), combined(rows * out);
    ops::linear_forward<double>(view(y, {rows, out}), const_view(inp, {rows, in}),
                                const_view(weight, {out, in}), const_view(bias, {out}));
    ops::linear_backward<double>(view(dinp, {rows, in}), view(dweight, {out, in}),
                                 view(dbias, {out}), const_view(dout, {rows, out}),
                                 const_view(inp, {rows, in}), const_view(weight, {out, in}), false);
    ops::split_heads<double>(view(split, {b, heads, t, width}), const_view(y, {b, t, out}));
    ops::combine_heads<double>(view(combined, {b, t, out}),
                               const_view(split, {b, heads, t, width}));
    results[threads - 1] = {y, dinp, dweight, dbias, split, combined};
  });
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TRUE(bitwise_equal(results[0][i], results[1][i])) << "result " << i;
  }
  EXPECT_TRUE(bitwise_equal(results[1][5], results[1][0])) << "combine_heads undoes split_heads";
  // The bias gradient is the column sums of dout on top of the 0.25 it held.
  for (int64_t o = 0; o < out; o += 37) {
    double sum = 0.25;
    for (int64_t m = 0; m < rows; ++m) sum += dout[static_cast<size_t>(m * out + o)];
    EXPECT_NEAR(results[1][3][static_cast<size_t>(o)], sum, 1e-12) << "column " << o;
  }
}

}  // namespace
}  // namespace attnlab::test
