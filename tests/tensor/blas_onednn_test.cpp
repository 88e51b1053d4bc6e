// oneDNN's products against a double three-loop reference on odd shapes, padded leading
// dimensions, all four transpositions, alpha != 1 and beta in {0, 1}: bf16 operands, and fp32 ones
// (the engine decoding selects), in both with weights packed once (PackedWeights); the precision
// switch and the engine and packed-weight scopes of gemm<float>; and the CPU check that refuses
// bf16 where the CPU has no native bfloat16.
//
// Bound (derived in core/tensor/blas_onednn.cpp): with u = 2^-8 (bf16 keeps 8 significant bits)
//   |C - C_exact| <= |alpha| * (2u + u^2 + (K + 2) * 2^-24) * sum_p |a_ip||b_pj|
//                    + 2^-23 * (|alpha * (AB)_ij| + |beta * C0_ij|)
// and, so that a silent fp32 path cannot pass, some element must miss C_exact by more than
// fp32's own bound (K + 2) * 2^-24 * sum |a||b|. fp32 operands: the same bound with u = 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <random>
#include <vector>

#include "core/tensor/blas.h"
#include "core/util/check.h"
#include "tests/common/bf16_precision.h"
#include "tests/io/expect_error.h"

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

using test::Bf16PrecisionScope;

class Bf16Gemm : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = blas::bf16_unsupported_reason();
    if (!reason.empty()) GTEST_SKIP() << "bf16 products cannot run here: " << reason;
  }
};

// One product C = alpha op(A) op(B) + beta C0 against the double reference: every element within
// the bound above for operands rounded by at most u (bf16: 2^-8; fp32 operands: 0), the padding
// columns of C untouched. Returns whether some element missed by more than fp32's own bound.
bool check_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, const float* c0,
                   const float* c, int64_t ldc, double u = std::ldexp(1.0, -8)) {
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

// One product of a case: operands stored with 3 columns of padding, so leading dimensions exceed
// the widths.
struct Product {
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  std::vector<float> a, b, c0;
};

// Calls `check` on every shape in all four transpositions, with (alpha, beta) = (1, 0) and
// (0.35, 1).
template <typename Check>
void for_each_product(std::initializer_list<Case> shapes, uint32_t seed, Check check) {
  std::mt19937 rng(seed);
  for (const Case& shape : shapes) {
    for (int transposition = 0; transposition < 4; ++transposition) {
      for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.35f, 1.0f}}) {
        Product p{(transposition & 1) != 0,
                  (transposition & 2) != 0,
                  shape.m,
                  shape.n,
                  shape.k,
                  0,
                  0,
                  0,
                  alpha,
                  beta,
                  {},
                  {},
                  {}};
        p.lda = (p.ta ? p.m : p.k) + 3;
        p.ldb = (p.tb ? p.k : p.n) + 3;
        p.ldc = p.n + 3;
        p.a = random_matrix((p.ta ? p.k : p.m) * p.lda, rng);
        p.b = random_matrix((p.tb ? p.n : p.k) * p.ldb, rng);
        p.c0 = random_matrix(p.m * p.ldc, rng);
        check(p);
      }
    }
  }
}

TEST_F(Bf16Gemm, MatchesDoubleReferenceWithinTheBf16Bound) {
  for_each_product(
      {Case{1, 1, 1}, Case{3, 5, 7}, Case{17, 33, 65}, Case{64, 48, 129}, Case{130, 9, 300}}, 7,
      [](const Product& p) {
        std::vector<float> c = p.c0;
        blas::gemm_bf16(p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda, p.b.data(), p.ldb,
                        p.beta, c.data(), p.ldc);
        const bool beyond_fp32 =
            check_product(p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda, p.b.data(), p.ldb,
                          p.beta, p.c0.data(), c.data(), p.ldc);
        if (p.k >= 7) {
          EXPECT_TRUE(beyond_fp32) << "no element of m=" << p.m << " n=" << p.n << " k=" << p.k
                                   << " misses by more than fp32 would: was it bf16?";
        }
      });
}

// The operand rounding itself: a column of values times B = [1] gives each value rounded to bf16
// (the product by 1 and fp32 accumulation are exact). bf16 keeps 7 bits after the point, so near 1
// the step is 2^-7: exact halves go to the even neighbour, anything above half rounds up. The
// column is long enough to run the vectorised loop and its remainder.
TEST_F(Bf16Gemm, OperandsRoundToNearestEvenAndNaNStaysNaN) {
  const float step = std::ldexp(1.0f, -7), half = std::ldexp(1.0f, -8);
  struct Rounding {
    float value, expected;
  };
  const std::vector<Rounding> cases = {
      {1.0f, 1.0f},
      {1.0f + half, 1.0f},                                             // a tie: to even (1.0)
      {1.0f + step + half, 1.0f + 2 * step},                           // a tie: to even (1 + 2^-6)
      {1.0f + half + std::ldexp(1.0f, -20), 1.0f + step},              // just above half: up
      {1.0f + half - std::ldexp(1.0f, -20), 1.0f},                     // just below half: down
      {-(1.0f + step + half), -(1.0f + 2 * step)},                     // the sign is kept
      {std::ldexp(1.0f, -126) * 1.5f, std::ldexp(1.0f, -126) * 1.5f},  // the smallest normals
      {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()},
      {0.0f, 0.0f}};
  const int64_t repeats = 5;  // 45 rows
  std::vector<float> column;
  for (int64_t r = 0; r < repeats; ++r) {
    for (const Rounding& c : cases) column.push_back(c.value);
  }
  column.push_back(std::numeric_limits<float>::quiet_NaN());
  const int64_t rows = static_cast<int64_t>(column.size());
  const float one = 1.0f;
  std::vector<float> rounded(static_cast<size_t>(rows));
  blas::gemm_bf16(false, false, rows, 1, 1, 1.0f, column.data(), 1, &one, 1, 0.0f, rounded.data(),
                  1);
  for (int64_t i = 0; i + 1 < rows; ++i) {
    const Rounding& c = cases[static_cast<size_t>(i) % cases.size()];
    EXPECT_EQ(rounded[static_cast<size_t>(i)], c.expected) << "rounding " << c.value;
  }
  EXPECT_TRUE(std::isnan(rounded.back())) << "NaN must not round to infinity";
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

TEST_F(Bf16Gemm, OperandsLargeEnoughToRoundOnSeveralThreadsStayWithinTheBound) {
  // Above 2^18 operand elements the rounding is split over the threads in blocks of 16 rows of one
  // matrix; rows that are not a multiple of 16 end in a partial block. One product, then a batch.
  const int previous_threads = blas::threads();
  blas::set_threads(2);
  std::mt19937 rng(17);
  for (const bool ta : {false, true}) {
    const int64_t m = 521, n = 37, k = 509;
    const int64_t lda = (ta ? m : k) + 1, ldb = n, ldc = n;
    const std::vector<float> a = random_matrix((ta ? k : m) * lda, rng);
    const std::vector<float> b = random_matrix(k * ldb, rng);
    const std::vector<float> c0(m * ldc, 0.0f);
    std::vector<float> c = c0;
    blas::gemm_bf16(ta, false, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc);
    EXPECT_TRUE(check_product(ta, false, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                              c0.data(), c.data(), ldc))
        << "ta=" << ta << " looks fp32";
  }
  const int64_t batch = 4, m = 130, n = 150, k = 300;
  const std::vector<float> a = random_matrix(batch * m * k, rng);
  const std::vector<float> b = random_matrix(batch * k * n, rng);
  const std::vector<float> c0(batch * m * n, 0.0f);
  std::vector<float> c = c0;
  blas::gemm_bf16_strided_batched(false, false, m, n, k, 1.0f, a.data(), k, m * k, b.data(), n,
                                  k * n, 0.0f, c.data(), n, m * n, batch);
  for (int64_t i = 0; i < batch; ++i) {
    EXPECT_TRUE(check_product(false, false, m, n, k, 1.0f, a.data() + i * m * k, k,
                              b.data() + i * k * n, n, 0.0f, c0.data() + i * m * n,
                              c.data() + i * m * n, n))
        << "matrix " << i << " looks fp32";
  }
  blas::set_threads(previous_threads);
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

// A Bf16OperandReuse scope rounds its matrix once: two products reading it (as A, then as A
// transposed, as linear_backward's do) give bit for bit what they give without the scope, and
// the second rounds only its other operand; read as both operands of one product it is rounded
// once more (for B). A nested scope holds its own matrix besides. A matrix
// of the same shape elsewhere, the same pointer read with another shape, and a product after the
// scope all round as always.
TEST_F(Bf16Gemm, OperandReuseRoundsItsMatrixOnceAndChangesNoResult) {
  const Bf16PrecisionScope bf16_precision;
  std::mt19937 rng(31);
  const int64_t rows = 70, cols = 45, inner = 38;
  const std::vector<float> g = random_matrix(rows * cols, rng),
                           other = random_matrix(rows * cols, rng),
                           w = random_matrix(cols * inner, rng),
                           x = random_matrix(rows * inner, rng);
  // dx (rows x inner) = g (rows x cols) w (cols x inner); dw (cols x inner) = g^T x.
  auto products = [&](const float* gradient, std::vector<float>& dx, std::vector<float>& dw) {
    dx.assign(static_cast<size_t>(rows * inner), 0.0f);
    dw.assign(static_cast<size_t>(cols * inner), 0.0f);
    blas::gemm<float>(false, false, rows, inner, cols, 1.0f, gradient, cols, w.data(), inner, 0.0f,
                      dx.data(), inner);
    blas::gemm<float>(true, false, cols, inner, rows, 1.0f, gradient, cols, x.data(), inner, 0.0f,
                      dw.data(), inner);
  };
  std::vector<float> dx_alone, dw_alone, dx, dw, dx_other, dw_other, dx_other_alone, dw_other_alone;
  products(g.data(), dx_alone, dw_alone);
  products(other.data(), dx_other_alone, dw_other_alone);
  std::vector<float> gram_in_scope;
  const int64_t before = blas::Bf16OperandReuse::rounded_elements();
  {
    const blas::Bf16OperandReuse reuse(g.data(), rows, cols, cols);
    products(g.data(), dx, dw);
    EXPECT_EQ(blas::Bf16OperandReuse::rounded_elements() - before,
              rows * cols + cols * inner + rows * inner)
        << "g rounded once, w and x once each";
    const int64_t middle = blas::Bf16OperandReuse::rounded_elements();
    products(other.data(), dx_other, dw_other);
    EXPECT_EQ(blas::Bf16OperandReuse::rounded_elements() - middle,
              2 * rows * cols + cols * inner + rows * inner)
        << "another matrix of g's shape is not g";
    const int64_t reshaped = blas::Bf16OperandReuse::rounded_elements();
    std::vector<float> c(static_cast<size_t>(cols * inner));
    blas::gemm<float>(false, false, cols, inner, rows, 1.0f, g.data(), rows, x.data(), inner, 0.0f,
                      c.data(), inner);  // g's memory read as a cols x rows matrix
    EXPECT_EQ(blas::Bf16OperandReuse::rounded_elements() - reshaped, cols * rows + rows * inner);
    // g as both operands (g^T g): read from the one copy as A, rounded as B.
    std::vector<float> gram(static_cast<size_t>(cols * cols));
    const int64_t square = blas::Bf16OperandReuse::rounded_elements();
    blas::gemm<float>(true, false, cols, cols, rows, 1.0f, g.data(), cols, g.data(), cols, 0.0f,
                      gram.data(), cols);
    EXPECT_EQ(blas::Bf16OperandReuse::rounded_elements() - square, rows * cols);
    gram_in_scope = gram;
    // A nested scope holds its own matrix; the outer one keeps holding g.
    {
      const blas::Bf16OperandReuse inner_scope(w.data(), cols, inner, inner);
      const int64_t nested = blas::Bf16OperandReuse::rounded_elements();
      products(g.data(), dx, dw);
      EXPECT_EQ(blas::Bf16OperandReuse::rounded_elements() - nested, cols * inner + rows * inner)
          << "g from the outer scope, w rounded once by the inner one, x";
      products(g.data(), dx, dw);
      EXPECT_EQ(blas::Bf16OperandReuse::rounded_elements() - nested,
                cols * inner + 2 * rows * inner);
    }
  }
  EXPECT_EQ(dx, dx_alone);
  EXPECT_EQ(dw, dw_alone);
  std::vector<float> gram_alone(static_cast<size_t>(cols * cols));
  blas::gemm<float>(true, false, cols, cols, rows, 1.0f, g.data(), cols, g.data(), cols, 0.0f,
                    gram_alone.data(), cols);
  EXPECT_EQ(gram_in_scope, gram_alone);
  EXPECT_EQ(dx_other, dx_other_alone);
  EXPECT_EQ(dw_other, dw_other_alone);
  const int64_t after = blas::Bf16OperandReuse::rounded_elements();
  products(g.data(), dx, dw);
  EXPECT_EQ(blas::Bf16OperandReuse::rounded_elements() - after,
            2 * rows * cols + cols * inner + rows * inner)
      << "after the scope g is rounded by each product";
}

// The wrapper holds its matrix only where float products round to bf16: under fp32 precision an
// explicit bf16 product still rounds at every call.
TEST_F(Bf16Gemm, OperandReuseIfBf16HoldsOnlyUnderBf16Precision) {
  std::mt19937 rng(37);
  const int64_t rows = 20, cols = 12, inner = 9;
  const std::vector<float> g = random_matrix(rows * cols, rng),
                           w = random_matrix(cols * inner, rng);
  std::vector<float> c(static_cast<size_t>(rows * inner));
  auto two_products = [&] {
    const int64_t before = blas::Bf16OperandReuse::rounded_elements();
    for (int repeat = 0; repeat < 2; ++repeat) {
      blas::gemm_bf16(false, false, rows, inner, cols, 1.0f, g.data(), cols, w.data(), inner, 0.0f,
                      c.data(), inner);
    }
    return blas::Bf16OperandReuse::rounded_elements() - before;
  };
  {
    const blas::Bf16OperandReuseIfBf16<float> fp32_scope(g.data(), rows, cols, cols);
    EXPECT_EQ(two_products(), 2 * (rows * cols + cols * inner)) << "fp32 precision: no scope";
  }
  const Bf16PrecisionScope bf16_precision;
  {
    const blas::Bf16OperandReuseIfBf16<float> bf16_scope(g.data(), rows, cols, cols);
    EXPECT_EQ(two_products(), rows * cols + 2 * cols * inner) << "bf16 precision: g held";
  }
  EXPECT_EQ(two_products(), 2 * (rows * cols + cols * inner)) << "the scope ended";
}

// A matrix a scope holds is rounded into the scope's copy only: the thread's operand scratch
// stays the size of the operands no scope holds (the logits gradient a training step holds would
// otherwise be kept twice, 50 MiB of base's bf16 peak RSS). Without the scope the same product
// grows the scratch to the matrix's size.
TEST_F(Bf16Gemm, HeldOperandDoesNotGrowTheThreadsScratch) {
  std::mt19937 rng(41);
  const int64_t cols = 64, inner = 8;
  // Taller than anything earlier tests left in this thread's scratch.
  const int64_t rows = blas::Bf16OperandReuse::scratch_elements() / cols + 256;
  const std::vector<float> g = random_matrix(rows * cols, rng),
                           w = random_matrix(cols * inner, rng);
  std::vector<float> c(static_cast<size_t>(rows * inner));
  auto product = [&] {
    blas::gemm_bf16(false, false, rows, inner, cols, 1.0f, g.data(), cols, w.data(), inner, 0.0f,
                    c.data(), inner);
  };
  {
    const blas::Bf16OperandReuse held(g.data(), rows, cols, cols);
    product();
    EXPECT_LT(blas::Bf16OperandReuse::scratch_elements(), rows * cols) << "g held: not in scratch";
  }
  product();
  EXPECT_GE(blas::Bf16OperandReuse::scratch_elements(), rows * cols) << "g rounds into scratch";
}

TEST(OneDnnFp32Gemm, MatchesDoubleReferenceWithinTheFp32Bound) {
  // Decoding's shapes are few rows by wide weights; the odd ones reach partial tiles.
  for_each_product(
      {Case{1, 1, 1}, Case{3, 5, 7}, Case{32, 130, 64}, Case{17, 33, 65}, Case{130, 9, 300}}, 5,
      [](const Product& p) {
        std::vector<float> c = p.c0;
        blas::gemm_onednn_f32(p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda, p.b.data(),
                              p.ldb, p.beta, c.data(), p.ldc);
        // Every element within the bound (checked inside); which of them pass fp32's own bound
        // without the alpha and beta roundings does not matter here.
        static_cast<void>(check_product(p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda,
                                        p.b.data(), p.ldb, p.beta, p.c0.data(), c.data(), p.ldc,
                                        0.0));
      });
}

TEST(OneDnnFp32Gemm, EngineScopeRoutesFloatProductsAndRestoresTheEngineItFound) {
  std::mt19937 rng(9);
  const int64_t m = 32, n = 70, k = 48;
  const std::vector<float> a = random_matrix(m * k, rng), b = random_matrix(n * k, rng);
  std::vector<float> scoped(m * n), direct(m * n);
  ASSERT_EQ(blas::fp32_engine(), blas::Fp32Engine::kOpenBlas);  // training's engine by default
  {
    const blas::Fp32EngineScope outer(blas::Fp32Engine::kOneDnn);
    {
      const blas::Fp32EngineScope inner(blas::Fp32Engine::kOpenBlas);
      EXPECT_EQ(blas::fp32_engine(), blas::Fp32Engine::kOpenBlas);
    }
    EXPECT_EQ(blas::fp32_engine(), blas::Fp32Engine::kOneDnn);
    EXPECT_EQ(blas::product_threads(4096, 4096, 4096), 1);  // oneDNN threads its own
    blas::gemm<float>(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, scoped.data(), n);
  }
  EXPECT_EQ(blas::fp32_engine(), blas::Fp32Engine::kOpenBlas);
  blas::gemm_onednn_f32(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, direct.data(),
                        n);
  EXPECT_EQ(scoped, direct);  // the scope reaches oneDNN's product itself
}

TEST(OneDnnFp32Gemm, Bf16PrecisionWinsOverTheFp32Engine) {
  const std::string reason = blas::bf16_unsupported_reason();
  if (!reason.empty()) GTEST_SKIP() << "bf16 products cannot run here: " << reason;
  std::mt19937 rng(13);
  const int64_t m = 8, n = 20, k = 40;
  const std::vector<float> a = random_matrix(m * k, rng), b = random_matrix(k * n, rng);
  std::vector<float> routed(m * n), bf16(m * n);
  {
    const blas::Fp32EngineScope scope(blas::Fp32Engine::kOneDnn);
    const Bf16PrecisionScope bf16_precision;
    blas::gemm<float>(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, routed.data(),
                      n);
  }
  blas::gemm_bf16(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, bf16.data(), n);
  EXPECT_EQ(routed, bf16);  // a bf16 run decodes in bf16
}

// Products x W^T with W packed (PackedWeights), as a decoder step runs them: op(A) in both
// orientations with a padded lda, C padded, (alpha, beta) as for_each_product, several row counts
// through one pack. Widths off oneDNN's 16 x 64 blocks reach partial blocks. `u` as check_product.
void check_packed_products(double u) {
  std::mt19937 rng(21);
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{1, 1}, {37, 5}, {130, 64}, {70, 300}}) {
    const std::vector<float> w = random_matrix(n * k, rng);
    blas::PackedWeights packed;
    packed.add(w.data(), n, k);
    EXPECT_GE(packed.bytes(), n * k * (u > 0 ? 2 : 4));
    const blas::PackedWeightsScope scope(packed);
    for (const int64_t m : {1, 3, 32, 130}) {
      for (const bool ta : {false, true}) {
        for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{0.35f, 1.0f}}) {
          const int64_t lda = (ta ? m : k) + 3, ldc = n + 3;
          const std::vector<float> a = random_matrix((ta ? k : m) * lda, rng);
          const std::vector<float> c0 = random_matrix(m * ldc, rng);
          std::vector<float> c = c0;
          blas::gemm<float>(ta, true, m, n, k, alpha, a.data(), lda, w.data(), k, beta, c.data(),
                            ldc);
          const bool beyond_fp32 = check_product(ta, true, m, n, k, alpha, a.data(), lda, w.data(),
                                                 k, beta, c0.data(), c.data(), ldc, u);
          if (u > 0 && k >= 7 && m >= 3) {
            EXPECT_TRUE(beyond_fp32) << "no element of m=" << m << " n=" << n << " k=" << k
                                     << " misses by more than fp32 would: was it bf16?";
          }
        }
      }
    }
  }
}

TEST(PackedWeights, Fp32ProductsMatchTheDoubleReferenceWithinTheFp32Bound) {
  check_packed_products(0.0);
}

TEST_F(Bf16Gemm, PackedWeightProductsMatchTheDoubleReferenceWithinTheBf16Bound) {
  const Bf16PrecisionScope bf16_precision;
  check_packed_products(std::ldexp(1.0, -8));
}

// The scope's products read the copy taken when the weight was added, only for that weight as
// x W^T with its own row stride, and only while the scope lives.
TEST(PackedWeights, ScopeReadsTheCopyOfAddedWeightsOnly) {
  std::mt19937 rng(22);
  const int64_t m = 4, n = 70, k = 48;
  const std::vector<float> a = random_matrix(m * k, rng), other = random_matrix(n * k, rng);
  std::vector<float> w = random_matrix(n * k, rng);
  const std::vector<float> original = w;
  blas::PackedWeights packed;
  packed.add(w.data(), n, k);
  std::fill(w.begin(), w.end(), 0.0f);  // after packing: only the copy keeps the values
  auto product = [&](bool trans_b, const float* b, int64_t cols) {
    std::vector<float> c(static_cast<size_t>(m * cols), -1.0f);
    blas::gemm<float>(false, trans_b, m, cols, k, 1.0f, a.data(), k, b, trans_b ? k : cols, 0.0f,
                      c.data(), cols);
    return c;
  };
  std::vector<float> expected(static_cast<size_t>(m * n)), other_expected = expected;
  blas::gemm_onednn_f32(false, true, m, n, k, 1.0f, a.data(), k, original.data(), k, 0.0f,
                        expected.data(), n);
  blas::gemm<float>(false, true, m, n, k, 1.0f, a.data(), k, other.data(), k, 0.0f,
                    other_expected.data(), n);
  const std::vector<float> zeros(static_cast<size_t>(m * n), 0.0f);
  {
    const blas::PackedWeightsScope scope(packed);
    const std::vector<float> from_pack = product(true, w.data(), n);
    for (size_t i = 0; i < from_pack.size(); ++i) {
      EXPECT_NEAR(from_pack[i], expected[i], 1e-4 * (1.0 + std::fabs(expected[i]))) << i;
    }
    EXPECT_EQ(product(true, other.data(), n), other_expected);  // not added: read as it is
    // W as (k x n) without transposition is another matrix at the same address: read as it is.
    EXPECT_EQ(product(false, w.data(), n), zeros);
    EXPECT_EQ(blas::packed_weight(w.data(), true, n, k, k + 1), nullptr);  // another row stride
    EXPECT_EQ(blas::packed_weight(w.data(), true, n - 1, k, k), nullptr);  // another shape
  }
  EXPECT_EQ(product(true, w.data(), n), zeros);  // the scope has ended
  EXPECT_EQ(blas::packed_weight(w.data(), true, n, k, k), nullptr);
}

// A set's buffers are kept for the next set only while a PackBufferReuse lives (at most one
// set's worth), and freed when the last one ends or when none is alive.
TEST(PackedWeights, BuffersAreKeptForReuseOnlyWhileAReuseScopeLives) {
  std::mt19937 rng(24);
  const std::vector<float> w = random_matrix(130 * 64, rng), v = random_matrix(64 * 64, rng);
  auto pack_and_end = [&] {
    blas::PackedWeights packed;
    packed.add(w.data(), 130, 64);
    packed.add(v.data(), 64, 64);
    return packed.bytes();
  };
  ASSERT_EQ(blas::PackBufferReuse::kept_bytes(), 0);
  pack_and_end();
  EXPECT_EQ(blas::PackBufferReuse::kept_bytes(), 0) << "no reuse scope: freed with the set";
  {
    const blas::PackBufferReuse reuse;
    const int64_t set_bytes = pack_and_end();
    EXPECT_EQ(blas::PackBufferReuse::kept_bytes(), set_bytes);
    pack_and_end();  // takes the kept buffers and returns them
    EXPECT_EQ(blas::PackBufferReuse::kept_bytes(), set_bytes);
    {
      const blas::PackBufferReuse nested;
      pack_and_end();
    }
    EXPECT_EQ(blas::PackBufferReuse::kept_bytes(), set_bytes) << "the outer scope still lives";
  }
  EXPECT_EQ(blas::PackBufferReuse::kept_bytes(), 0) << "the last scope has ended";
}

TEST(PackedWeights, RefusesAWeightPackedInAnotherPrecision) {
  std::mt19937 rng(23);
  const int64_t m = 2, n = 8, k = 8;
  const std::vector<float> a = random_matrix(m * k, rng), w = random_matrix(n * k, rng);
  std::vector<float> c(static_cast<size_t>(m * n));
  blas::PackedWeights packed;
  packed.add(w.data(), n, k);  // fp32
  const blas::PackedWeightsScope scope(packed);
  const Bf16PrecisionScope bf16_precision;
  test::expect_error(
      [&] {
        blas::gemm<float>(false, true, m, n, k, 1.0f, a.data(), k, w.data(), k, 0.0f, c.data(), n);
      },
      {"packed in fp32", "train.precision is bf16"});
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
