// The numerical core: one forward/backward pair per op. Each pair lives in its own file
// (core/ops/<op>.cpp) and is instantiated for float and double.
//
// Shape legend: B batch, S source length, T target (query) length, D d_model, H heads, K d_k,
// V d_v, F d_ff, N vocabulary, M rows (B*T flattened), P max positions.
//
// The gradient rule: parameter gradients accumulate (+=), activation gradients
// are assigned (=), except where an argument `accumulate` says the caller sums two paths (the
// residual stream, the encoder output read by every decoder layer).
// No op allocates: callers pass every output and scratch buffer (the model's workspace owns them).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor/tensor.h"

namespace attnlab::ops {

// Below this many elements an op runs on one thread: starting an OpenMP team costs more than
// the work (and far more when cores are shared with other ranks).
inline constexpr int64_t kParallelMinElements = 1 << 16;
// Parallel loops whose iterations are independent (each writes its own outputs, computed the same
// whichever thread runs it) are schedule(guided): the thread that starts a region takes half the
// iterations, then ever smaller shares of what is left, so a worker that wakes late from sleep
// (tens of microseconds, docs/design.md "Threads") leaves its part to the running thread instead
// of holding the region's end back by its whole wake-up. Results stay bit for bit those of
// schedule(static). Loops that add across iterations (the loss) keep schedule(static), whose
// fixed partition fixes the order of the partial sums.

// ---- linear (linear.cpp): out = inp W^T + b, W stored (out_features, in_features) as in PyTorch.
template <typename T>
void linear_forward(TensorView<T> out,           // (M,O)
                    TensorView<const T> inp,     // (M,I)
                    TensorView<const T> weight,  // (O,I)
                    TensorView<const T> bias);   // (O) or empty
template <typename T>
void linear_backward(TensorView<T> dinp,          // (M,I), assigned (or += if accumulate)
                     TensorView<T> dweight,       // (O,I), +=
                     TensorView<T> dbias,         // (O), += (empty if no bias)
                     TensorView<const T> dout,    // (M,O)
                     TensorView<const T> inp,     // (M,I)
                     TensorView<const T> weight,  // (O,I)
                     bool accumulate = false);

// ---- embedding (embedding.cpp): out[m] = scale * table[tokens[m]] (scale = sqrt(D) in the paper).
template <typename T>
void embedding_forward(TensorView<T> out,          // (M,D)
                       const int32_t* tokens,      // (M)
                       TensorView<const T> table,  // (N,D)
                       T scale);
template <typename T>
void embedding_backward(TensorView<T> dtable,      // (N,D), +=
                        TensorView<const T> dout,  // (M,D)
                        const int32_t* tokens,     // (M)
                        T scale);

// ---- positions (positions.cpp)
// PE(pos,2i) = sin(pos / 10000^(2i/D)), PE(pos,2i+1) = cos(pos / 10000^(2i/D)) (interleaved).
template <typename T>
void sinusoidal_table(TensorView<T> table);  // (P,D), filled
// x[b,t] += table[offset + t]: sinusoidal (fixed table) or learned positions.
template <typename T>
void add_positions_forward(TensorView<T> x,            // (B,T,D), in place
                           TensorView<const T> table,  // (P,D)
                           int64_t offset = 0);
// Learned positions only: dtable[offset + t] += sum_b dout[b,t].
template <typename T>
void add_positions_backward(TensorView<T> dtable,      // (P,D), +=
                            TensorView<const T> dout,  // (B,T,D)
                            int64_t offset = 0);

// ---- layer norm (layernorm.cpp): out = (x - mean) * rstd * weight + bias over the last axis.
template <typename T>
void layernorm_forward(TensorView<T> out,           // (M,D)
                       TensorView<T> mean,          // (M), saved
                       TensorView<T> rstd,          // (M), saved
                       TensorView<const T> inp,     // (M,D)
                       TensorView<const T> weight,  // (D)
                       TensorView<const T> bias,    // (D)
                       T eps = T(1e-5));
template <typename T>
void layernorm_backward(TensorView<T> dinp,          // (M,D), assigned (or += if accumulate)
                        TensorView<T> dweight,       // (D), +=
                        TensorView<T> dbias,         // (D), +=
                        TensorView<const T> dout,    // (M,D)
                        TensorView<const T> inp,     // (M,D)
                        TensorView<const T> weight,  // (D)
                        TensorView<const T> mean,    // (M)
                        TensorView<const T> rstd,    // (M)
                        bool accumulate = false);

// ---- RMS norm (rmsnorm.cpp): out = x * rstd * weight, rstd = 1/sqrt(mean(x^2) + eps) over the
// last axis; no centring and no bias.
template <typename T>
void rmsnorm_forward(TensorView<T> out,           // (M,D)
                     TensorView<T> rstd,          // (M), saved
                     TensorView<const T> inp,     // (M,D)
                     TensorView<const T> weight,  // (D)
                     T eps = T(1e-5));
template <typename T>
void rmsnorm_backward(TensorView<T> dinp,          // (M,D), assigned (or += if accumulate)
                      TensorView<T> dweight,       // (D), +=
                      TensorView<const T> dout,    // (M,D)
                      TensorView<const T> inp,     // (M,D)
                      TensorView<const T> weight,  // (D)
                      TensorView<const T> rstd,    // (M)
                      bool accumulate = false);

// ---- relu (relu.cpp): out = max(0, inp); in place allowed.
template <typename T>
void relu_forward(TensorView<T> out, TensorView<const T> inp);
// dinp = dout * (out > 0); dinp may alias dout.
template <typename T>
void relu_backward(TensorView<T> dinp, TensorView<const T> dout, TensorView<const T> out);

// ---- gelu (gelu.cpp): out = 0.5 inp (1 + erf(inp / sqrt 2)), the exact form; in place allowed.
template <typename T>
void gelu_forward(TensorView<T> out, TensorView<const T> inp);
// dinp = dout * (Phi(inp) + inp * phi(inp)), from the input; dinp may alias dout.
template <typename T>
void gelu_backward(TensorView<T> dinp, TensorView<const T> dout, TensorView<const T> inp);

// ---- dropout (dropout.cpp): element i is kept iff uniform_at(key, i) >= p, and scaled by 1/(1-p).
// The mask is a pure function of (key, index), so backward recomputes it instead of storing it.
template <typename T>
void dropout_forward(TensorView<T> out, TensorView<const T> inp, float p, uint64_t key);
template <typename T>
void dropout_backward(TensorView<T> dinp, TensorView<const T> dout, float p, uint64_t key);

// ---- residual (residual.cpp): out = a + b (out may alias a or b).
template <typename T>
void residual_forward(TensorView<T> out, TensorView<const T> a, TensorView<const T> b);
// da += dout (the residual path hands the same gradient to both summands).
template <typename T>
void residual_backward(TensorView<T> da, TensorView<const T> dout);

// ---- softmax (softmax.cpp): over the last axis of (M,N).
template <typename T>
void softmax_forward(TensorView<T> out, TensorView<const T> inp);
// d softmax: dinp = y * (dy - sum(dy * y)).
template <typename T>
void softmax_backward(TensorView<T> dinp, TensorView<const T> dout, TensorView<const T> out);
// One row in place: softmax over row[0, limit) with padded entries (padding[s] != 0; padding
// may be null) and entries from `limit` on at exactly 0; a row with nothing visible becomes zeros.
void softmax_row(float* row, const uint8_t* padding, int64_t limit, int64_t n);
void softmax_row(double* row, const uint8_t* padding, int64_t limit, int64_t n);
// One row in place: g <- p * (g - sum(g * p)).
void softmax_backward_row(float* g, const float* p, int64_t n);
void softmax_backward_row(double* g, const double* p, int64_t n);

// ---- heads (heads.cpp): split_heads (B,T,H*K) -> (B,H,T,K) and its inverse combine_heads.
template <typename T>
void split_heads(TensorView<T> out, TensorView<const T> inp);  // out (B,H,T,K), inp (B,T,H*K)
template <typename T>
void combine_heads(TensorView<T> out, TensorView<const T> inp);  // out (B,T,H*K), inp (B,H,T,K)

// ---- scaled dot-product attention (attention.cpp) for a batch of heads:
// probs = softmax(scale * Q K^T + mask), out = dropout(probs) V.
// Masks act on key columns only: key s of batch b is hidden when key_padding[b*S+s] != 0, and with
// `causal` key s is hidden from query t when s > t + query_offset (query_offset = position of the
// first query, for incremental decoding). A query row whose keys are all hidden gets zeros.
struct AttentionMask {
  const uint8_t* key_padding = nullptr;  // (B,S), 1 = padded key; nullptr = no padding
  bool causal = false;
  int64_t query_offset = 0;
};
template <typename T>
void attention_forward(TensorView<T> out,      // (B,H,T,V)
                       TensorView<T> probs,    // (B,H,T,S), saved (before dropout)
                       TensorView<const T> q,  // (B,H,T,K)
                       TensorView<const T> k,  // (B,H,S,K)
                       TensorView<const T> v,  // (B,H,S,V)
                       const AttentionMask& mask, T scale, float dropout_p = 0.0f,
                       uint64_t dropout_key = 0);
// out = dropout(probs) V for every (batch, head) pair: attention_forward's last product, which a
// backward that did not keep its output calls again (with the same key, the same mask).
template <typename T>
void attention_values(TensorView<T> out,          // (B,H,T,V)
                      TensorView<const T> probs,  // (B,H,T,S) before dropout
                      TensorView<const T> v,      // (B,H,S,V)
                      float dropout_p = 0.0f, uint64_t dropout_key = 0);
// dscale (nullable) += sum(dlogits * Q K^T): the gradient of a learned scale.
// scratch holds (B,H,T,S) values.
template <typename T>
void attention_backward(TensorView<T> dq,          // (B,H,T,K), assigned
                        TensorView<T> dk,          // (B,H,S,K), assigned
                        TensorView<T> dv,          // (B,H,S,V), assigned
                        T* dscale,                 // scalar, += (nullptr if the scale is fixed)
                        TensorView<const T> dout,  // (B,H,T,V)
                        TensorView<const T> q, TensorView<const T> k, TensorView<const T> v,
                        TensorView<const T> probs,  // (B,H,T,S) from forward
                        TensorView<T> scratch,      // (B,H,T,S)
                        T scale, float dropout_p = 0.0f, uint64_t dropout_key = 0);

// ---- label-smoothed cross entropy (cross_entropy.cpp).
// Target distribution q: (1 - eps) on the target, eps / (N - 1) on every other class (the paper,
// fairseq). loss = -sum_j q_j log p_j; nll = -log p_target. Rows whose target is pad_id are
// skipped.
struct LossSums {
  double loss = 0.0;   // summed label-smoothed loss
  double nll = 0.0;    // summed negative log-likelihood of the targets
  int64_t tokens = 0;  // non-pad targets
};
// log sum_j exp(x_j) over a row of n >= 1 values, by the loss's own passes: float rows take
// exp_poly in SIMD lanes with float partial sums over blocks added in double (within about 1e-7
// relative of the exact value), double rows libm's exp. Decoding's log-softmax uses it.
template <typename T>
double log_sum_exp(const T* x, int64_t n);
// log_probs may be the logits' own buffer (computed in place), and dlogits the log-probabilities'
// buffer: one (M,N) buffer then serves logits, log-probabilities and their gradient.
template <typename T>
LossSums cross_entropy_forward(TensorView<T> log_probs,     // (M,N), saved
                               TensorView<const T> logits,  // (M,N)
                               const int32_t* targets,      // (M)
                               float eps, int32_t pad_id);
// dlogits = dloss * (softmax(logits) - q) on non-pad rows, 0 on pad rows. Assigned.
template <typename T>
void cross_entropy_backward(TensorView<T> dlogits,          // (M,N)
                            T dloss,                        // d(objective)/d(summed loss)
                            TensorView<const T> log_probs,  // (M,N)
                            const int32_t* targets, float eps, int32_t pad_id);

}  // namespace attnlab::ops
