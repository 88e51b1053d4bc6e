// BLAS calls (cblas) and the OpenBLAS kernel report. No other file includes cblas.h.
#include "core/tensor/blas.h"

#include <cblas.h>

#include <fstream>
#include <sstream>
#include <type_traits>

#include "core/util/check.h"

namespace attnlab::blas {
namespace {

void check_gemm_args(int64_t m, int64_t n, int64_t k) {
  CHECK(m >= 0 && n >= 0 && k >= 0)
      << "gemm sizes must be non-negative, got m=" << m << " n=" << n << " k=" << k;
  constexpr int64_t kMaxBlasInt = 2147483647;
  CHECK(m <= kMaxBlasInt && n <= kMaxBlasInt && k <= kMaxBlasInt)
      << "gemm size exceeds the 32-bit BLAS interface: m=" << m << " n=" << n << " k=" << k;
}

CBLAS_TRANSPOSE transpose_flag(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

}  // namespace

template <>
void gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  check_gemm_args(m, n, k);
  if (m == 0 || n == 0) return;
  if (precision() == Precision::kBf16 && k > 0) {
    gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, transpose_flag(trans_a), transpose_flag(trans_b), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

template <>
void gemm<double>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                  double* c, int64_t ldc) {
  check_gemm_args(m, n, k);
  if (m == 0 || n == 0) return;
  cblas_dgemm(CblasRowMajor, transpose_flag(trans_a), transpose_flag(trans_b), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

template <typename T>
void gemm_strided_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                          const T* a, int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                          int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                          int64_t batch) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision() == Precision::kBf16 && m > 0 && n > 0 && k > 0 && batch > 0) {
      check_gemm_args(m, n, k);
      gemm_bf16_strided_batched(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb,
                                stride_b, beta, c, ldc, stride_c, batch);
      return;
    }
  }
  for (int64_t i = 0; i < batch; ++i) {
    gemm<T>(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
            c + i * stride_c, ldc);
  }
}

template <typename T>
void gemm_naive(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        T a_ip = trans_a ? a[p * lda + i] : a[i * lda + p];
        T b_pj = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        sum += static_cast<double>(a_ip) * static_cast<double>(b_pj);
      }
      T previous = beta == T(0) ? T(0) : beta * c[i * ldc + j];
      c[i * ldc + j] = alpha * static_cast<T>(sum) + previous;
    }
  }
}

template void gemm_strided_batched<float>(bool, bool, int64_t, int64_t, int64_t, float,
                                          const float*, int64_t, int64_t, const float*, int64_t,
                                          int64_t, float, float*, int64_t, int64_t, int64_t);
template void gemm_strided_batched<double>(bool, bool, int64_t, int64_t, int64_t, double,
                                           const double*, int64_t, int64_t, const double*, int64_t,
                                           int64_t, double, double*, int64_t, int64_t, int64_t);
template void gemm_naive<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                const float*, int64_t, float, float*, int64_t);
template void gemm_naive<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                 int64_t, const double*, int64_t, double, double*, int64_t);

std::string core_name() {
  const char* name = openblas_get_corename();
  return name ? std::string(name) : std::string("unknown");
}

std::string cpu_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) return line.substr(line.find(':') + 1);
  }
  return "";
}

bool has_cpu_flag(const std::string& flags, const std::string& flag) {
  return (" " + flags + " ").find(" " + flag + " ") != std::string::npos;
}

std::string cpu_vector_extension() {
  const std::string flags = cpu_flags();
  auto has = [&](const char* flag) { return has_cpu_flag(flags, flag); };
  // OpenBLAS's SkylakeX kernels need AVX-512 F, BW, DQ and VL; its Haswell/Zen kernels AVX2+FMA.
  if (has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl")) return "avx512";
  return has("avx2") && has("fma") ? "avx2" : "";
}

namespace {

bool amd_cpu() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("vendor_id", 0) == 0) {
      return line.find("AuthenticAMD") != std::string::npos ||
             line.find("HygonGenuine") != std::string::npos;
    }
  }
  return false;
}

}  // namespace

std::string kernel_warning() {
  const std::string core = core_name();
  const std::string extension = cpu_vector_extension();
  const bool generic = core == "Prescott" || core == "Core2" || core == "Penryn" ||
                       core == "Nehalem" || core == "Dunnington" || core == "Atom" ||
                       core == "Katmai" || core == "unknown";
  if (!generic || extension.empty()) return "";
  // The same choice as cluster/env.sh.
  const std::string suggested =
      extension == "avx512" ? "SkylakeX" : (amd_cpu() ? "Zen" : "Haswell");
  return "OpenBLAS runs its generic '" + core + "' kernel on a CPU with " + extension +
         "; set OPENBLAS_CORETYPE=" + suggested +
         " before starting attnlab (make and the launchers do) for 3-5x faster matrix products";
}

void set_threads(int threads) { openblas_set_num_threads(threads); }
int threads() { return openblas_get_num_threads(); }

}  // namespace attnlab::blas
