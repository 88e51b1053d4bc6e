// bf16 products (oneDNN) against a double three-loop reference on odd shapes, padded leading
// dimensions, all four transpositions, alpha != 1 and beta in {0, 1}; the precision switch of
// gemm<float>; and the CPU check that refuses bf16 where the CPU has no native bfloat16.
//
// Bound (derived in core/tensor/blas_bf16.cpp): with u = 2^-8 (bf16 keeps 8 significant bits)
//   |C - C_exact| <= |alpha| * (2u + u^2 + (K + 2) * 2^-24) * sum_p |a_ip||b_pj|
//                    + 2^-23 * (|alpha * (AB)_ij| + |beta * C0_ij|)
// and, so that a silent fp32 path cannot pass, some element must miss C_exact by more than
// fp32's own bound (K + 2) * 2^-24 * sum |a||b|.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/tensor/blas.h"
#include "core/util/check.h"

namespace attnlab {
namespace {

struct Case {
  int64_t m, n, k;
};

std::vector<float> random_matrix(int64_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = normal(rng);
  return values;
}

class Bf16Gemm : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = blas::bf16_unsupported_reason();
    if (!reason.empty()) GTEST_SKIP() << "bf16 products cannot run here: " << reason;
  }
};

// One product C = alpha op(A) op(B) + beta C0 against the double reference: every element within
// the bound above, the padding columns of C untouched. Returns whether some element missed by
// more than fp32's own bound.
bool check_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, const float* c0,
                   const float* c, int64_t ldc) {
  const double u = std::ldexp(1.0, -8);
  bool beyond_fp32 = false;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0.0, magnitude = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = ta ? a[p * lda + i] : a[i * lda + p];
        const double y = tb ? b[j * ldb + p] : b[p * ldb + j];
        exact += x * y;
        magnitude += std::fabs(x * y);
      }
      const double previous = beta * static_cast<double>(c0[i * ldc + j]);
      const double fp32_bound = (k + 2) * std::ldexp(1.0, -24) * magnitude;
      const double bound = std::fabs(alpha) * ((2 * u + u * u) * magnitude + fp32_bound) +
                           std::ldexp(1.0, -23) * (std::fabs(alpha * exact) + std::fabs(previous));
      const double error = std::fabs(c[i * ldc + j] - (alpha * exact + previous));
      EXPECT_LE(error, bound) << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta
                              << " tb=" << tb << " alpha=" << alpha << " beta=" << beta << " at ("
                              << i << "," << j << ")";
      if (error > bound) return beyond_fp32;
      if (error > std::fabs(alpha) * fp32_bound + 1e-30) beyond_fp32 = true;
    }
    for (int64_t j = n; j < ldc; ++j) EXPECT_EQ(c[i * ldc + j], c0[i * ldc + j]) << "padding";
  }
  return beyond_fp32;
}

TEST_F(Bf16Gemm, MatchesDoubleReferenceWithinTheBf16Bound) {
  std::mt19937 rng(7);
  for (const Case& shape :
       {Case{1, 1, 1}, Case{3, 5, 7}, Case{17, 33, 65}, Case{64, 48, 129}, Case{130, 9, 300}}) {
    for (int transposition = 0; transposition < 4; ++transposition) {
      for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.35f, 1.0f}}) {
        const bool ta = (transposition & 1) != 0, tb = (transposition & 2) != 0;
        const int64_t m = shape.m, n = shape.n, k = shape.k;
        // Stored shapes with 3 columns of padding, so leading dimensions exceed the widths.
        const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 3, ldc = n + 3;
        const std::vector<float> a = random_matrix((ta ? k : m) * lda, rng);
        const std::vector<float> b = random_matrix((tb ? n : k) * ldb, rng);
        const std::vector<float> c0 = random_matrix(m * ldc, rng);
        std::vector<float> c = c0;
        blas::gemm_bf16(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
        const bool beyond_fp32 = check_product(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb,
                                               beta, c0.data(), c.data(), ldc);
        if (k >= 7) {
          EXPECT_TRUE(beyond_fp32) << "no element of m=" << m << " n=" << n << " k=" << k
                                   << " misses by more than fp32 would: was it bf16?";
        }
      }
    }
  }
}

TEST_F(Bf16Gemm, StridedBatchIsOneCallWithinTheBoundForEveryMatrix) {
  // Attention's layout: per-head matrices a fixed stride apart, with gaps between them.
  std::mt19937 rng(11);
  const int64_t batch = 6, m = 13, n = 9, k = 17;
  for (int transposition = 0; transposition < 4; ++transposition) {
    const bool ta = (transposition & 1) != 0, tb = (transposition & 2) != 0;
    const int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 2;
    const int64_t stride_a = (ta ? k : m) * lda + 5, stride_b = (tb ? n : k) * ldb + 3;
    const int64_t stride_c = m * ldc + 4;
    const std::vector<float> a = random_matrix(batch * stride_a, rng);
    const std::vector<float> b = random_matrix(batch * stride_b, rng);
    const std::vector<float> c0 = random_matrix(batch * stride_c, rng);
    std::vector<float> c = c0;
    blas::set_precision(blas::Precision::kBf16);
    blas::gemm_strided_batched<float>(ta, tb, m, n, k, 0.5f, a.data(), lda, stride_a, b.data(), ldb,
                                      stride_b, 1.0f, c.data(), ldc, stride_c, batch);
    blas::set_precision(blas::Precision::kFp32);
    for (int64_t i = 0; i < batch; ++i) {
      EXPECT_TRUE(check_product(ta, tb, m, n, k, 0.5f, a.data() + i * stride_a, lda,
                                b.data() + i * stride_b, ldb, 1.0f, c0.data() + i * stride_c,
                                c.data() + i * stride_c, ldc))
          << "matrix " << i << " ta=" << ta << " tb=" << tb << " looks fp32";
      // The gaps between matrices are left alone.
      if (i + 1 < batch) {
        for (int64_t g = m * ldc; g < stride_c; ++g) {
          EXPECT_EQ(c[i * stride_c + g], c0[i * stride_c + g]) << "gap after matrix " << i;
        }
      }
    }
  }
}

TEST_F(Bf16Gemm, PrecisionSwitchRoutesFloatProductsButNotDouble) {
  std::mt19937 rng(3);
  const int64_t m = 9, n = 11, k = 40;
  const std::vector<float> a = random_matrix(m * k, rng), b = random_matrix(k * n, rng);
  std::vector<float> fp32(m * n), bf16(m * n), direct(m * n);
  blas::gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, fp32.data(), n);
  blas::set_precision(blas::Precision::kBf16);
  blas::gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, bf16.data(), n);
  const std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end());
  std::vector<double> dd(m * n), naive(m * n);
  blas::gemm<double>(false, false, m, n, k, 1.0, ad.data(), k, bd.data(), n, 0.0, dd.data(), n);
  blas::set_precision(blas::Precision::kFp32);
  blas::gemm_bf16(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, direct.data(), n);
  blas::gemm_naive<double>(false, false, m, n, k, 1.0, ad.data(), k, bd.data(), n, 0.0,
                           naive.data(), n);
  EXPECT_EQ(bf16, direct);  // the switch reaches the bf16 product itself
  EXPECT_NE(bf16, fp32);
  for (int64_t i = 0; i < m * n; ++i) EXPECT_NEAR(dd[i], naive[i], 1e-12);
}

TEST(Bf16Support, NamesWhatTheCpuLacksAndHas) {
  EXPECT_EQ(blas::bf16_unsupported_reason("fpu sse2 avx2 fma avx512f avx512_bf16 avx512vl"), "");
  EXPECT_EQ(blas::bf16_unsupported_reason("fpu sse2 amx_bf16 amx_tile"), "");
  const std::string zen3 = blas::bf16_unsupported_reason("fpu sse2 avx avx2 fma bmi2");
  EXPECT_NE(zen3.find("neither avx512_bf16 nor amx_bf16"), std::string::npos) << zen3;
  EXPECT_NE(zen3.find("avx2 fma"), std::string::npos) << zen3;
  // A flag is a whole word: avx512_bf16x (made up) is not avx512_bf16.
  EXPECT_NE(blas::bf16_unsupported_reason("avx512f avx512_bf16x"), "");
}

TEST(Bf16Support, PrecisionNamesRoundTrip) {
  EXPECT_EQ(blas::precision_names().parse("bf16"), blas::Precision::kBf16);
  EXPECT_EQ(blas::precision_names().name(blas::precision_names().parse("fp32")), "fp32");
  EXPECT_THROW(blas::precision_names().parse("fp16"), Error);
  EXPECT_FALSE(blas::precision_names().find("fp16").has_value());
  EXPECT_EQ(blas::precision_names().choices(), "fp32 | bf16");
}

}  // namespace
}  // namespace attnlab
