// Whatever OpenBLAS kernel this process runs (make test exports cluster/env.sh's OPENBLAS_CORETYPE,
// attnlab's launchers do the same): float GEMMs of the model's shapes and a small float forward
// pass (linear, relu, linear, residual, layer norm, vocabulary projection, label-smoothed cross
// entropy) agree with three-loop references computed in double. A kernel that misreads the CPU
// or mis-blocks a shape gives errors of order 1, far above the bounds here.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/tensor_testing.h"
#include "core/ops/ops.h"
#include "core/tensor/blas.h"

namespace attnlab::test {
namespace {

struct GemmShape {
  const char* name;
  bool trans_a, trans_b;
  int64_t m, n, k;
};

// op(A) (M,K) op(B) (K,N) as the model calls them (row-major): forward inp W^T (trans_b), the
// input gradient dout W, the weight gradient dout^T inp (trans_a). Rows are cut to 32 where the
// model has 2048 so that the double reference stays fast; the other dimensions are the model's.
std::vector<GemmShape> model_shapes() {
  return {{"tiny_projection_fwd", false, true, 32, 128, 128},
          {"tiny_fc1_fwd", false, true, 32, 512, 128},
          {"tiny_fc2_dinp", false, false, 32, 512, 128},
          {"tiny_logits_fwd", false, true, 32, 8000, 128},
          {"tiny_logits_dweight", true, false, 8000, 128, 32},
          {"base_fc1_fwd", false, true, 32, 2048, 512},
          {"base_fc2_fwd", false, true, 32, 512, 2048},
          {"base_fc1_dweight", true, false, 2048, 512, 32}};
}

// C = op(A) op(B) in double by three loops; abs_sum[i,j] = sum_k |op(A)_ik op(B)_kj|.
void reference_gemm(const GemmShape& s, const std::vector<float>& a, const std::vector<float>& b,
                    std::vector<double>& c, std::vector<double>& abs_sum) {
  const int64_t lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
  c.assign(static_cast<size_t>(s.m * s.n), 0.0);
  abs_sum.assign(c.size(), 0.0);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t p = 0; p < s.k; ++p) {
        const double x = a[static_cast<size_t>(s.trans_a ? p * lda + i : i * lda + p)];
        const double y = b[static_cast<size_t>(s.trans_b ? j * ldb + p : p * ldb + j)];
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      c[static_cast<size_t>(i * s.n + j)] = sum;
      abs_sum[static_cast<size_t>(i * s.n + j)] = magnitude;
    }
  }
}

TEST(KernelReference, ModelShapedGemmsMatchThreeLoopsInDouble) {
  RecordProperty("openblas_core", blas::core_name());
  uint64_t seed = 401;
  for (const GemmShape& s : model_shapes()) {
    const std::vector<float> a = convert<float>(random_uniform(s.m * s.k, ++seed));
    const std::vector<float> b = convert<float>(random_uniform(s.k * s.n, ++seed));
    std::vector<float> c(static_cast<size_t>(s.m * s.n), 0.0f);
    blas::gemm<float>(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a.data(), s.trans_a ? s.m : s.k,
                      b.data(), s.trans_b ? s.k : s.n, 0.0f, c.data(), s.n);
    std::vector<double> expected, abs_sum;
    reference_gemm(s, a, b, expected, abs_sum);
    // Float summation of k products: |error| <= k u sum|a b| (u = 2^-24), the classic bound.
    const double unit = std::ldexp(1.0, -24);
    double worst_ratio = 0.0;
    for (size_t i = 0; i < c.size(); ++i) {
      const double bound = static_cast<double>(s.k + 2) * unit * abs_sum[i] + 1e-30;
      worst_ratio = std::max(worst_ratio, std::fabs(c[i] - expected[i]) / bound);
    }
    EXPECT_LE(worst_ratio, 1.0) << s.name << " (" << s.m << "x" << s.n << "x" << s.k
                                << ") under OpenBLAS core " << blas::core_name();
  }
}

// The forward pass in double by loops: x + fc2(relu(fc1(x))) -> layer norm -> logits -> loss.
struct Reference {
  std::vector<double> logits;
  double loss = 0.0;
};

Reference reference_forward(const std::vector<float>& x, const std::vector<float>& w1,
                            const std::vector<float>& b1, const std::vector<float>& w2,
                            const std::vector<float>& b2, const std::vector<float>& embedding,
                            const std::vector<int32_t>& targets, int64_t m, int64_t d, int64_t f,
                            int64_t n, double eps) {
  auto linear = [](const std::vector<double>& inp, const std::vector<float>& w, const float* bias,
                   int64_t rows, int64_t in, int64_t out) {
    std::vector<double> y(static_cast<size_t>(rows * out));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < out; ++o) {
        double sum = bias != nullptr ? bias[o] : 0.0;
        for (int64_t i = 0; i < in; ++i) {
          sum += inp[static_cast<size_t>(r * in + i)] * w[static_cast<size_t>(o * in + i)];
        }
        y[static_cast<size_t>(r * out + o)] = sum;
      }
    }
    return y;
  };
  const std::vector<double> xd(x.begin(), x.end());
  std::vector<double> hidden = linear(xd, w1, b1.data(), m, d, f);
  for (double& h : hidden) h = h > 0.0 ? h : 0.0;
  std::vector<double> sum = linear(hidden, w2, b2.data(), m, f, d);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += xd[i];
  std::vector<double> normed(sum.size());
  for (int64_t r = 0; r < m; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < d; ++j) mean += sum[static_cast<size_t>(r * d + j)] / d;
    for (int64_t j = 0; j < d; ++j) {
      const double c = sum[static_cast<size_t>(r * d + j)] - mean;
      var += c * c / d;
    }
    for (int64_t j = 0; j < d; ++j) {
      normed[static_cast<size_t>(r * d + j)] =
          (sum[static_cast<size_t>(r * d + j)] - mean) / std::sqrt(var + 1e-5);
    }
  }
  Reference ref;
  ref.logits = linear(normed, embedding, nullptr, m, d, n);
  for (int64_t r = 0; r < m; ++r) {
    const double* z = ref.logits.data() + r * n;
    double max_z = z[0], total = 0.0;
    for (int64_t j = 1; j < n; ++j) max_z = std::max(max_z, z[j]);
    for (int64_t j = 0; j < n; ++j) total += std::exp(z[j] - max_z);
    const double log_sum = max_z + std::log(total);
    for (int64_t j = 0; j < n; ++j) {
      const double q = j == targets[static_cast<size_t>(r)] ? 1.0 - eps : eps / (n - 1);
      ref.loss -= q * (z[j] - log_sum);
    }
  }
  return ref;
}

TEST(KernelReference, SmallForwardPassMatchesLoopsInDouble) {
  const int64_t m = 48, d = 128, f = 512, n = 1000;
  const float eps = 0.1f;
  const std::vector<float> x = convert<float>(random_uniform(m * d, 411, -1, 1));
  const std::vector<float> w1 = convert<float>(random_uniform(f * d, 412, -0.09, 0.09));
  const std::vector<float> b1 = convert<float>(random_uniform(f, 413, -0.1, 0.1));
  const std::vector<float> w2 = convert<float>(random_uniform(d * f, 414, -0.045, 0.045));
  const std::vector<float> b2 = convert<float>(random_uniform(d, 415, -0.1, 0.1));
  const std::vector<float> embedding = convert<float>(random_uniform(n * d, 416, -0.3, 0.3));
  const std::vector<float> ones(static_cast<size_t>(d), 1.0f), zeros(static_cast<size_t>(d), 0.0f);
  std::vector<int32_t> targets(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r)
    targets[static_cast<size_t>(r)] = static_cast<int32_t>(r * 19 % n);

  std::vector<float> hidden(m * f), sub(m * d), sum(m * d), normed(m * d), mean(m), rstd(m),
      logits(m * n), log_probs(m * n);
  ops::linear_forward<float>(view(hidden, {m, f}), const_view(x, {m, d}), const_view(w1, {f, d}),
                             const_view(b1, {f}));
  ops::relu_forward<float>(view(hidden, {m, f}), const_view(hidden, {m, f}));
  ops::linear_forward<float>(view(sub, {m, d}), const_view(hidden, {m, f}), const_view(w2, {d, f}),
                             const_view(b2, {d}));
  ops::residual_forward<float>(view(sum, {m, d}), const_view(x, {m, d}), const_view(sub, {m, d}));
  ops::layernorm_forward<float>(view(normed, {m, d}), view(mean, {m}), view(rstd, {m}),
                                const_view(sum, {m, d}), const_view(ones, {d}),
                                const_view(zeros, {d}));
  ops::linear_forward<float>(view(logits, {m, n}), const_view(normed, {m, d}),
                             const_view(embedding, {n, d}), TensorView<const float>());
  const ops::LossSums sums = ops::cross_entropy_forward<float>(
      view(log_probs, {m, n}), const_view(logits, {m, n}), targets.data(), eps, -1);

  const Reference ref = reference_forward(x, w1, b1, w2, b2, embedding, targets, m, d, f, n,
                                          static_cast<double>(eps));
  // Logits are O(1) sums of 128 products after three float layers: 1e-4 is ~100x the float
  // round-off and ~1e4x below what a wrong kernel gives.
  EXPECT_LT(max_scaled_difference(logits, ref.logits), 1e-4)
      << "under OpenBLAS core " << blas::core_name();
  EXPECT_NEAR(sums.loss, ref.loss, 1e-5 * ref.loss) << "under OpenBLAS core " << blas::core_name();
  EXPECT_EQ(sums.tokens, m);
}

}  // namespace
}  // namespace attnlab::test
