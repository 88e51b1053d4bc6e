// The residual sub-layer's norm (LayerNorm or RMSNorm, per model.norm_type), its parameters and
// the activations it saves.
// Legend: B batch, L length, D d_model.
#include "core/model/sublayer.h"

#include "core/model/param_names.h"

namespace attnlab {

NormParams norm_params(const ParamTable& table, const std::string& prefix) {
  const std::string bias = param_names::norm_bias(prefix);
  return {table.index_of(param_names::norm_weight(prefix)),
          table.contains(bias) ? table.index_of(bias) : -1};
}

template <typename T>
Sublayer<T>::Sublayer(const ModelConfig& config)
    : pre_norm_(config.norm == NormPlacement::kPre),
      norm_type_(config.norm_type),
      eps_(static_cast<T>(config.layer_norm_eps)) {}

template <typename T>
void Sublayer<T>::carve(Arena<T>& arena, ResidualActivations<T>& s, const Shape& shape,
                        TensorView<T> sub_out) const {
  if (pre_norm_) {
    s.normed = arena.take(shape);
  } else {
    s.residual_sum = arena.take(shape);
  }
  s.stats = carve_stats(arena, shape[0] * shape[1]);
  s.sub_out = workspace::shaped(sub_out, shape);
  s.out = arena.take(shape);
}

template <typename T>
NormStats<T> Sublayer<T>::carve_stats(Arena<T>& arena, int64_t rows) const {
  NormStats<T> stats;
  if (norm_type_ == NormType::kLayerNorm) stats.mean = arena.take({rows});
  stats.rstd = arena.take({rows});
  return stats;
}

template <typename T>
void Sublayer<T>::norm_forward(TensorView<T> out, const NormStats<T>& stats, TensorView<const T> x,
                               const NormWeights<T>& norm) const {
  const int64_t width = norm.weight.numel();
  const Shape rows({x.numel() / width, width});
  if (norm_type_ == NormType::kRmsNorm) {
    ops::rmsnorm_forward<T>(out.reshape(rows), stats.rstd, x.reshape(rows), norm.weight, eps_);
  } else {
    ops::layernorm_forward<T>(out.reshape(rows), stats.mean, stats.rstd, x.reshape(rows),
                              norm.weight, norm.bias, eps_);
  }
}

template <typename T>
void Sublayer<T>::norm_backward(TensorView<T> dx, TensorView<const T> dout, TensorView<const T> x,
                                const NormStats<T>& stats, const NormWeights<T>& norm,
                                bool accumulate) const {
  const int64_t width = norm.weight.numel();
  const Shape rows({x.numel() / width, width});
  if (norm_type_ == NormType::kRmsNorm) {
    ops::rmsnorm_backward<T>(dx.reshape(rows), norm.dweight, dout.reshape(rows), x.reshape(rows),
                             norm.weight, stats.rstd, accumulate);
  } else {
    ops::layernorm_backward<T>(dx.reshape(rows), norm.dweight, norm.dbias, dout.reshape(rows),
                               x.reshape(rows), norm.weight, stats.mean, stats.rstd, accumulate);
  }
}

template class Sublayer<float>;
template class Sublayer<double>;

}  // namespace attnlab
