// The BLAS door: gemm and gemm_strided_batched against the three-loop gemm_naive for all four
// transpose combinations, odd sizes, padded row strides, alpha/beta, in float and double.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/tensor_testing.h"
#include "core/tensor/blas.h"

namespace attnlab::test {
namespace {

TEST(Gemm, HandComputed) {
  // [[1 2 3] [4 5 6]] [[7 8] [9 10] [11 12]] = [[58 64] [139 154]]
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  std::vector<double> c(4), naive(4);
  blas::gemm<double>(false, false, 2, 2, 3, 1.0, a.data(), 3, b.data(), 2, 0.0, c.data(), 2);
  blas::gemm_naive<double>(false, false, 2, 2, 3, 1.0, a.data(), 3, b.data(), 2, 0.0, naive.data(),
                           2);
  EXPECT_EQ(c, (std::vector<double>{58, 64, 139, 154}));
  EXPECT_EQ(naive, c);
  // Transposed storage of the same operands: A^T stored (3,2), B^T stored (2,3); alpha 2, beta 1
  // on C = [[58 64] [139 154]] gives 3 C.
  const std::vector<double> a_t = {1, 4, 2, 5, 3, 6}, b_t = {7, 9, 11, 8, 10, 12};
  blas::gemm<double>(true, true, 2, 2, 3, 2.0, a_t.data(), 2, b_t.data(), 3, 1.0, c.data(), 2);
  EXPECT_EQ(c, (std::vector<double>{174, 192, 417, 462}));
}

TEST(Gemm, BetaZeroIgnoresWhatCHeld) {
  // beta = 0 means C is written, not scaled: NaN in C must not survive.
  const std::vector<double> a = {1, 2}, b = {3, 4};
  std::vector<double> c = {NAN}, naive = {NAN};
  blas::gemm<double>(false, false, 1, 1, 2, 1.0, a.data(), 2, b.data(), 1, 0.0, c.data(), 1);
  blas::gemm_naive<double>(false, false, 1, 1, 2, 1.0, a.data(), 2, b.data(), 1, 0.0, naive.data(),
                           1);
  EXPECT_EQ(c[0], 11.0);
  EXPECT_EQ(naive[0], 11.0);
}

TEST(Gemm, EmptyInnerDimensionScalesC) {
  // k = 0: op(A) op(B) is the zero matrix, so C = beta C.
  std::vector<double> c = {2, 4, 6}, naive = c;
  const std::vector<double> none(1);
  blas::gemm<double>(false, false, 1, 3, 0, 1.0, none.data(), 1, none.data(), 3, 0.5, c.data(), 3);
  blas::gemm_naive<double>(false, false, 1, 3, 0, 1.0, none.data(), 1, none.data(), 3, 0.5,
                           naive.data(), 3);
  EXPECT_EQ(c, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(naive, c);
}

// Which OpenBLAS kernels draw a warning, on CPUs described by hand.
TEST(KernelAdvice, WarnsWhenTheKernelIsNarrowerThanTheCpu) {
  using blas::kernel_advice;
  // A kernel as wide as the CPU: nothing to say.
  EXPECT_EQ(kernel_advice("SkylakeX", "avx512", false, ""), "");
  EXPECT_EQ(kernel_advice("Zen", "avx2", true, ""), "");
  EXPECT_EQ(kernel_advice("Haswell", "avx2", false, "Haswell"), "");
  // A CPU without AVX2: the generic kernel is all there is.
  EXPECT_EQ(kernel_advice("Prescott", "", false, ""), "");
  // A generic kernel on an AVX2 or AVX-512 CPU names the kernel env.sh would pick.
  EXPECT_NE(kernel_advice("Prescott", "avx2", true, "").find("OPENBLAS_CORETYPE=Zen "),
            std::string::npos);
  EXPECT_NE(kernel_advice("Prescott", "avx512", true, "").find("OPENBLAS_CORETYPE=SkylakeX "),
            std::string::npos);
  // An AVX2 kernel on an AVX-512 CPU (Zen 5 under OPENBLAS_CORETYPE=Haswell), whoever chose it.
  const std::string from_environment = kernel_advice("Haswell", "avx512", true, "Haswell");
  EXPECT_NE(from_environment.find("AVX2 'Haswell' kernel on a CPU with avx512"), std::string::npos)
      << from_environment;
  EXPECT_NE(from_environment.find("OPENBLAS_CORETYPE=Haswell is set in the environment"),
            std::string::npos)
      << from_environment;
  EXPECT_NE(from_environment.find("OPENBLAS_CORETYPE=SkylakeX "), std::string::npos);
  const std::string chosen = kernel_advice("Zen", "avx512", true, "");
  EXPECT_NE(chosen.find("AVX2 'Zen' kernel"), std::string::npos) << chosen;
  EXPECT_NE(chosen.find("OpenBLAS chose it"), std::string::npos) << chosen;
}

TEST(Gemm, NegativeSizeIsAnError) {
  std::vector<double> x(4);
  EXPECT_THROW(
      blas::gemm<double>(false, false, -1, 2, 2, 1.0, x.data(), 2, x.data(), 2, 0.0, x.data(), 2),
      Error);
}

struct GemmCase {
  bool trans_a, trans_b;
  int64_t m, n, k;
  int64_t pad;  // extra elements at the end of every stored row (row stride = width + pad)
  double alpha, beta;
};

std::string gemm_name(const ::testing::TestParamInfo<GemmCase>& info) {
  const GemmCase& c = info.param;
  return std::string(c.trans_a ? "T" : "N") + (c.trans_b ? "T" : "N") + "_m" + std::to_string(c.m) +
         "n" + std::to_string(c.n) + "k" + std::to_string(c.k) + "_pad" + std::to_string(c.pad) +
         "_" + std::to_string(info.index);
}

// Stored operand sizes: op(A) is (m,k), so A is stored (k,m) when transposed; likewise B.
struct GemmLayout {
  int64_t a_rows, a_cols, b_rows, b_cols, lda, ldb, ldc;
  explicit GemmLayout(const GemmCase& c)
      : a_rows(c.trans_a ? c.k : c.m),
        a_cols(c.trans_a ? c.m : c.k),
        b_rows(c.trans_b ? c.n : c.k),
        b_cols(c.trans_b ? c.k : c.n),
        lda(a_cols + c.pad),
        ldb(b_cols + c.pad),
        ldc(c.n + c.pad) {}
};

template <typename T>
void expect_gemm_matches_naive(const GemmCase& c, double tolerance) {
  const GemmLayout l(c);
  const std::vector<T> a = convert<T>(random_uniform(l.a_rows * l.lda, 1)),
                       b = convert<T>(random_uniform(l.b_rows * l.ldb, 2));
  std::vector<T> c_blas = convert<T>(random_uniform(c.m * l.ldc, 3)), c_naive = c_blas;
  const std::vector<T> c_before = c_blas;
  blas::gemm<T>(c.trans_a, c.trans_b, c.m, c.n, c.k, static_cast<T>(c.alpha), a.data(), l.lda,
                b.data(), l.ldb, static_cast<T>(c.beta), c_blas.data(), l.ldc);
  blas::gemm_naive<T>(c.trans_a, c.trans_b, c.m, c.n, c.k, static_cast<T>(c.alpha), a.data(), l.lda,
                      b.data(), l.ldb, static_cast<T>(c.beta), c_naive.data(), l.ldc);
  // Entries are sums of k products of values in [-1, 1]: scale the tolerance by k.
  const double scaled = tolerance * static_cast<double>(std::max<int64_t>(c.k, 1));
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < l.ldc; ++j) {
      const size_t at = static_cast<size_t>(i * l.ldc + j);
      if (j < c.n) {
        EXPECT_NEAR(c_blas[at], c_naive[at], scaled) << "C[" << i << "," << j << "]";
      } else {  // padding between rows is never written
        EXPECT_EQ(c_blas[at], c_before[at]) << "padding C[" << i << "," << j << "]";
        EXPECT_EQ(c_naive[at], c_before[at]) << "padding C[" << i << "," << j << "]";
      }
    }
  }
}

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, DoubleMatchesNaive) { expect_gemm_matches_naive<double>(GetParam(), 1e-15); }
TEST_P(GemmTest, FloatMatchesNaive) { expect_gemm_matches_naive<float>(GetParam(), 1e-6); }

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> cases;
  const int64_t sizes[][3] = {{1, 1, 1}, {3, 7, 5}, {7, 3, 1}, {1, 7, 3}, {33, 17, 65}};
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      for (const auto& size : sizes) {
        cases.push_back({trans_a, trans_b, size[0], size[1], size[2], 0, 1.0, 0.0});
      }
      cases.push_back({trans_a, trans_b, 5, 3, 7, 2, 0.75, 0.5});
      cases.push_back({trans_a, trans_b, 16, 9, 11, 1, -1.5, 1.0});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmTest, ::testing::ValuesIn(gemm_cases()), gemm_name);

class GemmBatchedTest : public ::testing::TestWithParam<GemmCase> {};

// Three products whose operands start `gap` elements apart beyond their own size; C's gaps stay
// untouched and every product equals gemm_naive on its slice.
template <typename T>
void expect_batched_matches_naive(const GemmCase& c, double tolerance) {
  const GemmLayout l(c);
  const int64_t batch = 3, gap = 4;
  const int64_t stride_a = l.a_rows * l.lda + gap, stride_b = l.b_rows * l.ldb + gap,
                stride_c = c.m * l.ldc + gap;
  const std::vector<T> a = convert<T>(random_uniform(batch * stride_a, 4)),
                       b = convert<T>(random_uniform(batch * stride_b, 5));
  std::vector<T> c_blas = convert<T>(random_uniform(batch * stride_c, 6)), c_naive = c_blas;
  const std::vector<T> c_before = c_blas;
  blas::gemm_strided_batched<T>(c.trans_a, c.trans_b, c.m, c.n, c.k, static_cast<T>(c.alpha),
                                a.data(), l.lda, stride_a, b.data(), l.ldb, stride_b,
                                static_cast<T>(c.beta), c_blas.data(), l.ldc, stride_c, batch);
  for (int64_t i = 0; i < batch; ++i) {
    blas::gemm_naive<T>(c.trans_a, c.trans_b, c.m, c.n, c.k, static_cast<T>(c.alpha),
                        a.data() + i * stride_a, l.lda, b.data() + i * stride_b, l.ldb,
                        static_cast<T>(c.beta), c_naive.data() + i * stride_c, l.ldc);
  }
  const double scaled = tolerance * static_cast<double>(std::max<int64_t>(c.k, 1));
  for (size_t i = 0; i < c_blas.size(); ++i) {
    const int64_t within = static_cast<int64_t>(i) % stride_c;
    const bool written = within < c.m * l.ldc && within % l.ldc < c.n;
    if (written) {
      EXPECT_NEAR(c_blas[i], c_naive[i], scaled) << "element " << i;
    } else {
      EXPECT_EQ(c_blas[i], c_before[i]) << "gap element " << i;
    }
  }
}

TEST_P(GemmBatchedTest, DoubleMatchesNaive) {
  expect_batched_matches_naive<double>(GetParam(), 1e-15);
}
TEST_P(GemmBatchedTest, FloatMatchesNaive) {
  expect_batched_matches_naive<float>(GetParam(), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmBatchedTest,
                         ::testing::Values(GemmCase{false, false, 3, 7, 5, 0, 1.0, 0.0},
                                           GemmCase{false, true, 7, 3, 5, 1, 0.5, 0.0},
                                           GemmCase{true, false, 1, 7, 3, 0, 1.0, 1.0},
                                           GemmCase{true, true, 5, 5, 7, 2, -1.0, 0.25}),
                         gemm_name);

// Products large enough to be split over two threads (by rows when m >= n, else by columns; the
// lengths are not multiples of the split's alignment, so the last block is ragged), in every
// transposition and with padded rows: each equals gemm_naive as on one thread.
class GemmTwoThreadsTest : public ::testing::TestWithParam<GemmCase> {
 protected:
  void SetUp() override { blas::set_threads(2); }
  void TearDown() override { blas::set_threads(saved_); }

 private:
  int saved_ = blas::threads();
};

TEST_P(GemmTwoThreadsTest, FloatSplitMatchesNaive) {
  const GemmCase& c = GetParam();
  ASSERT_EQ(blas::product_threads(c.m, c.n, c.k), 2) << "the case must be large enough to split";
  expect_gemm_matches_naive<float>(c, 1e-6);
}

TEST_P(GemmTwoThreadsTest, FloatBatchSharedMatchesNaive) {
  // Three products of this shape: whole products go to the threads, none of them split again.
  expect_batched_matches_naive<float>(GetParam(), 1e-6);
}

std::vector<GemmCase> split_cases() {
  std::vector<GemmCase> cases;
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      cases.push_back({trans_a, trans_b, 333, 200, 96, 0, 1.0, 0.0});    // split by rows
      cases.push_back({trans_a, trans_b, 150, 301, 112, 3, 0.5, 0.75});  // split by columns
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmTwoThreadsTest, ::testing::ValuesIn(split_cases()), gemm_name);

TEST(Blas, SmallProductsAndNestedCallsStayOnOneThread) {
  const int saved = blas::threads();
  blas::set_threads(2);
  EXPECT_EQ(blas::product_threads(333, 200, 96), 2);
  EXPECT_EQ(blas::product_threads(64, 64, 64), 1) << "too small to pay for a parallel region";
  EXPECT_EQ(blas::product_threads(40, 40, 4000), 1) << "no dimension holds two aligned blocks";
  int nested = 0;
#pragma omp parallel num_threads(2) reduction(max : nested)
  nested = blas::product_threads(333, 200, 96);
  EXPECT_EQ(nested, 1) << "a product inside a parallel region runs on its caller's thread";
  blas::set_threads(1);
  EXPECT_EQ(blas::product_threads(333, 200, 96), 1);
  blas::set_threads(saved);
}

TEST(Blas, ThreadCountRoundTrips) {
  const int saved = blas::threads();
  blas::set_threads(1);
  EXPECT_EQ(blas::threads(), 1);
  blas::set_threads(saved);
  EXPECT_EQ(blas::threads(), saved);
  EXPECT_FALSE(blas::core_name().empty());
}

}  // namespace
}  // namespace attnlab::test
