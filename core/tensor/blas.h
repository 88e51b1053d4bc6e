// The only door to BLAS: row-major GEMM (optionally transposed, optionally over strided batches)
// in float and double, the OpenBLAS kernel report, and the precision and engine of float
// products: fp32 through OpenBLAS's sgemm (or oneDNN's fp32 matmul for decoding's few-row
// products, with weights packed once where they repeat), or bf16 operands through oneDNN's matmul
// (blas_onednn.cpp; no other file includes cblas.h or oneDNN's headers).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "core/util/enum_names.h"

namespace attnlab::blas {

// Operand precision of float products, process-wide (as PyTorch's
// torch.set_float32_matmul_precision). fp32: OpenBLAS's sgemm. bf16: A and B rounded to bfloat16
// (round to nearest even), multiplied with fp32 accumulation into fp32 C by oneDNN; alpha, beta
// and C stay fp32. Double products are never affected (gradient checks stay exact).
enum class Precision { kFp32, kBf16 };
void set_precision(Precision precision);
Precision precision();
// "fp32" | "bf16": the names of train.precision, --precision and the logs, declared once.
const EnumNames<Precision>& precision_names();

// Why bf16 products cannot run natively on a CPU with these /proc/cpuinfo flags ("" when they
// can: avx512_bf16 or amx_bf16 present). Names the flags found that matter. Pure, for tests.
std::string bf16_unsupported_reason(const std::string& cpu_flags);
// The same for this machine's CPU.
std::string bf16_unsupported_reason();
// The instruction set oneDNN's kernels use on this CPU ("avx512_core_bf16", "avx512_core_amx").
std::string onednn_isa();

// The library gemm<float> runs fp32 products on (precision() == kFp32), process-wide. OpenBLAS's
// sgemm by default: training's products have thousands of rows, where sgemm runs at its peak.
// A decoder step's products have one row per sentence or beam; oneDNN's fp32 matmul runs those
// faster (its brgemm kernels on AVX-512 pack the weight in smaller panels; the decode_gemm rows of
// docs/results/bench.md), so DecoderState::step selects it while it runs. Strided batches
// (attention), double products and bf16 products are unaffected. Results differ from sgemm's
// only in rounding (another summation order); each engine is deterministic.
enum class Fp32Engine { kOpenBlas, kOneDnn };
Fp32Engine fp32_engine();
// Selects `engine` for gemm<float> until destroyed, then restores the engine it found.
class Fp32EngineScope {
 public:
  explicit Fp32EngineScope(Fp32Engine engine);
  ~Fp32EngineScope();
  Fp32EngineScope(const Fp32EngineScope&) = delete;
  Fp32EngineScope& operator=(const Fp32EngineScope&) = delete;

 private:
  Fp32Engine previous_;
};

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

// The float product with bf16 operands whatever precision() is (oneDNN; the CPU must have native
// bf16, see bf16_unsupported_reason). Primitives are made once per shape, transposition, leading
// dimensions, alpha and beta and reused; operand buffers grow and are kept, per thread.
void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc);
// The strided batch as one oneDNN call (attention's per-head products are small: one call per
// batch instead of one per matrix saves oneDNN's per-call cost).
void gemm_bf16_strided_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                               float alpha, const float* a, int64_t lda, int64_t stride_a,
                               const float* b, int64_t ldb, int64_t stride_b, float beta, float* c,
                               int64_t ldc, int64_t stride_c, int64_t batch);

// Rounds one matrix to bf16 once for several bf16 products: while the scope lives, on this
// thread, the first bf16 product that reads the float matrix at `data` (rows x cols as stored,
// leading dimension ld; as either operand, transposed or not) keeps its bf16 copy, and the later
// ones read that copy instead of rounding the matrix again. For linear_backward, whose two
// products both read the output gradient, and the loss's blocks, which all read the output
// weight (on base, 37,000 x 512, twice per block of rows). The matrix must not change while the
// scope lives. Scopes nest (each holds its own matrix; inner ones end first); batched products
// (batch > 1) and other matrices round as always.
class Bf16OperandReuse {
 public:
  Bf16OperandReuse(const float* data, int64_t rows, int64_t cols, int64_t ld);
  ~Bf16OperandReuse();
  Bf16OperandReuse(const Bf16OperandReuse&) = delete;
  Bf16OperandReuse& operator=(const Bf16OperandReuse&) = delete;
  // Elements the bf16 products (gemm_bf16, gemm_bf16_strided_batched) of this thread have
  // rounded so far (for tests).
  static int64_t rounded_elements();
  // Elements of this thread's operand scratch, where the operands no scope holds are rounded; it
  // grows to the largest of them and is kept (for tests: a held matrix must not grow it).
  static int64_t scratch_elements();
  // While disabled (on this thread; enabled by default) scopes hold nothing and every product
  // rounds its operands, so that tests can compare results with and without reuse. Returns the
  // previous setting.
  static bool set_enabled(bool enabled);

 private:
  friend struct Bf16OperandReuseAccess;
  const float* data_;
  int64_t rows_, cols_, ld_;
  size_t depth_;  // scopes of this thread around this one
  bool filled_ = false;
};

// A Bf16OperandReuse where a product of T rounds its operands to bf16 (float products under
// precision() bf16), and nothing otherwise (double, fp32): one line opens it in code templated on
// the element type.
template <typename T>
class Bf16OperandReuseIfBf16 {
 public:
  Bf16OperandReuseIfBf16(const T* data, int64_t rows, int64_t cols, int64_t ld) {
    if constexpr (std::is_same_v<T, float>) {
      if (precision() == Precision::kBf16) scope_.emplace(data, rows, cols, ld);
    }
  }

 private:
  std::optional<Bf16OperandReuse> scope_;
};

// The float product by oneDNN's fp32 matmul whatever fp32_engine() is, operands read in place
// (primitives cached as gemm_bf16's, per thread).
void gemm_onednn_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                     int64_t ldc);

// Weights copied once into the layout oneDNN's matmul reads fastest, for many products of a few
// rows by the same weights: a decoder step's, with one row per sentence or beam. Unpacked, each
// such product re-packs its weight (oneDNN and OpenBLAS alike): at one thread on a Xeon with
// AVX-512, base's 32-row projections ran at 130 GFLOP/s from W and 171 packed, its FFN products
// at 116 and 141 (attnlab_kernels' decode_gemm_unpacked and decode_gemm rows); in bf16 packing
// also spares every step the rounding of its weights (base's greedy decoding took half the time).
// oneDNN picks the layout: blocked on AVX-512 (brgemm), W^T as a plain matrix on AVX2 (gemm:jit). A
// product x W^T (gemm<float> with trans_b, B = W as stored) whose W is in the set active in a
// PackedWeightsScope reads the packed copy instead, in the precision the set was packed in (bf16
// packs the rounded operands, so no product re-rounds its weight). A copy is taken when a weight is
// added: it must not change while the set is used. Float only.
class PackedWeights {
 public:
  struct Pack;  // a packed copy and its layout (blas_onednn.cpp)

  PackedWeights();
  ~PackedWeights();
  PackedWeights(PackedWeights&&) noexcept;
  PackedWeights& operator=(PackedWeights&&) noexcept;

  // Packs the dense row-major weight W (rows x cols) at `weight`, for products x W^T with
  // n = rows and k = cols, in the current precision().
  void add(const float* weight, int64_t rows, int64_t cols);
  // The pack of the weight at `weight` stored (rows x cols) with row stride ld, if added; else
  // nullptr.
  const Pack* find(const float* weight, int64_t rows, int64_t cols, int64_t ld) const;
  // Bytes of the packed copies.
  int64_t bytes() const;

 private:
  std::unordered_map<const float*, std::unique_ptr<Pack>> packs_;
};

// While one lives, the buffers of packed sets that end are kept for the next set to reuse (at
// most one set's worth): a decoding of many batches makes a set per batch, and fresh buffers'
// page faults cost more than the packing. Decoding a whole split holds one (Trainer::evaluate,
// translate_set); when the last ends the kept buffers are freed, so no memory stays held between
// evaluations.
class PackBufferReuse {
 public:
  PackBufferReuse();
  ~PackBufferReuse();
  PackBufferReuse(const PackBufferReuse&) = delete;
  PackBufferReuse& operator=(const PackBufferReuse&) = delete;
  // Bytes kept for reuse now (for tests).
  static int64_t kept_bytes();
};

// Makes `weights` the packed set gemm<float> consults, until destroyed; then restores the set it
// found (none at first). Process-wide, as the fp32 engine.
class PackedWeightsScope {
 public:
  explicit PackedWeightsScope(const PackedWeights& weights);
  ~PackedWeightsScope();
  PackedWeightsScope(const PackedWeightsScope&) = delete;
  PackedWeightsScope& operator=(const PackedWeightsScope&) = delete;

 private:
  const PackedWeights* previous_;
};

// C(M,N) = alpha * op(A) W^T + beta * C with W packed (the product gemm<float> runs for it).
// Fails if the pack's precision is not precision().
void gemm_packed(bool trans_a, int64_t m, float alpha, const float* a, int64_t lda,
                 const PackedWeights::Pack& w, float beta, float* c, int64_t ldc);
// The pack gemm<float> reads for B (n = W's rows, k = its columns) in the active scope, or nullptr:
// only for B = W as stored (trans_b) when W was added to the active set.
const PackedWeights::Pack* packed_weight(const float* b, bool trans_b, int64_t n, int64_t k,
                                         int64_t ldb);

// The same product by three loops: the oracle for tests, never used on the hot path.
template <typename T>
void gemm_naive(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// The kernel OpenBLAS chose at load time ("SkylakeX", "Haswell", "Prescott", ...).
std::string core_name();
// The flags line of /proc/cpuinfo ("" when unreadable), and whether `flags` holds `flag`.
std::string cpu_flags();
bool has_cpu_flag(const std::string& flags, const std::string& flag);
// The CPU's best vector extension as the OS reports it: "avx512", "avx2" or "" for neither.
std::string cpu_vector_extension();
// A one-line warning when OpenBLAS runs a kernel narrower than the CPU's vectors, else "": a
// generic kernel on a CPU with AVX2 or AVX-512 (`extension` as cpu_vector_extension says), or an
// AVX2 kernel (Haswell, Zen) on an AVX-512 one. `coretype_setting` is OPENBLAS_CORETYPE ("" when
// unset), which the warning names as the kernel's origin.
std::string kernel_advice(const std::string& core, const std::string& extension, bool amd_cpu,
                          const std::string& coretype_setting);
// kernel_advice for this process: OpenBLAS's kernel, this CPU and this environment.
std::string kernel_warning();
// The process's compute threads: OpenMP's team size for every parallel op, and the threads a large
// float product is split over (blas.cpp). OpenBLAS itself always runs one thread, so the process
// has one thread pool. Starts at OpenMP's default (OMP_NUM_THREADS, else the cores).
void set_threads(int threads);
int threads();
// The threads gemm<float> runs an (m x k) by (k x n) fp32 product on, here and now: 1 for small
// products, inside a parallel region and on oneDNN (bf16, or the oneDNN fp32 engine: oneDNN
// threads its own), else up to threads().
int product_threads(int64_t m, int64_t n, int64_t k);
// OMP_WAIT_POLICY as the process started with it (libgomp reads it only at load; attnlab sets
// passive, cluster::settle_thread_environment), or "unset".
std::string wait_policy();

}  // namespace attnlab::blas
