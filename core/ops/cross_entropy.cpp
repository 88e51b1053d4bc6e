// Label-smoothed cross entropy over a vocabulary, fused with log-softmax.
// Target distribution q: (1 - eps) on the target class, eps / (N - 1) on every other class.
//   loss = -sum_j q_j log p_j,   dloss/dlogits = p - q   (because sum_j q_j = 1).
// Legend: M rows, N vocabulary.
#include <cmath>

#include "core/ops/ops.h"

namespace attnlab::ops {

template <typename T>
LossSums cross_entropy_forward(TensorView<T> log_probs, TensorView<const T> logits,
                               const int32_t* targets, float eps, int32_t pad_id) {
  check_shape(log_probs.shape(), logits.shape(), "cross entropy log_probs");
  CHECK(logits.shape().rank() == 2)
      << "cross entropy logits must be (M,N), got " << logits.shape().str();
  CHECK(eps >= 0.0f && eps < 1.0f) << "label smoothing must be in [0, 1), got " << eps;
  const int64_t rows = logits.dim(0);
  const int64_t vocab = logits.dim(1);
  const double off_target =
      vocab > 1 ? static_cast<double>(eps) / static_cast<double>(vocab - 1) : 0.0;
  const double on_target = 1.0 - static_cast<double>(eps);
  // Validated before the parallel loop: an exception must not leave an OpenMP region.
  for (int64_t m = 0; m < rows; ++m) {
    CHECK(targets[m] == pad_id || (targets[m] >= 0 && targets[m] < vocab))
        << "target id " << targets[m] << " at row " << m << " outside the vocabulary [0, " << vocab
        << ")";
  }
  double loss = 0.0;
  double nll = 0.0;
  int64_t tokens = 0;
#pragma omp parallel for schedule(static) if (rows * vocab >= kParallelMinElements) reduction(+ : loss, nll, tokens)
  for (int64_t m = 0; m < rows; ++m) {
    const T* x = logits.data() + m * vocab;
    T* lp = log_probs.data() + m * vocab;
    T max_logit = x[0];
    for (int64_t j = 1; j < vocab; ++j) max_logit = x[j] > max_logit ? x[j] : max_logit;
    double sum = 0.0;
    for (int64_t j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(x[j] - max_logit));
    const double log_sum = std::log(sum) + static_cast<double>(max_logit);
    double sum_log_probs = 0.0;
    for (int64_t j = 0; j < vocab; ++j) {
      lp[j] = static_cast<T>(static_cast<double>(x[j]) - log_sum);
      sum_log_probs += static_cast<double>(x[j]) - log_sum;
    }
    const int32_t target = targets[m];
    if (target == pad_id) continue;
    const double target_log_prob = static_cast<double>(x[target]) - log_sum;
    nll += -target_log_prob;
    loss += -(on_target * target_log_prob + off_target * (sum_log_probs - target_log_prob));
    tokens += 1;
  }
  return LossSums{loss, nll, tokens};
}

template <typename T>
void cross_entropy_backward(TensorView<T> dlogits, T dloss, TensorView<const T> log_probs,
                            const int32_t* targets, float eps, int32_t pad_id) {
  check_shape(dlogits.shape(), log_probs.shape(), "cross entropy dlogits");
  const int64_t rows = log_probs.dim(0);
  const int64_t vocab = log_probs.dim(1);
  const T off_target = vocab > 1 ? static_cast<T>(eps) / static_cast<T>(vocab - 1) : T(0);
  const T on_target = T(1) - static_cast<T>(eps);
#pragma omp parallel for schedule(static) if (rows * vocab >= kParallelMinElements)
  for (int64_t m = 0; m < rows; ++m) {
    T* g = dlogits.data() + m * vocab;
    const int32_t target = targets[m];
    if (target == pad_id) {
      for (int64_t j = 0; j < vocab; ++j) g[j] = T(0);
      continue;
    }
    const T* lp = log_probs.data() + m * vocab;
    for (int64_t j = 0; j < vocab; ++j) {
      const T q = j == target ? on_target : off_target;
      g[j] = dloss * (std::exp(lp[j]) - q);
    }
  }
}

template LossSums cross_entropy_forward<float>(TensorView<float>, TensorView<const float>,
                                               const int32_t*, float, int32_t);
template LossSums cross_entropy_forward<double>(TensorView<double>, TensorView<const double>,
                                                const int32_t*, float, int32_t);
template void cross_entropy_backward<float>(TensorView<float>, float, TensorView<const float>,
                                            const int32_t*, float, int32_t);
template void cross_entropy_backward<double>(TensorView<double>, double, TensorView<const double>,
                                             const int32_t*, float, int32_t);

}  // namespace attnlab::ops
