// The residual sub-layer: the one place where the norm's placement (model.norm) and kind
// (model.norm_type) are decided.
//   post-LN (the paper): y = N(x + drop(f(x)))      pre-LN: y = x + drop(f(N(x)))
// N is LayerNorm or RMSNorm; f is the sub-layer's function (self-attention, cross-attention or the
// FFN), which the caller passes in. Training runs forward and backward over (B,L,D), forward
// saving what backward needs; incremental decoding runs the same forward on one position per
// sentence, without dropout, each sub-layer's output written over its input.
// Legend: B batch, L length, D d_model.
#pragma once

#include <string>
#include <utility>

#include "core/model/arena.h"
#include "core/model/model_config.h"
#include "core/model/param_table.h"
#include "core/ops/ops.h"

namespace attnlab {

// Entry indices of one norm's parameters; bias = -1 for RMSNorm, which has none.
struct NormParams {
  int weight = -1, bias = -1;
};
// The norm named `prefix` in the table (e.g. "encoder.layers.0.self_attn_layer_norm").
NormParams norm_params(const ParamTable& table, const std::string& prefix);

// One norm's parameters and the gradients backward adds to, each (D). bias and dbias are empty for
// RMSNorm; the gradients are unused by forward.
template <typename T>
struct NormWeights {
  TensorView<const T> weight, bias;
  TensorView<T> dweight, dbias;
};

// What a norm saves per row for backward: rstd, and for LayerNorm the mean.
template <typename T>
struct NormStats {
  TensorView<T> mean, rstd;  // (rows); mean is empty for RMSNorm
};

// What one sub-layer's forward saves for backward.
template <typename T>
struct ResidualActivations {
  TensorView<T> normed;        // (B,L,D) pre-LN: N(x), f's input; empty for post-LN
  TensorView<T> residual_sum;  // (B,L,D) post-LN: x + drop(f(x)), the norm's input; empty for pre
  NormStats<T> stats;          // (B*L)
  TensorView<T> sub_out;       // (B,L,D) f(.) after dropout; forward's only, shared (carve)
  TensorView<T> out;           // (B,L,D) y
};

// Gradient buffers of the residual stream, each (B,L,D): `stream` holds d(y) when backward starts
// and d(x) when it returns; the spares are scratch (post-LN swaps one of them with the stream).
template <typename T>
struct StreamGradients {
  TensorView<T> stream, spare_a, spare_b;
};

template <typename T>
class Sublayer {
 public:
  explicit Sublayer(const ModelConfig& config);

  bool pre_norm() const { return pre_norm_; }

  // Carves the activations of a sub-layer over a (B,L,D) input: the buffers this placement and
  // this norm use, in the order forward writes them. f's output, `sub_out`, is read only within
  // forward, so the caller passes one (B,L,D) buffer every sub-layer of a pass shares.
  void carve(Arena<T>& arena, ResidualActivations<T>& s, const Shape& shape,
             TensorView<T> sub_out) const;
  // Carves the statistics of a norm over `rows` rows.
  NormStats<T> carve_stats(Arena<T>& arena, int64_t rows) const;

  // s.out = the sub-layer of x, saving in s what backward needs. f(in, out) writes f(in) to out
  // (both (B,L,D) views). p_drop = 0 means no dropout. s.out may alias x.
  template <typename F>
  void forward(ResidualActivations<T>& s, TensorView<const T> x, const NormWeights<T>& norm, F&& f,
               float p_drop, uint64_t dropout_key) const;

  // Moves grads.stream from d(y) to d(x) and adds the norm's parameter gradients.
  // f_backward(in, dout, din, accumulate) sets din to f's input gradient for the gradient dout at
  // f's output (adds it when accumulate) and adds f's parameter gradients; it may overwrite dout.
  template <typename FBackward>
  void backward(ResidualActivations<T>& s, TensorView<const T> x, const NormWeights<T>& norm,
                FBackward&& f_backward, StreamGradients<T>& grads, float p_drop,
                uint64_t dropout_key) const;

  // The norm alone (also the final norm of a pre-LN stack): out = N(x) over the rows of x (...,D).
  void norm_forward(TensorView<T> out, const NormStats<T>& stats, TensorView<const T> x,
                    const NormWeights<T>& norm) const;
  // dx = N'(x)^T dout (added to dx when accumulate); the norm's parameter gradients are added to.
  void norm_backward(TensorView<T> dx, TensorView<const T> dout, TensorView<const T> x,
                     const NormStats<T>& stats, const NormWeights<T>& norm, bool accumulate) const;

 private:
  bool pre_norm_;
  NormType norm_type_;
  T eps_;
};

template <typename T>
template <typename F>
void Sublayer<T>::forward(ResidualActivations<T>& s, TensorView<const T> x,
                          const NormWeights<T>& norm, F&& f, float p_drop,
                          uint64_t dropout_key) const {
  using workspace::in;
  TensorView<const T> f_in = x;
  if (pre_norm_) {
    norm_forward(s.normed, s.stats, x, norm);
    f_in = s.normed;
  }
  f(f_in, s.sub_out);
  ops::dropout_forward<T>(s.sub_out, in(s.sub_out), p_drop, dropout_key);
  if (pre_norm_) {
    ops::residual_forward<T>(s.out, x, in(s.sub_out));
  } else {
    ops::residual_forward<T>(s.residual_sum, x, in(s.sub_out));
    norm_forward(s.out, s.stats, in(s.residual_sum), norm);
  }
}

template <typename T>
template <typename FBackward>
void Sublayer<T>::backward(ResidualActivations<T>& s, TensorView<const T> x,
                           const NormWeights<T>& norm, FBackward&& f_backward,
                           StreamGradients<T>& grads, float p_drop, uint64_t dropout_key) const {
  using workspace::in;
  if (pre_norm_) {
    // dx = dy + N'(x)^T f'^T drop'(dy): the stream keeps dy and gains the branch.
    ops::dropout_backward<T>(grads.spare_a, in(grads.stream), p_drop, dropout_key);
    f_backward(in(s.normed), grads.spare_a, grads.spare_b, false);
    norm_backward(grads.stream, in(grads.spare_b), x, s.stats, norm, true);
  } else {
    // dr = N'(r)^T dy at r = x + drop(f(x)); dx = dr + f'^T drop'(dr).
    norm_backward(grads.spare_a, in(grads.stream), in(s.residual_sum), s.stats, norm, false);
    ops::dropout_backward<T>(grads.spare_b, in(grads.spare_a), p_drop, dropout_key);
    f_backward(x, grads.spare_b, grads.spare_a, true);
    std::swap(grads.stream, grads.spare_a);
  }
}

}  // namespace attnlab
