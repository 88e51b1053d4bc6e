// Memory-efficient scaled dot-product attention: the same function as ops::attention_forward /
// attention_backward (core/ops/ops.h), computed over tiles of keys with an online softmax, so no
// (B,H,T,S) score matrix is ever stored. Forward saves only the output and the per-row
// logsumexp; backward recomputes the probabilities tile by tile (FlashAttention-2):
//   P = exp(scale * Q K^T - lse),  D = rowsum(dO * O),  dS = P * (dP - D),  dP = dO V^T.
// Same masks (key padding, causal with query_offset, fully hidden rows -> zeros), same dropout on
// the probabilities (element (pair, t, s) kept iff uniform_at(key, pair*T*S + t*S + s) >= p, as
// in the standard path), same learned-scale gradient. A row whose recomputed P is exactly 1 (a
// point mass, as every row is at an extreme model.attention_scale) gets dS = 0, as the standard
// path computes it, instead of the rounding error of dP - D times the scale.
//
// Legend: B batch, H heads, T queries, S keys, K d_k, V d_v.
#pragma once

#include <cstdint>

#include "core/ops/ops.h"

namespace attnlab::ops {

// Keys per tile. The query tile is chosen per call (attention_query_tile) so that every tile
// product Bq x Bk x max(K,V) stays at or below OpenBLAS's single-thread threshold (65536 * 4
// multiply-adds): tile products then never start BLAS threads from inside the op's own OpenMP
// workers.
inline constexpr int64_t kAttentionKeyTile = 64;
inline constexpr int64_t kAttentionQueryTileMax = 64;

// Query rows per tile for heads of widths K and V: in [1, kAttentionQueryTileMax].
int64_t attention_query_tile(int64_t key_width, int64_t value_width);
// Workers the op would use now (the OpenMP thread limit).
int attention_tiled_workers();
// Scratch elements for `workers` workers: two (Bq,Bk) tiles and one Bq row vector each. It does
// not depend on the sequence lengths: the op's memory beyond its inputs and outputs is O(1) in
// T and S (plus the O(T) logsumexp it saves).
int64_t attention_tiled_scratch_elements(int workers);

// out = dropout(softmax(scale * Q K^T + mask)) V. logsumexp[b,h,t] = log sum_s exp(logit_ts)
// over visible keys, -inf for a row whose keys are all hidden (its output is 0).
// scratch holds at least attention_tiled_scratch_elements(1) values; the op runs on
// min(attention_tiled_workers(), scratch / per-worker) workers.
template <typename T>
void attention_tiled_forward(TensorView<T> out,        // (B,H,T,V)
                             TensorView<T> logsumexp,  // (B,H,T), saved
                             TensorView<T> scratch,    // (>= attention_tiled_scratch_elements(1))
                             TensorView<const T> q,    // (B,H,T,K)
                             TensorView<const T> k,    // (B,H,S,K)
                             TensorView<const T> v,    // (B,H,S,V)
                             const AttentionMask& mask, T scale, float dropout_p = 0.0f,
                             uint64_t dropout_key = 0);

// dq, dk, dv assigned; dscale (nullable) += sum(dlogits * Q K^T), the gradient of a learned scale.
template <typename T>
void attention_tiled_backward(TensorView<T> dq,          // (B,H,T,K), assigned
                              TensorView<T> dk,          // (B,H,S,K), assigned
                              TensorView<T> dv,          // (B,H,S,V), assigned
                              T* dscale,                 // scalar, += (nullptr if fixed)
                              TensorView<const T> dout,  // (B,H,T,V)
                              TensorView<const T> q, TensorView<const T> k, TensorView<const T> v,
                              TensorView<const T> out,        // (B,H,T,V) from forward
                              TensorView<const T> logsumexp,  // (B,H,T) from forward
                              TensorView<T> scratch,  // (>= attention_tiled_scratch_elements(1))
                              const AttentionMask& mask, T scale, float dropout_p = 0.0f,
                              uint64_t dropout_key = 0);

}  // namespace attnlab::ops
