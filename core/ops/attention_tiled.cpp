// Tiled attention with an online softmax (forward) and tile-by-tile recomputation (backward).
// Per query row t, over key tiles j (FlashAttention-2):
//   forward   m' = max(m, max_s x_ts),  l' = exp(m - m') l + sum_s exp(x_ts - m'),
//             O' = exp(m - m') O + sum_s drop(exp(x_ts - m')) V_s;   at the end O /= l,
//             lse = m + log l
//   backward  P = exp(x - lse), dV_j += drop(P)^T dO, dP = drop'(dO V_j^T),
//             dS = P * (dP - D) with D = rowsum(dO * O), dQ += scale dS K_j, dK_j += scale dS^T Q
// where x = scale * Q K^T. D = sum_s P_ts dP_ts because O_t = sum_s drop(P)_ts V_s.
// Legend: B batch, H heads, T queries, S keys, K d_k, V d_v; Bq, Bk query and key tile sizes.
#include "core/ops/attention_tiled.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/tensor/blas.h"
#include "core/util/rng.h"

namespace attnlab::ops {
namespace {

// OpenBLAS runs a GEMM of at most this many multiply-adds on the calling thread
// (SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD in its interface/gemm.c).
constexpr int64_t kSingleThreadGemm = 65536 * 4;
constexpr int64_t kScratchPerWorker =
    2 * kAttentionQueryTileMax * kAttentionKeyTile + kAttentionQueryTileMax;

struct TiledDims {
  int64_t batch, heads, queries, keys, key_width, value_width;
  int64_t pairs() const { return batch * heads; }
};

template <typename T>
TiledDims check_tiled_shapes(TensorView<const T> q, TensorView<const T> k, TensorView<const T> v,
                             const Shape& out, const Shape& logsumexp, int64_t scratch,
                             float dropout_p) {
  CHECK(q.shape().rank() == 4) << "tiled attention q must be (B,H,T,K), got " << q.shape().str();
  CHECK(k.shape().rank() == 4) << "tiled attention k must be (B,H,S,K), got " << k.shape().str();
  TiledDims d{q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3)};
  check_shape(k.shape(), Shape({d.batch, d.heads, d.keys, d.key_width}), "tiled attention k");
  check_shape(v.shape(), Shape({d.batch, d.heads, d.keys, d.value_width}), "tiled attention v");
  check_shape(out, Shape({d.batch, d.heads, d.queries, d.value_width}), "tiled attention output");
  check_shape(logsumexp, Shape({d.batch, d.heads, d.queries}), "tiled attention logsumexp");
  CHECK(scratch >= kScratchPerWorker)
      << "tiled attention scratch holds " << scratch << " values, needs at least "
      << kScratchPerWorker << " (attention_tiled_scratch_elements(1))";
  CHECK(dropout_p >= 0.0f && dropout_p < 1.0f)
      << "attention dropout must be in [0, 1), got " << dropout_p;
  return d;
}

bool key_visible(const AttentionMask& mask, int64_t b, int64_t t, int64_t s, int64_t keys) {
  if (mask.key_padding != nullptr && mask.key_padding[b * keys + s] != 0) return false;
  return !mask.causal || s <= t + mask.query_offset;
}

// Key tiles starting at or after this index are hidden from every query row below `row_end`.
int64_t causal_key_end(const AttentionMask& mask, int64_t row_end, int64_t keys) {
  if (!mask.causal) return keys;
  return std::clamp<int64_t>(row_end - 1 + mask.query_offset + 1, 0, keys);
}

int workers_for(int64_t scratch, int64_t items) {
  const int64_t fit = scratch / kScratchPerWorker;
  return static_cast<int>(std::max<int64_t>(
      1, std::min<int64_t>({static_cast<int64_t>(attention_tiled_workers()), fit, items})));
}

}  // namespace

int64_t attention_query_tile(int64_t key_width, int64_t value_width) {
  const int64_t width = std::max<int64_t>({key_width, value_width, 1});
  return std::clamp<int64_t>(kSingleThreadGemm / (kAttentionKeyTile * width), 1,
                             kAttentionQueryTileMax);
}

int attention_tiled_workers() { return std::max(1, omp_get_max_threads()); }

int64_t attention_tiled_scratch_elements(int workers) {
  CHECK(workers >= 1) << "tiled attention needs at least one worker, got " << workers;
  return static_cast<int64_t>(workers) * kScratchPerWorker;
}

template <typename T>
void attention_tiled_forward(TensorView<T> out, TensorView<T> logsumexp, TensorView<T> scratch,
                             TensorView<const T> q, TensorView<const T> k, TensorView<const T> v,
                             const AttentionMask& mask, T scale, float dropout_p,
                             uint64_t dropout_key) {
  const TiledDims d =
      check_tiled_shapes<T>(q, k, v, out.shape(), logsumexp.shape(), scratch.numel(), dropout_p);
  const int64_t Bq = attention_query_tile(d.key_width, d.value_width), Bk = kAttentionKeyTile;
  const int64_t blocks = (d.queries + Bq - 1) / Bq;
  const int64_t items = d.pairs() * blocks;
  const int workers = workers_for(scratch.numel(), items);
  const T keep_scale = T(1) / (T(1) - static_cast<T>(dropout_p));
  const T minus_infinity = -std::numeric_limits<T>::infinity();
  const bool parallel = workers > 1 && d.pairs() * d.queries * d.keys >= kParallelMinElements;

#pragma omp parallel for schedule(dynamic) num_threads(workers) if (parallel)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t pair = item / blocks, b = pair / d.heads;
    const int64_t t0 = (item % blocks) * Bq, rows = std::min(Bq, d.queries - t0);
    T* tile = scratch.data() + static_cast<int64_t>(omp_get_thread_num()) * kScratchPerWorker;
    T* row_sum = tile + 2 * kAttentionQueryTileMax * Bk;    // l, (Bq)
    T* row_max = logsumexp.data() + pair * d.queries + t0;  // m, (Bq); becomes lse
    T* o = out.data() + (pair * d.queries + t0) * d.value_width;
    const T* q_block = q.data() + (pair * d.queries + t0) * d.key_width;
    std::fill(o, o + rows * d.value_width, T(0));
    std::fill(row_sum, row_sum + rows, T(0));
    std::fill(row_max, row_max + rows, minus_infinity);
    const int64_t key_end = causal_key_end(mask, t0 + rows, d.keys);
    for (int64_t s0 = 0; s0 < key_end; s0 += Bk) {
      const int64_t cols = std::min(Bk, key_end - s0);
      // x (Bq,Bk) = scale * Q_i (Bq,K) K_j^T (K,Bk)
      blas::gemm<T>(false, true, rows, cols, d.key_width, scale, q_block, d.key_width,
                    k.data() + (pair * d.keys + s0) * d.key_width, d.key_width, T(0), tile, Bk);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t0 + r;
        T* x = tile + r * Bk;
        T tile_max = minus_infinity;
        for (int64_t c = 0; c < cols; ++c) {
          if (key_visible(mask, b, t, s0 + c, d.keys) && x[c] > tile_max) tile_max = x[c];
        }
        const T new_max = std::max(row_max[r], tile_max);
        if (new_max == minus_infinity) {  // nothing visible yet: contributes nothing
          std::fill(x, x + cols, T(0));
          continue;
        }
        const T correction = std::exp(row_max[r] - new_max);  // 0 when the row was empty
        if (correction != T(1)) {
          row_sum[r] *= correction;
          T* o_row = o + r * d.value_width;
          for (int64_t j = 0; j < d.value_width; ++j) o_row[j] *= correction;
        }
        row_max[r] = new_max;
        T sum = T(0);
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t s = s0 + c;
          const T p = key_visible(mask, b, t, s, d.keys) ? std::exp(x[c] - new_max) : T(0);
          sum += p;
          if (dropout_p == 0.0f) {
            x[c] = p;
          } else {
            const auto index = static_cast<uint64_t>((pair * d.queries + t) * d.keys + s);
            x[c] = uniform_at(dropout_key, index) < dropout_p ? T(0) : p * keep_scale;
          }
        }
        row_sum[r] += sum;
      }
      // O_i (Bq,V) += drop(P) (Bq,Bk) V_j (Bk,V)
      blas::gemm<T>(false, false, rows, d.value_width, cols, T(1), tile, Bk,
                    v.data() + (pair * d.keys + s0) * d.value_width, d.value_width, T(1), o,
                    d.value_width);
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (row_sum[r] == T(0)) {  // every key hidden: output 0 (never written), lse -inf
        row_max[r] = minus_infinity;
        continue;
      }
      const T inverse = T(1) / row_sum[r];
      T* o_row = o + r * d.value_width;
      for (int64_t j = 0; j < d.value_width; ++j) o_row[j] *= inverse;
      row_max[r] += std::log(row_sum[r]);
    }
  }
}

template <typename T>
void attention_tiled_backward(TensorView<T> dq, TensorView<T> dk, TensorView<T> dv, T* dscale,
                              TensorView<const T> dout, TensorView<const T> q,
                              TensorView<const T> k, TensorView<const T> v, TensorView<const T> out,
                              TensorView<const T> logsumexp, TensorView<T> scratch,
                              const AttentionMask& mask, T scale, float dropout_p,
                              uint64_t dropout_key) {
  const TiledDims d =
      check_tiled_shapes<T>(q, k, v, out.shape(), logsumexp.shape(), scratch.numel(), dropout_p);
  check_shape(dout.shape(), out.shape(), "tiled attention dout");
  check_shape(dq.shape(), q.shape(), "tiled attention dq");
  check_shape(dk.shape(), k.shape(), "tiled attention dk");
  check_shape(dv.shape(), v.shape(), "tiled attention dv");
  const int64_t Bq = attention_query_tile(d.key_width, d.value_width), Bk = kAttentionKeyTile;
  const int64_t K = d.key_width, V = d.value_width;
  const int workers = workers_for(scratch.numel(), d.pairs());
  const T keep_scale = T(1) / (T(1) - static_cast<T>(dropout_p));
  const bool parallel = workers > 1 && d.pairs() * d.queries * d.keys >= kParallelMinElements;

  // One worker owns a (batch, head) pair: dK and dV sum over query tiles, dQ over key tiles.
#pragma omp parallel for schedule(dynamic) num_threads(workers) if (parallel)
  for (int64_t pair = 0; pair < d.pairs(); ++pair) {
    const int64_t b = pair / d.heads;
    T* probs = scratch.data() + static_cast<int64_t>(omp_get_thread_num()) * kScratchPerWorker;
    T* dprobs = probs + kAttentionQueryTileMax * Bk;
    T* delta = dprobs + kAttentionQueryTileMax * Bk;  // D, (Bq)
    const T* k_pair = k.data() + pair * d.keys * K;
    const T* v_pair = v.data() + pair * d.keys * V;
    T* dk_pair = dk.data() + pair * d.keys * K;
    T* dv_pair = dv.data() + pair * d.keys * V;
    std::fill(dk_pair, dk_pair + d.keys * K, T(0));
    std::fill(dv_pair, dv_pair + d.keys * V, T(0));
    for (int64_t t0 = 0; t0 < d.queries; t0 += Bq) {
      const int64_t rows = std::min(Bq, d.queries - t0);
      const T* q_block = q.data() + (pair * d.queries + t0) * K;
      const T* dout_block = dout.data() + (pair * d.queries + t0) * V;
      const T* out_block = out.data() + (pair * d.queries + t0) * V;
      const T* lse = logsumexp.data() + pair * d.queries + t0;
      T* dq_block = dq.data() + (pair * d.queries + t0) * K;
      std::fill(dq_block, dq_block + rows * K, T(0));
      for (int64_t r = 0; r < rows; ++r) {
        T dot = T(0);
        for (int64_t j = 0; j < V; ++j) dot += dout_block[r * V + j] * out_block[r * V + j];
        delta[r] = dot;
      }
      const int64_t key_end = causal_key_end(mask, t0 + rows, d.keys);
      for (int64_t s0 = 0; s0 < key_end; s0 += Bk) {
        const int64_t cols = std::min(Bk, key_end - s0);
        // P (Bq,Bk) = exp(scale * Q_i K_j^T - lse), 0 on hidden keys.
        blas::gemm<T>(false, true, rows, cols, K, scale, q_block, K, k_pair + s0 * K, K, T(0),
                      probs, Bk);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t t = t0 + r;
          for (int64_t c = 0; c < cols; ++c) {
            T& p = probs[r * Bk + c];
            p = key_visible(mask, b, t, s0 + c, d.keys) ? std::exp(p - lse[r]) : T(0);
          }
        }
        auto kept = [&](int64_t r, int64_t c) {
          const auto index = static_cast<uint64_t>((pair * d.queries + t0 + r) * d.keys + s0 + c);
          return uniform_at(dropout_key, index) >= dropout_p;
        };
        // dV_j (Bk,V) += drop(P)^T (Bk,Bq) dO_i (Bq,V)
        const T* dropped = probs;
        if (dropout_p > 0.0f) {
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
              dprobs[r * Bk + c] = kept(r, c) ? probs[r * Bk + c] * keep_scale : T(0);
            }
          }
          dropped = dprobs;
        }
        blas::gemm<T>(true, false, cols, V, rows, T(1), dropped, Bk, dout_block, V, T(1),
                      dv_pair + s0 * V, V);
        // dP (Bq,Bk) = dO_i (Bq,V) V_j^T (V,Bk), back through dropout; dS = P * (dP - D).
        blas::gemm<T>(false, true, rows, cols, V, T(1), dout_block, V, v_pair + s0 * V, V, T(0),
                      dprobs, Bk);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) {
            T& p = probs[r * Bk + c];
            // P = 1 makes the row a point mass, whose softmax Jacobian diag(p) - p p^T is exactly
            // 0. dP - D is then a difference of two sums of the same terms in different orders:
            // not 0 but a rounding error, which the logit scale would multiply (at a scale of
            // 1e30, into infinities). The standard kernel's dS is exactly 0 there; so is this.
            if (p == T(1)) {
              p = T(0);
              continue;
            }
            T g = dprobs[r * Bk + c];
            if (dropout_p > 0.0f) g = kept(r, c) ? g * keep_scale : T(0);
            p *= g - delta[r];
          }
        }
        // dQ_i (Bq,K) += dS K_j, unscaled until dscale is taken; dK_j (Bk,K) += scale dS^T Q_i.
        blas::gemm<T>(false, false, rows, K, cols, T(1), probs, Bk, k_pair + s0 * K, K, T(1),
                      dq_block, K);
        blas::gemm<T>(true, false, cols, K, rows, scale, probs, Bk, q_block, K, T(1),
                      dk_pair + s0 * K, K);
      }
    }
  }
  // dscale = sum(dS * Q K^T) = sum(q * dS K), summed in double in a fixed order.
  const int64_t query_elements = q.numel();
  if (dscale != nullptr) {
    double sum = 0.0;
    for (int64_t i = 0; i < query_elements; ++i) sum += static_cast<double>(q[i]) * dq[i];
    *dscale += static_cast<T>(sum);
  }
  for (int64_t i = 0; i < query_elements; ++i) dq[i] *= scale;
}

template void attention_tiled_forward<float>(TensorView<float>, TensorView<float>,
                                             TensorView<float>, TensorView<const float>,
                                             TensorView<const float>, TensorView<const float>,
                                             const AttentionMask&, float, float, uint64_t);
template void attention_tiled_backward<float>(TensorView<float>, TensorView<float>,
                                              TensorView<float>, float*, TensorView<const float>,
                                              TensorView<const float>, TensorView<const float>,
                                              TensorView<const float>, TensorView<const float>,
                                              TensorView<const float>, TensorView<float>,
                                              const AttentionMask&, float, float, uint64_t);
template void attention_tiled_forward<double>(TensorView<double>, TensorView<double>,
                                              TensorView<double>, TensorView<const double>,
                                              TensorView<const double>, TensorView<const double>,
                                              const AttentionMask&, double, float, uint64_t);
template void attention_tiled_backward<double>(TensorView<double>, TensorView<double>,
                                               TensorView<double>, double*,
                                               TensorView<const double>, TensorView<const double>,
                                               TensorView<const double>, TensorView<const double>,
                                               TensorView<const double>, TensorView<const double>,
                                               TensorView<double>, const AttentionMask&, double,
                                               float, uint64_t);

}  // namespace attnlab::ops
