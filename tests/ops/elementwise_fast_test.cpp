// The vectorised, threaded elementwise paths against their one-line definitions on tensors large
// enough to take the parallel branch: cross entropy at a real vocabulary (float against double,
// one thread against two), dropout's integer keep test against uniform_at, relu and residual.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/tensor_testing.h"
#include "core/ops/ops.h"
#include "core/util/rng.h"

namespace attnlab::test {
namespace {

// An odd size above the threading threshold, so the last chunk and vector tail are partial.
constexpr int64_t kLarge = 3 * ops::kParallelMinElements + 37;

class OneAndTwoThreads : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    saved_ = omp_get_max_threads();
    omp_set_num_threads(GetParam());
  }
  void TearDown() override { omp_set_num_threads(saved_); }

 private:
  int saved_ = 1;
};

TEST_P(OneAndTwoThreads, CrossEntropyFloatAtAVocabularyOf8000MatchesDouble) {
  // 24 rows x 8000 logits spread over [-12, 12] (probabilities down to e^-24 of the largest):
  // the float path (exp_poly, float block sums) against the double path (libm exp, double sums).
  const int64_t m = 24, n = 8000;
  const float eps = 0.1f;
  // The double path reads the same (float-representable) logits.
  const std::vector<float> logits_f = convert<float>(random_uniform(m * n, 301, -12, 12));
  const std::vector<double> logits = convert<double>(logits_f);
  std::vector<int32_t> targets(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) targets[static_cast<size_t>(r)] = r % 5 == 4 ? 0 : 37 * r + 3;
  std::vector<double> log_probs(m * n), dlogits(m * n);
  std::vector<float> log_probs_f(m * n), dlogits_f(m * n);
  const ops::LossSums sums = ops::cross_entropy_forward<double>(
      view(log_probs, {m, n}), const_view(logits, {m, n}), targets.data(), eps, 0);
  const ops::LossSums sums_f = ops::cross_entropy_forward<float>(
      view(log_probs_f, {m, n}), const_view(logits_f, {m, n}), targets.data(), eps, 0);
  EXPECT_EQ(sums_f.tokens, sums.tokens);
  EXPECT_NEAR(sums_f.loss, sums.loss, 1e-6 * sums.loss);
  EXPECT_NEAR(sums_f.nll, sums.nll, 1e-6 * sums.nll);
  // log p reaches -30: float keeps it to a few ulp of the (float) logit and log-sum-exp.
  EXPECT_LT(max_scaled_difference(log_probs_f, log_probs), 1e-5);
  ops::cross_entropy_backward<double>(view(dlogits, {m, n}), 0.5, const_view(log_probs, {m, n}),
                                      targets.data(), eps, 0);
  ops::cross_entropy_backward<float>(view(dlogits_f, {m, n}), 0.5f, const_view(log_probs_f, {m, n}),
                                     targets.data(), eps, 0);
  // Gradients are probabilities (at most 1) scaled by 0.5: compare absolutely.
  double worst = 0.0;
  for (size_t i = 0; i < dlogits.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(dlogits_f[i]) - dlogits[i]));
  }
  EXPECT_LT(worst, 1e-6);
  // Every row's gradient sums to dloss * (1 - 1) = 0 (pad rows are all zeros).
  for (int64_t r = 0; r < m; ++r) {
    double row_sum = 0.0;
    for (int64_t j = 0; j < n; ++j) row_sum += dlogits_f[static_cast<size_t>(r * n + j)];
    EXPECT_NEAR(row_sum, 0.0, 1e-5) << "row " << r;
  }
}

TEST_P(OneAndTwoThreads, DropoutIsUniformAtOfTheIndexAtAnyProbability) {
  const std::vector<float> inp = convert<float>(random_uniform(kLarge, 302, -2, 2));
  const uint64_t key = rng_key(11, 2, 3);
  // 1/3 and 0.7 are not multiples of 2^-24: the integer threshold must round up exactly as the
  // float comparison does. At p = uniform_at(key, i) element i sits on the boundary (kept: >=);
  // one float above it element i must go, and below 0.5 that float is not a multiple of 2^-24
  // (a threshold rounded down would keep the element).
  uint64_t below_half = 0;
  while (uniform_at(key, below_half) >= 0.5f) ++below_half;
  const float boundary = uniform_at(key, below_half);
  for (float p :
       {0.1f, 0.5f, 1.0f / 3.0f, 0.7f, 5.96e-8f, boundary, std::nextafter(boundary, 1.0f)}) {
    std::vector<float> out(inp.size());
    ops::dropout_forward<float>(view(out, {kLarge}), const_view(inp, {kLarge}), p, key);
    const float keep_scale = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < kLarge; ++i) {
      const bool kept = uniform_at(key, static_cast<uint64_t>(i)) >= p;
      ASSERT_EQ(out[static_cast<size_t>(i)], kept ? inp[static_cast<size_t>(i)] * keep_scale : 0.0f)
          << "p " << p << " element " << i;
    }
  }
}

TEST_P(OneAndTwoThreads, ReluAndResidualFollowTheirDefinitions) {
  std::vector<double> x = random_uniform(kLarge, 303, -1, 1);
  x[5] = -0.0;
  x[6] = std::numeric_limits<double>::quiet_NaN();
  x[7] = std::numeric_limits<double>::infinity();
  const std::vector<double> dy = random_uniform(kLarge, 304, -1, 1);
  std::vector<double> y(x.size()), dx(x.size());
  ops::relu_forward<double>(view(y, {kLarge}), const_view(x, {kLarge}));
  ops::relu_backward<double>(view(dx, {kLarge}), const_view(dy, {kLarge}), const_view(y, {kLarge}));
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y[i], x[i] > 0.0 ? x[i] : 0.0) << i;
    ASSERT_FALSE(std::signbit(y[i])) << i;  // relu(-0) and relu(NaN) give +0
    ASSERT_EQ(dx[i], y[i] > 0.0 ? dy[i] : 0.0) << i;
  }
  // out aliasing the first summand, then the gradient accumulating into an existing value.
  std::vector<double> sum = x;
  ops::residual_forward<double>(view(sum, {kLarge}), const_view(sum, {kLarge}),
                                const_view(dy, {kLarge}));
  std::vector<double> da(x.size(), 1.5);
  ops::residual_backward<double>(view(da, {kLarge}), const_view(dy, {kLarge}));
  for (size_t i = 8; i < x.size(); ++i) {
    ASSERT_EQ(sum[i], x[i] + dy[i]) << i;
    ASSERT_EQ(da[i], 1.5 + dy[i]) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, OneAndTwoThreads, ::testing::Values(1, 2));

TEST(ElementwiseFast, ThreadCountDoesNotChangeLogProbsOrGradients) {
  // Rows are independent: one and two threads agree bit for bit on everything but the loss sum.
  const int64_t m = 16, n = 8000;
  const std::vector<float> logits = convert<float>(random_uniform(m * n, 305, -5, 5));
  std::vector<int32_t> targets(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) targets[static_cast<size_t>(r)] = 500 * r;
  std::vector<float> results[2][2];
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    std::vector<float> log_probs(m * n), dlogits(m * n);
    ops::cross_entropy_forward<float>(view(log_probs, {m, n}), const_view(logits, {m, n}),
                                      targets.data(), 0.1f, -1);
    ops::cross_entropy_backward<float>(view(dlogits, {m, n}), 1.0f, const_view(log_probs, {m, n}),
                                       targets.data(), 0.1f, -1);
    results[threads - 1][0] = log_probs;
    results[threads - 1][1] = dlogits;
  }
  omp_set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(results[0][0], results[1][0]));
  EXPECT_TRUE(bitwise_equal(results[0][1], results[1][1]));
}

}  // namespace
}  // namespace attnlab::test
