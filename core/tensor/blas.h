// The only door to BLAS: row-major GEMM (optionally transposed, optionally over strided batches)
// in float and double, and the OpenBLAS kernel report.
#pragma once

#include <cstdint>
#include <string>

namespace attnlab::blas {

// C(M,N) = alpha * op(A) op(B) + beta * C, row-major; op(A) is (M,K), op(B) is (K,N).
// lda/ldb/ldc are the row strides of A, B, C as stored.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// `batch` independent GEMMs; matrix i starts at a + i*stride_a (and likewise for b and c).
template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                          const T* a, int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                          int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                          int64_t batch);

// The same product by three loops: the oracle for tests, never used on the hot path.
template <typename T>
void gemm_naive(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// The kernel OpenBLAS chose at load time ("SkylakeX", "Haswell", "Prescott", ...).
std::string core_name();
// The CPU's best vector extension as the OS reports it: "avx512", "avx2" or "" for neither.
std::string cpu_vector_extension();
// A one-line warning when OpenBLAS runs a generic kernel on a CPU with AVX2/AVX-512, else "".
std::string kernel_warning();
void set_threads(int threads);
int threads();

}  // namespace attnlab::blas
