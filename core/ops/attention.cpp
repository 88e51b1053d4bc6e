// Scaled dot-product attention for a batch of heads, with key padding and causal masks:
//   logits = scale * Q K^T,  probs = softmax(logits + mask),  out = dropout(probs) V.
// Legend: B batch, H heads, T queries, S keys, K d_k, V d_v.
//
// Speed: causal masking is a row length and padding a select, so each row is one call of
// softmax.cpp's vectorised row kernels (softmax_row, softmax_backward_row).
#include <cmath>

#include "core/ops/ops.h"
#include "core/tensor/blas.h"
#include "core/util/rng.h"

namespace attnlab::ops {
namespace {

struct AttentionDims {
  int64_t batch, heads, queries, keys, key_width, value_width;
};

template <typename T>
AttentionDims check_attention_shapes(TensorView<const T> q, TensorView<const T> k,
                                     TensorView<const T> v, const Shape& out, const Shape& probs) {
  CHECK(q.shape().rank() == 4) << "attention q must be (B,H,T,K), got " << q.shape().str();
  AttentionDims dims{q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3)};
  check_shape(k.shape(), Shape({dims.batch, dims.heads, dims.keys, dims.key_width}), "attention k");
  check_shape(v.shape(), Shape({dims.batch, dims.heads, dims.keys, dims.value_width}),
              "attention v");
  check_shape(out, Shape({dims.batch, dims.heads, dims.queries, dims.value_width}),
              "attention output");
  check_shape(probs, Shape({dims.batch, dims.heads, dims.queries, dims.keys}), "attention probs");
  return dims;
}

// Keys [0, visible_keys) of query t may be seen (before padding): all S, or s <= t + offset.
int64_t visible_keys(const AttentionMask& mask, int64_t t, int64_t keys) {
  if (!mask.causal) return keys;
  const int64_t limit = t + mask.query_offset + 1;
  return limit < 0 ? 0 : (limit < keys ? limit : keys);
}

// One query per (batch, head) pair, without dropout: incremental decoding. Its B*H products of a
// 1 x K row with a K x S matrix are too small for a GEMM call each (a call costs more than its
// K*S multiply-adds: 18% of a base model's greedy decoding went to them), so each pair's scores
// are dot products, softmax'd in place, and its output the probability-weighted sum of its value
// rows. The dot products' sums are reassociated into vector lanes (omp simd), so they may differ
// from sgemm's in the last bits.
template <typename T>
void one_query_attention(const AttentionDims& d, T* out, T* probs, const T* q, const T* k,
                         const T* v, const AttentionMask& mask, T scale) {
  const int64_t pairs = d.batch * d.heads;
  const int64_t work = pairs * d.keys * (d.key_width + d.value_width);
#pragma omp parallel for schedule(guided) if (work >= kParallelMinElements)
  for (int64_t pair = 0; pair < pairs; ++pair) {
    const T* query = q + pair * d.key_width;
    T* scores = probs + pair * d.keys;
    for (int64_t s = 0; s < d.keys; ++s) {
      const T* key = k + (pair * d.keys + s) * d.key_width;
      T dot = T(0);
#pragma omp simd reduction(+ : dot)
      for (int64_t j = 0; j < d.key_width; ++j) dot += query[j] * key[j];
      scores[s] = scale * dot;
    }
    const int64_t b = pair / d.heads;
    const uint8_t* padding = mask.key_padding != nullptr ? mask.key_padding + b * d.keys : nullptr;
    softmax_row(scores, padding, visible_keys(mask, 0, d.keys), d.keys);
    T* target = out + pair * d.value_width;
    for (int64_t j = 0; j < d.value_width; ++j) target[j] = T(0);
    for (int64_t s = 0; s < d.keys; ++s) {
      const T weight = scores[s];
      if (weight == T(0)) continue;  // hidden keys (and underflow) add nothing
      const T* value = v + (pair * d.keys + s) * d.value_width;
#pragma omp simd
      for (int64_t j = 0; j < d.value_width; ++j) target[j] += weight * value[j];
    }
  }
}

}  // namespace

template <typename T>
void attention_forward(TensorView<T> out, TensorView<T> probs, TensorView<const T> q,
                       TensorView<const T> k, TensorView<const T> v, const AttentionMask& mask,
                       T scale, float dropout_p, uint64_t dropout_key) {
  const AttentionDims d = check_attention_shapes<T>(q, k, v, out.shape(), probs.shape());
  CHECK(dropout_p >= 0.0f && dropout_p < 1.0f)
      << "attention dropout must be in [0, 1), got " << dropout_p;
  if (d.queries == 1 && dropout_p == 0.0f) {
    one_query_attention<T>(d, out.data(), probs.data(), q.data(), k.data(), v.data(), mask, scale);
    return;
  }
  const int64_t pairs = d.batch * d.heads;
  const int64_t score_size = d.queries * d.keys;
  // logits (T,S) = scale * Q (T,K) K^T (K,S), for every (batch, head) pair.
  blas::gemm_strided_batched<T>(false, true, d.queries, d.keys, d.key_width, scale, q.data(),
                                d.key_width, d.queries * d.key_width, k.data(), d.key_width,
                                d.keys * d.key_width, T(0), probs.data(), d.keys, score_size,
                                pairs);
#pragma omp parallel for schedule(guided) if (pairs * score_size >= kParallelMinElements)
  for (int64_t pair = 0; pair < pairs; ++pair) {
    const int64_t b = pair / d.heads;
    const uint8_t* padding = mask.key_padding != nullptr ? mask.key_padding + b * d.keys : nullptr;
    for (int64_t t = 0; t < d.queries; ++t) {
      softmax_row(probs.data() + pair * score_size + t * d.keys, padding,
                  visible_keys(mask, t, d.keys), d.keys);
    }
  }
  attention_values<T>(out, probs, v, dropout_p, dropout_key);
}

template <typename T>
void attention_values(TensorView<T> out, TensorView<const T> probs, TensorView<const T> v,
                      float dropout_p, uint64_t dropout_key) {
  CHECK(probs.shape().rank() == 4 && v.shape().rank() == 4)
      << "attention values need probabilities (B,H,T,S) and values (B,H,S,V), got "
      << probs.shape().str() << " and " << v.shape().str();
  const int64_t batch = probs.dim(0), heads = probs.dim(1), queries = probs.dim(2);
  const int64_t keys = probs.dim(3), value_width = v.dim(3);
  check_shape(v.shape(), Shape({batch, heads, keys, value_width}), "attention v");
  check_shape(out.shape(), Shape({batch, heads, queries, value_width}), "attention output");
  const int64_t pairs = batch * heads;
  const int64_t score_size = queries * keys;
  if (dropout_p == 0.0f) {
    // out (T,V) = probs (T,S) V (S,V)
    blas::gemm_strided_batched<T>(false, false, queries, value_width, keys, T(1), probs.data(),
                                  keys, score_size, v.data(), value_width, keys * value_width, T(0),
                                  out.data(), value_width, queries * value_width, pairs);
    return;
  }
  // With dropout the dropped probabilities are never stored: each output row is accumulated from
  // the mask directly, so forward needs no scratch (backward rebuilds them).
  const T keep_scale = T(1) / (T(1) - static_cast<T>(dropout_p));
#pragma omp parallel for schedule(guided) if (pairs * score_size >= kParallelMinElements)
  for (int64_t pair = 0; pair < pairs; ++pair) {
    for (int64_t t = 0; t < queries; ++t) {
      const T* row = probs.data() + pair * score_size + t * keys;
      T* target = out.data() + (pair * queries + t) * value_width;
      for (int64_t j = 0; j < value_width; ++j) target[j] = T(0);
      for (int64_t s = 0; s < keys; ++s) {
        const uint64_t index = static_cast<uint64_t>(pair * score_size + t * keys + s);
        if (row[s] == T(0) || uniform_at(dropout_key, index) < dropout_p) continue;
        const T weight = row[s] * keep_scale;
        const T* value = v.data() + (pair * keys + s) * value_width;
        for (int64_t j = 0; j < value_width; ++j) target[j] += weight * value[j];
      }
    }
  }
}

template <typename T>
void attention_backward(TensorView<T> dq, TensorView<T> dk, TensorView<T> dv, T* dscale,
                        TensorView<const T> dout, TensorView<const T> q, TensorView<const T> k,
                        TensorView<const T> v, TensorView<const T> probs, TensorView<T> scratch,
                        T scale, float dropout_p, uint64_t dropout_key) {
  const AttentionDims d = check_attention_shapes<T>(q, k, v, dout.shape(), probs.shape());
  check_shape(dq.shape(), q.shape(), "attention dq");
  check_shape(dk.shape(), k.shape(), "attention dk");
  check_shape(dv.shape(), v.shape(), "attention dv");
  check_shape(scratch.shape(), probs.shape(), "attention scratch");
  const int64_t pairs = d.batch * d.heads;
  const int64_t score_size = d.queries * d.keys;
  const int64_t total = pairs * score_size;
  const T keep_scale = dropout_p > 0.0f ? T(1) / (T(1) - static_cast<T>(dropout_p)) : T(1);
  auto kept = [&](int64_t index) {
    return dropout_p == 0.0f || uniform_at(dropout_key, static_cast<uint64_t>(index)) >= dropout_p;
  };

  // dv (S,V) = dropout(probs)^T (S,T) dout (T,V)
  const T* dropped_probs = probs.data();
  if (dropout_p > 0.0f) {
    for (int64_t i = 0; i < total; ++i) scratch[i] = kept(i) ? probs[i] * keep_scale : T(0);
    dropped_probs = scratch.data();
  }
  blas::gemm_strided_batched<T>(true, false, d.keys, d.value_width, d.queries, T(1), dropped_probs,
                                d.keys, score_size, dout.data(), d.value_width,
                                d.queries * d.value_width, T(0), dv.data(), d.value_width,
                                d.keys * d.value_width, pairs);
  // dprobs (T,S) = dout (T,V) V^T (V,S), then back through dropout.
  blas::gemm_strided_batched<T>(false, true, d.queries, d.keys, d.value_width, T(1), dout.data(),
                                d.value_width, d.queries * d.value_width, v.data(), d.value_width,
                                d.keys * d.value_width, T(0), scratch.data(), d.keys, score_size,
                                pairs);
  if (dropout_p > 0.0f) {
    for (int64_t i = 0; i < total; ++i) scratch[i] = kept(i) ? scratch[i] * keep_scale : T(0);
  }
  // d softmax: dlogits = p * (dp - sum(dp * p)); hidden keys have p = 0 and get 0.
#pragma omp parallel for schedule(guided) if (total >= kParallelMinElements)
  for (int64_t row_index = 0; row_index < pairs * d.queries; ++row_index) {
    softmax_backward_row(scratch.data() + row_index * d.keys, probs.data() + row_index * d.keys,
                         d.keys);
  }
  // dq = scale * dlogits K; computed unscaled first so that dscale = sum(q * dlogits K) comes free.
  blas::gemm_strided_batched<T>(false, false, d.queries, d.key_width, d.keys, T(1), scratch.data(),
                                d.keys, score_size, k.data(), d.key_width, d.keys * d.key_width,
                                T(0), dq.data(), d.key_width, d.queries * d.key_width, pairs);
  const int64_t query_elements = q.numel();
  if (dscale != nullptr) {
    double sum = 0.0;
    for (int64_t i = 0; i < query_elements; ++i) sum += static_cast<double>(q[i]) * dq[i];
    *dscale += static_cast<T>(sum);
  }
  for (int64_t i = 0; i < query_elements; ++i) dq[i] *= scale;
  // dk (S,K) = scale * dlogits^T (S,T) Q (T,K)
  blas::gemm_strided_batched<T>(true, false, d.keys, d.key_width, d.queries, scale, scratch.data(),
                                d.keys, score_size, q.data(), d.key_width, d.queries * d.key_width,
                                T(0), dk.data(), d.key_width, d.keys * d.key_width, pairs);
}

template void attention_forward<float>(TensorView<float>, TensorView<float>,
                                       TensorView<const float>, TensorView<const float>,
                                       TensorView<const float>, const AttentionMask&, float, float,
                                       uint64_t);
template void attention_forward<double>(TensorView<double>, TensorView<double>,
                                        TensorView<const double>, TensorView<const double>,
                                        TensorView<const double>, const AttentionMask&, double,
                                        float, uint64_t);
template void attention_values<float>(TensorView<float>, TensorView<const float>,
                                      TensorView<const float>, float, uint64_t);
template void attention_values<double>(TensorView<double>, TensorView<const double>,
                                       TensorView<const double>, float, uint64_t);
template void attention_backward<float>(TensorView<float>, TensorView<float>, TensorView<float>,
                                        float*, TensorView<const float>, TensorView<const float>,
                                        TensorView<const float>, TensorView<const float>,
                                        TensorView<const float>, TensorView<float>, float, float,
                                        uint64_t);
template void attention_backward<double>(TensorView<double>, TensorView<double>, TensorView<double>,
                                         double*, TensorView<const double>,
                                         TensorView<const double>, TensorView<const double>,
                                         TensorView<const double>, TensorView<const double>,
                                         TensorView<double>, double, float, uint64_t);

}  // namespace attnlab::ops
