// Products through oneDNN's matmul: bf16 operands (train.precision: bf16) and fp32 ones (the
// engine decoding selects), and the process-wide precision and engine of float products. The only
// file that includes oneDNN's headers.
//
// Error bound (what tests/tensor/blas_onednn_test.cpp checks): rounding to bf16 (8 significant
// bits) moves each operand by at most u = 2^-8 of itself, so each term a*b moves by at most
// (2u + u^2)|a||b|, and fp32 accumulation of K terms adds at most about K * 2^-24 * sum |a||b|.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/tensor/blas.h"
#include "core/util/check.h"

namespace attnlab::blas {
namespace {

Precision g_precision = Precision::kFp32;
Fp32Engine g_fp32_engine = Fp32Engine::kOpenBlas;

// Rounds to the nearest bf16, ties to even (adding 0x7fff plus the lowest kept bit carries into
// the kept bits exactly when the dropped half is above one half, or one half with an odd kept
// part); NaN stays NaN (quiet) rather than rounding to Inf. Subnormals round like any other float
// (the CPU's vcvtneps2bf16 would flush them to zero). Branch-free, so the loop below vectorises.
inline uint16_t to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// The stored (rows x cols, row stride ld) float matrix as a dense bf16 one. On the path of every
// bf16 product: vectorised, 2,048 x 8,000 floats took 9 ms (AVX-512 clone) and 12 ms (AVX2)
// against 35 ms for the branching scalar loop it replaced, on a Xeon where that loop was 22% of
// a bf16 training step of small.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void round_matrix(
    const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = src + r * ld;
    uint16_t* out = dst + r * cols;
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) out[j] = to_bf16(row[j]);
  }
}

// What a cached primitive was made for: operand type (bf16 copies or fp32 in place), the
// transpositions, whether B is a packed weight (PackedWeights; ldb unused), sizes, leading
// dimensions, C's batch stride, batch, alpha and beta.
struct Key {
  dnnl::memory::data_type type;
  bool trans_a, trans_b, packed_b;
  int64_t m, n, k, lda, ldb, ldc, stride_c, batch;
  float alpha, beta;

  auto tied() const {
    return std::tie(type, trans_a, trans_b, packed_b, m, n, k, lda, ldb, ldc, stride_c, batch,
                    alpha, beta);
  }
  bool operator<(const Key& other) const { return tied() < other.tied(); }
};

// Per thread (products run inside OpenMP regions): oneDNN's engine and stream, the primitives made
// so far and the bf16 operand buffers. Shapes repeat (batch shapes, attention tiles, a decoder
// step's rows), so the cache is small; it is emptied if a run ever produces more shapes than
// kMaxPrimitives.
// A primitive with its three memory objects, which only get new data handles per call (creating
// them would allocate at every product).
struct Product {
  dnnl::matmul matmul;
  dnnl::memory a, b, c;
};

struct OneDnnContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, Product> primitives;
  std::vector<uint16_t> a, b;
  std::vector<std::vector<uint16_t>> kept;  // the Bf16OperandReuse scopes' rounded matrices
};
constexpr size_t kMaxPrimitives = 4096;
// Operand rounding goes parallel from this many elements (a parallel region's wake-up costs about
// as much as rounding 10^5 elements), in blocks of this many rows of one matrix.
constexpr int64_t kParallelMinRounding = int64_t{1} << 18;
constexpr int64_t kRoundBlockRows = 16;

OneDnnContext& context() {
  thread_local OneDnnContext ctx;
  return ctx;
}

// The thread's operand buffer with room for `elements`: it grows and is kept, since a training
// step rounds the same sizes every step.
uint16_t* scratch(std::vector<uint16_t>& buffer, int64_t elements) {
  if (buffer.size() < static_cast<size_t>(elements)) buffer.resize(static_cast<size_t>(elements));
  return buffer.data();
}

// `batch` logical (rows x cols) matrices `stride` elements apart; each stored row-major with row
// stride ld, or transposed (stored cols x rows).
dnnl::memory::desc matrix_desc(int64_t batch, int64_t rows, int64_t cols, bool transposed,
                               dnnl::memory::data_type type, int64_t ld, int64_t stride) {
  return dnnl::memory::desc(
      {batch, rows, cols}, type,
      transposed ? dnnl::memory::dims{stride, 1, ld} : dnnl::memory::dims{stride, ld, 1});
}

// One logical (rows x cols) matrix stored row-major with row stride ld, or transposed: the
// two-dimensional form products with a packed weight use (the packed layout is two-dimensional).
dnnl::memory::desc plain_desc(int64_t rows, int64_t cols, bool transposed,
                              dnnl::memory::data_type type, int64_t ld) {
  return dnnl::memory::desc({rows, cols}, type,
                            transposed ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1});
}

// C = alpha * A B + beta * C by the cached primitive for `key` (made from the descriptors the
// first time), on operands at a, b and c.
void run_product(const Key& key, const dnnl::memory::desc& a_desc, const void* a,
                 const dnnl::memory::desc& b_desc, const void* b, const dnnl::memory::desc& c_desc,
                 float* c) {
  OneDnnContext& ctx = context();
  auto found = ctx.primitives.find(key);
  if (found == ctx.primitives.end()) {
    if (ctx.primitives.size() >= kMaxPrimitives) ctx.primitives.clear();
    dnnl::primitive_attr attr;
    if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
    if (key.beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(key.beta);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc desc(dnnl::matmul::desc(a_desc, b_desc, c_desc), attr,
                                            ctx.engine);
    Product product{dnnl::matmul(desc), dnnl::memory(a_desc, ctx.engine, DNNL_MEMORY_NONE),
                    dnnl::memory(b_desc, ctx.engine, DNNL_MEMORY_NONE),
                    dnnl::memory(c_desc, ctx.engine, DNNL_MEMORY_NONE)};
    found = ctx.primitives.emplace(key, std::move(product)).first;
  }
  Product& product = found->second;
  // oneDNN reads A and B only; its memory objects take a non-const handle.
  product.a.set_data_handle(const_cast<void*>(a));
  product.b.set_data_handle(const_cast<void*>(b));
  product.c.set_data_handle(c);
  product.matmul.execute(
      ctx.stream,
      {{DNNL_ARG_SRC, product.a}, {DNNL_ARG_WEIGHTS, product.b}, {DNNL_ARG_DST, product.c}});
  ctx.stream.wait();
}

}  // namespace

void set_precision(Precision precision) { g_precision = precision; }
Precision precision() { return g_precision; }

Fp32Engine fp32_engine() { return g_fp32_engine; }
Fp32EngineScope::Fp32EngineScope(Fp32Engine engine) : previous_(g_fp32_engine) {
  g_fp32_engine = engine;
}
Fp32EngineScope::~Fp32EngineScope() { g_fp32_engine = previous_; }

const EnumNames<Precision>& precision_names() {
  static const EnumNames<Precision> names("train.precision",
                                          {{Precision::kFp32, "fp32"}, {Precision::kBf16, "bf16"}});
  return names;
}

std::string bf16_unsupported_reason(const std::string& flags) {
  if (has_cpu_flag(flags, "avx512_bf16") || has_cpu_flag(flags, "amx_bf16")) return "";
  std::string found;
  for (const char* flag : {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"}) {
    if (has_cpu_flag(flags, flag)) found += std::string(found.empty() ? "" : " ") + flag;
  }
  return "this CPU has no native bfloat16 products (neither avx512_bf16 nor amx_bf16 in "
         "/proc/cpuinfo; its vector flags: " +
         (found.empty() ? std::string("none of avx2/avx512") : found) + ")";
}

std::string bf16_unsupported_reason() { return bf16_unsupported_reason(cpu_flags()); }

std::string onednn_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2: return "avx2";
    default: return "older than avx2";
  }
}

namespace {

thread_local std::vector<Bf16OperandReuse*>
    t_operand_reuse;  // this thread's scopes, outermost first
thread_local int64_t t_rounded_elements = 0;
thread_local bool t_operand_reuse_enabled = true;

}  // namespace

// What gemm_bf16_strided_batched asks of the thread's Bf16OperandReuse scopes.
struct Bf16OperandReuseAccess {
  // The scope holding the matrix at `data` (rows x cols as stored, leading dimension ld) when the
  // product is a single one; else nullptr.
  static Bf16OperandReuse* holding(const float* data, int64_t rows, int64_t cols, int64_t ld,
                                   int64_t batch) {
    if (batch != 1 || !t_operand_reuse_enabled) return nullptr;
    for (Bf16OperandReuse* scope : t_operand_reuse) {
      if (data == scope->data_ && rows == scope->rows_ && cols == scope->cols_ &&
          ld == scope->ld_) {
        return scope;
      }
    }
    return nullptr;
  }
  // The scope's copy, in a buffer of the thread's for its depth that grows and is kept (a
  // training step's scopes round the same sizes every step).
  static uint16_t* copy(const Bf16OperandReuse& scope) {
    std::vector<std::vector<uint16_t>>& kept = context().kept;
    if (kept.size() <= scope.depth_) kept.resize(scope.depth_ + 1);
    const auto size = static_cast<size_t>(scope.rows_ * scope.cols_);
    if (kept[scope.depth_].size() < size) kept[scope.depth_].resize(size);
    return kept[scope.depth_].data();
  }
  static bool filled(const Bf16OperandReuse& scope) { return scope.filled_; }
  static void mark_filled(Bf16OperandReuse& scope) { scope.filled_ = true; }
};

Bf16OperandReuse::Bf16OperandReuse(const float* data, int64_t rows, int64_t cols, int64_t ld)
    : data_(data), rows_(rows), cols_(cols), ld_(ld), depth_(t_operand_reuse.size()) {
  t_operand_reuse.push_back(this);
}

Bf16OperandReuse::~Bf16OperandReuse() { t_operand_reuse.pop_back(); }

int64_t Bf16OperandReuse::rounded_elements() { return t_rounded_elements; }

int64_t Bf16OperandReuse::scratch_elements() {
  const OneDnnContext& ctx = context();
  return static_cast<int64_t>(ctx.a.size() + ctx.b.size());
}

bool Bf16OperandReuse::set_enabled(bool enabled) {
  return std::exchange(t_operand_reuse_enabled, enabled);
}

void gemm_bf16_strided_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                               float alpha, const float* a, int64_t lda, int64_t stride_a,
                               const float* b, int64_t ldb, int64_t stride_b, float beta, float* c,
                               int64_t ldc, int64_t stride_c, int64_t batch) {
  CHECK(m > 0 && n > 0 && k > 0 && batch > 0) << "bf16 gemm needs positive sizes, got m=" << m
                                              << " n=" << n << " k=" << k << " batch=" << batch;
  OneDnnContext& ctx = context();
  // Operands as dense bf16 copies in their stored orientation (A is stored k x m when
  // transposed, B n x k), matrix after matrix.
  const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  const int64_t a_size = a_rows * a_cols, b_size = b_rows * b_cols;
  // A matrix this thread's Bf16OperandReuse holds is rounded once, into the scope's copy; only
  // the other operands grow the thread's scratch (the logits gradient a scope holds would
  // otherwise leave a copy of its size in the scratch too).
  Bf16OperandReuse* const a_kept = Bf16OperandReuseAccess::holding(a, a_rows, a_cols, lda, batch);
  // (A matrix read as both operands is kept for A only: B's blocks would round into the same copy.)
  Bf16OperandReuse* b_kept = Bf16OperandReuseAccess::holding(b, b_rows, b_cols, ldb, batch);
  if (b_kept == a_kept) b_kept = nullptr;
  uint16_t* const a_copy =
      a_kept != nullptr ? Bf16OperandReuseAccess::copy(*a_kept) : scratch(ctx.a, batch * a_size);
  uint16_t* const b_copy =
      b_kept != nullptr ? Bf16OperandReuseAccess::copy(*b_kept) : scratch(ctx.b, batch * b_size);
  const bool round_a = a_kept == nullptr || !Bf16OperandReuseAccess::filled(*a_kept);
  const bool round_b = b_kept == nullptr || !Bf16OperandReuseAccess::filled(*b_kept);
  // The copies are on the critical path of every product (the matmul threads its own), so large
  // ones are split over the threads in blocks of kRoundBlockRows rows of one matrix: a training
  // step's logits gradient alone is 2,048 x 37,000 elements on base.
  const int64_t a_blocks = round_a ? (a_rows + kRoundBlockRows - 1) / kRoundBlockRows : 0;
  const int64_t b_blocks = round_b ? (b_rows + kRoundBlockRows - 1) / kRoundBlockRows : 0;
  const int64_t blocks = batch * (a_blocks + b_blocks);
  const int64_t rounded = batch * ((round_a ? a_size : 0) + (round_b ? b_size : 0));
  const bool parallel = threads() > 1 && rounded >= kParallelMinRounding && !omp_in_parallel();
#pragma omp parallel for schedule(guided) num_threads(threads()) if (parallel)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t i = block / (a_blocks + b_blocks), j = block % (a_blocks + b_blocks);
    const bool of_a = j < a_blocks;
    const int64_t first = (of_a ? j : j - a_blocks) * kRoundBlockRows;
    const int64_t rows = std::min(kRoundBlockRows, (of_a ? a_rows : b_rows) - first);
    if (of_a) {
      round_matrix(a + i * stride_a + first * lda, rows, a_cols, lda,
                   a_copy + i * a_size + first * a_cols);
    } else {
      round_matrix(b + i * stride_b + first * ldb, rows, b_cols, ldb,
                   b_copy + i * b_size + first * b_cols);
    }
  }
  t_rounded_elements += rounded;
  if (a_kept != nullptr) Bf16OperandReuseAccess::mark_filled(*a_kept);
  if (b_kept != nullptr) Bf16OperandReuseAccess::mark_filled(*b_kept);

  using dt = dnnl::memory::data_type;
  run_product(Key{dt::bf16, trans_a, trans_b, false, m, n, k, a_cols, b_cols, ldc, stride_c, batch,
                  alpha, beta},
              matrix_desc(batch, m, k, trans_a, dt::bf16, a_cols, a_size), a_copy,
              matrix_desc(batch, k, n, trans_b, dt::bf16, b_cols, b_size), b_copy,
              matrix_desc(batch, m, n, false, dt::f32, ldc, stride_c), c);
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc) {
  gemm_bf16_strided_batched(trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0,
                            1);
}

void gemm_onednn_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                     int64_t ldc) {
  CHECK(m > 0 && n > 0 && k > 0) << "oneDNN fp32 gemm needs positive sizes, got m=" << m
                                 << " n=" << n << " k=" << k;
  using dt = dnnl::memory::data_type;
  // A batch of one matrix, whose batch stride is its stored size.
  const int64_t a_rows = trans_a ? k : m, b_rows = trans_b ? n : k;
  run_product(
      Key{dt::f32, trans_a, trans_b, false, m, n, k, lda, ldb, ldc, m * ldc, 1, alpha, beta},
      matrix_desc(1, m, k, trans_a, dt::f32, lda, a_rows * lda), a,
      matrix_desc(1, k, n, trans_b, dt::f32, ldb, b_rows * ldb), b,
      matrix_desc(1, m, n, false, dt::f32, ldc, m * ldc), c);
}

namespace {

// Buffers of packed weights that end while a PackBufferReuse lives are kept for the next set to
// reuse: decoding packs a set per batch, and a fresh buffer's first touch (a page fault per 4 KiB)
// cost more than the packing itself (base: 36 ms fresh against 17 ms reused for the vocabulary's
// 76 MB). At most one set's worth is kept, and nothing once the last PackBufferReuse ends.
class PackBuffers {
 public:
  std::unique_ptr<uint8_t[]> take(size_t bytes) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = free_.find(bytes);
    if (found == free_.end()) return std::unique_ptr<uint8_t[]>(new uint8_t[bytes]);
    std::unique_ptr<uint8_t[]> buffer = std::move(found->second);
    free_.erase(found);
    return buffer;
  }
  // Keeps `buffer` while a PackBufferReuse lives; else it is freed here.
  void give(size_t bytes, std::unique_ptr<uint8_t[]> buffer) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (reusers_ > 0) free_.emplace(bytes, std::move(buffer));
  }
  // Frees the kept buffers when they exceed `bytes` (the set being returned): a model's sets
  // are all alike, so this keeps the last set's and drops any left by an earlier model.
  void trim(size_t bytes) {
    const std::lock_guard<std::mutex> lock(mutex_);
    size_t kept = kept_locked();
    for (auto it = free_.begin(); kept > bytes && it != free_.end();) {
      kept -= it->first;
      it = free_.erase(it);
    }
  }
  void begin_reuse() {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++reusers_;
  }
  void end_reuse() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (--reusers_ == 0) free_.clear();
  }
  int64_t kept_bytes() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(kept_locked());
  }

 private:
  size_t kept_locked() const {
    size_t kept = 0;
    for (const auto& entry : free_) kept += entry.first;
    return kept;
  }

  std::mutex mutex_;
  int reusers_ = 0;
  std::multimap<size_t, std::unique_ptr<uint8_t[]>> free_;
};

PackBuffers& pack_buffers() {
  static PackBuffers buffers;
  return buffers;
}

}  // namespace

// A packed weight: oneDNN's layout for B = W^T (k x n), chosen by the matmul it will feed, the
// precision it was packed in and the copy in it.
struct PackedWeights::Pack {
  Precision precision;
  int64_t n, k;
  dnnl::memory::desc desc;
  std::unique_ptr<uint8_t[]> data;

  ~Pack() {
    if (data) pack_buffers().give(desc.get_size(), std::move(data));
  }
};

namespace {

const PackedWeights* g_packed_weights = nullptr;

// The operand type oneDNN multiplies in under `p`: bf16 copies, or fp32 as stored.
dnnl::memory::data_type operand_type(Precision p) {
  return p == Precision::kBf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

// The rows a layout is asked for: a decoder step's batch. The blocked layout brgemm picks does not
// depend on them (1 to 256 rows gave the same on AVX-512), so products of any row count read it.
constexpr int64_t kPackingRows = 32;

}  // namespace

PackedWeights::PackedWeights() = default;
PackedWeights::~PackedWeights() {
  const int64_t set_bytes = bytes();
  packs_.clear();
  if (set_bytes > 0) pack_buffers().trim(static_cast<size_t>(set_bytes));
}
PackedWeights::PackedWeights(PackedWeights&&) noexcept = default;
PackedWeights& PackedWeights::operator=(PackedWeights&&) noexcept = default;

void PackedWeights::add(const float* weight, int64_t rows, int64_t cols) {
  CHECK(rows > 0 && cols > 0) << "packing a weight needs positive sizes, got " << rows << " x "
                              << cols;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  OneDnnContext& ctx = context();
  const dt type = operand_type(precision());
  const int64_t n = rows, k = cols;
  // The layout of B the matmul prefers (format any), for A of kPackingRows rows. Two-dimensional:
  // with a batch dimension oneDNN 2.6 answers the plain layout.
  const dnnl::matmul::primitive_desc chooser(
      dnnl::matmul::desc(plain_desc(kPackingRows, k, false, type, k),
                         dnnl::memory::desc({k, n}, type, tag::any),
                         plain_desc(kPackingRows, n, false, dt::f32, n)),
      ctx.engine);
  auto pack = std::make_unique<Pack>();
  pack->precision = precision();
  pack->n = n;
  pack->k = k;
  pack->desc = chooser.weights_desc();
  pack->data = pack_buffers().take(pack->desc.get_size());
  // W as stored is B = W^T transposed; bf16 packs W rounded as gemm_bf16 rounds it.
  const void* source = weight;
  std::vector<uint16_t> rounded;
  if (type == dt::bf16) {
    rounded.resize(static_cast<size_t>(n * k));
    round_matrix(weight, n, k, k, rounded.data());
    source = rounded.data();
  }
  dnnl::memory plain(plain_desc(k, n, true, type, k), ctx.engine, const_cast<void*>(source));
  dnnl::memory packed(pack->desc, ctx.engine, pack->data.get());
  dnnl::reorder(plain, packed).execute(ctx.stream, plain, packed);
  ctx.stream.wait();
  packs_[weight] = std::move(pack);
}

const PackedWeights::Pack* PackedWeights::find(const float* weight, int64_t rows, int64_t cols,
                                               int64_t ld) const {
  const auto found = packs_.find(weight);
  if (found == packs_.end() || ld != cols) return nullptr;
  const Pack& pack = *found->second;
  return pack.n == rows && pack.k == cols ? &pack : nullptr;
}

int64_t PackedWeights::bytes() const {
  int64_t total = 0;
  for (const auto& entry : packs_) total += static_cast<int64_t>(entry.second->desc.get_size());
  return total;
}

PackBufferReuse::PackBufferReuse() { pack_buffers().begin_reuse(); }
PackBufferReuse::~PackBufferReuse() { pack_buffers().end_reuse(); }
int64_t PackBufferReuse::kept_bytes() { return pack_buffers().kept_bytes(); }

PackedWeightsScope::PackedWeightsScope(const PackedWeights& weights) : previous_(g_packed_weights) {
  g_packed_weights = &weights;
}
PackedWeightsScope::~PackedWeightsScope() { g_packed_weights = previous_; }

const PackedWeights::Pack* packed_weight(const float* b, bool trans_b, int64_t n, int64_t k,
                                         int64_t ldb) {
  if (g_packed_weights == nullptr || !trans_b) return nullptr;
  return g_packed_weights->find(b, n, k, ldb);
}

void gemm_packed(bool trans_a, int64_t m, float alpha, const float* a, int64_t lda,
                 const PackedWeights::Pack& w, float beta, float* c, int64_t ldc) {
  using dt = dnnl::memory::data_type;
  CHECK(w.precision == precision())
      << "a weight packed in " << precision_names().name(w.precision)
      << " is multiplied while train.precision is " << precision_names().name(precision())
      << "; pack the weights in the precision that uses them";
  const dt type = operand_type(w.precision);
  CHECK(m > 0) << "packed gemm needs positive rows, got m=" << m;
  const int64_t n = w.n, k = w.k;
  OneDnnContext& ctx = context();
  const void* a_operand = a;
  int64_t a_ld = lda;
  if (type == dt::bf16) {
    // A few rows: rounded serially into the thread's operand buffer, densely.
    const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    uint16_t* const a_copy = scratch(ctx.a, a_rows * a_cols);
    round_matrix(a, a_rows, a_cols, lda, a_copy);
    a_operand = a_copy;
    a_ld = a_cols;
  }
  run_product(Key{type, trans_a, true, true, m, n, k, a_ld, 0, ldc, 0, 1, alpha, beta},
              plain_desc(m, k, trans_a, type, a_ld), a_operand, w.desc, w.data.get(),
              plain_desc(m, n, false, dt::f32, ldc), c);
}

}  // namespace attnlab::blas
