// BLAS calls (cblas) and the OpenBLAS kernel report. No other file includes cblas.h.
#include "core/tensor/blas.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
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

// The compute threads of the process (set_threads). OpenBLAS itself always runs one thread: its
// pthread pool and OpenMP's would be two pools on the same cores, and OpenBLAS's idle workers spin
// for up to 2^28 cycles after every product, stealing the core an OpenMP region needs next (a
// second thread made tiny 0.65x and small 0.92x as fast as one). Every parallel product is split
// here into one-thread sgemm calls inside an OpenMP region, so the process has one pool.
int g_threads = [] {
  openblas_set_num_threads(1);
  return omp_get_max_threads();
}();

// Products below this many multiply-adds stay on one thread: a parallel region costs a wake-up of
// the sleeping workers (tens of microseconds), as much as about 2^22 multiply-adds at sgemm speed.
constexpr int64_t kParallelMinMacs = int64_t{1} << 22;
// A thread's block of rows or columns is a multiple of this (OpenBLAS's widest register tile), so
// that no block ends in a partial micro-tile the whole product would not have had.
constexpr int64_t kSplitAlign = 32;

bool split_pays(int64_t macs) {
  return g_threads > 1 && macs >= kParallelMinMacs && !omp_in_parallel();
}

// The threads sgemm_split gives C's longer dimension, `length`: one block of whole kSplitAlign
// groups each, at most g_threads.
int split_workers(int64_t length) {
  return static_cast<int>(std::min<int64_t>(g_threads, length / kSplitAlign));
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transpose_flag(trans_a), transpose_flag(trans_b), static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// C = alpha op(A) op(B) + beta C over `workers` threads (product_threads): C is cut into one block
// of rows (or of columns, whichever dimension is longer) per thread, and each block is an
// independent one-thread sgemm on the matching rows of op(A) (columns of op(B)). Every element of C
// is still one dot product over all of K in sgemm's order, so the split never changes which terms
// are summed, only which thread sums them.
void sgemm_split(int workers, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                 float* c, int64_t ldc) {
  const bool by_rows = m >= n;
  const int64_t length = by_rows ? m : n;
  const int64_t aligned_blocks = length / kSplitAlign;
#pragma omp parallel num_threads(workers)
  {
    const int64_t worker = omp_get_thread_num();
    const int64_t first = aligned_blocks * worker / workers * kSplitAlign;
    const int64_t last =
        worker + 1 == workers ? length : aligned_blocks * (worker + 1) / workers * kSplitAlign;
    if (by_rows) {
      // Rows [first, last) of op(A): rows of A as stored, or columns when A is transposed.
      const float* a_block = trans_a ? a + first : a + first * lda;
      sgemm(trans_a, trans_b, last - first, n, k, alpha, a_block, lda, b, ldb, beta,
            c + first * ldc, ldc);
    } else {
      // Columns [first, last) of op(B): columns of B as stored, or rows when B is transposed.
      const float* b_block = trans_b ? b + first * ldb : b + first;
      sgemm(trans_a, trans_b, m, last - first, k, alpha, a, lda, b_block, ldb, beta, c + first,
            ldc);
    }
  }
}

}  // namespace

template <>
void gemm<float>(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  check_gemm_args(m, n, k);
  if (m == 0 || n == 0) return;
  if (const PackedWeights::Pack* packed = k > 0 ? packed_weight(b, trans_b, n, k, ldb) : nullptr) {
    gemm_packed(trans_a, m, alpha, a, lda, *packed, beta, c, ldc);
    return;
  }
  if (precision() == Precision::kBf16 && k > 0) {
    gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (fp32_engine() == Fp32Engine::kOneDnn && k > 0) {
    gemm_onednn_f32(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (const int workers = product_threads(m, n, k); workers > 1) {
    sgemm_split(workers, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
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
  // Independent products go to the threads whole (each one-thread), unless a single product is
  // the whole batch; double products (gradient checks) stay serial.
  const bool parallel = std::is_same_v<T, float> && batch > 1 && split_pays(m * n * k * batch);
#pragma omp parallel for schedule(guided) num_threads(g_threads) if (parallel)
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

std::string kernel_advice(const std::string& core, const std::string& extension, bool amd_cpu,
                          const std::string& coretype_setting) {
  if (extension.empty()) return "";
  // The same choice as cluster/env.sh.
  const std::string suggested = extension == "avx512" ? "SkylakeX" : (amd_cpu ? "Zen" : "Haswell");
  const bool generic = core == "Prescott" || core == "Core2" || core == "Penryn" ||
                       core == "Nehalem" || core == "Dunnington" || core == "Atom" ||
                       core == "Katmai" || core == "unknown";
  if (generic) {
    return "OpenBLAS runs its generic '" + core + "' kernel on a CPU with " + extension +
           "; set OPENBLAS_CORETYPE=" + suggested +
           " before starting attnlab (make and the launchers do) for 3-5x faster matrix products";
  }
  // An AVX2 kernel on an AVX-512 CPU: usually OPENBLAS_CORETYPE set for another machine (a
  // value the user set wins, so make and the launchers keep it). On a Zen 5 the SkylakeX kernel's
  // sgemm ran 1.8x the Haswell kernel's (bench/PROFILE.md, "OpenBLAS's kernel on Zen 5").
  const bool avx2_kernel = core == "Haswell" || core == "Zen";
  if (avx2_kernel && extension == "avx512") {
    const std::string origin = coretype_setting.empty() ? std::string("OpenBLAS chose it")
                                                        : "OPENBLAS_CORETYPE=" + coretype_setting +
                                                              " is set in the environment";
    return "OpenBLAS runs its AVX2 '" + core + "' kernel on a CPU with avx512 (" + origin +
           "); OPENBLAS_CORETYPE=" + suggested +
           " runs its AVX-512 kernels (fp32 products 1.8x faster on a Zen 5)";
  }
  return "";
}

std::string kernel_warning() {
  const char* setting = std::getenv("OPENBLAS_CORETYPE");
  return kernel_advice(core_name(), cpu_vector_extension(), amd_cpu(),
                       setting == nullptr ? std::string() : std::string(setting));
}

int product_threads(int64_t m, int64_t n, int64_t k) {
  if (precision() == Precision::kBf16 || fp32_engine() == Fp32Engine::kOneDnn ||
      !split_pays(m * n * k)) {
    return 1;
  }
  return std::max(1, split_workers(std::max(m, n)));
}

std::string wait_policy() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::string text =
      policy == nullptr || *policy == '\0' ? std::string("unset") : std::string(policy);
  // libgomp's GOMP_SPINCOUNT overrides the policy's spin: idle threads spin that many rounds
  // before they sleep (docs/design.md, "Threads").
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  if (spin != nullptr && *spin != '\0') text += std::string(", GOMP_SPINCOUNT=") + spin;
  return text;
}

void set_threads(int threads) {
  CHECK(threads >= 1) << "the thread count must be at least 1, got " << threads;
  g_threads = threads;
  omp_set_num_threads(threads);
  openblas_set_num_threads(1);
}
int threads() { return g_threads; }

}  // namespace attnlab::blas
