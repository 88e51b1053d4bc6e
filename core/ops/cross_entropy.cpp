// Label-smoothed cross entropy over a vocabulary, fused with log-softmax.
// Target distribution q: (1 - eps) on the target class, eps / (N - 1) on every other class.
//   loss = -sum_j q_j log p_j,   dloss/dlogits = p - q   (because sum_j q_j = 1).
// Legend: M rows, N vocabulary.
//
// Speed: the rows are independent and run in parallel; inside a row every pass is a branch-free
// loop that GCC vectorises, and float rows take their exponentials from exp_poly (8 lanes in the
// AVX2 clone, 16 in the AVX-512 one) instead of a scalar libm call. A row of N floats (32 KB for
// N = 8000) stays in L1/L2 between its passes, so memory traffic is one read of the logits and
// one write of the log-probabilities forward, one read and one write backward.
#include <cmath>

#include "core/ops/exp_poly.h"
#include "core/ops/ops.h"

namespace attnlab::ops {
namespace {

// Per-row statistics of the forward pass, summed in double.
struct RowSums {
  double sum_exp = 0.0;  // sum_j exp(x_j - max)
  double sum_x = 0.0;    // sum_j x_j
};

// Float partial sums over blocks of this many elements (one float accumulator per SIMD lane)
// are added into double: the rounding of a block sum stays below 1e-7 relative, and the vector
// loop needs no float-to-double conversion inside.
constexpr int64_t kSumBlock = 512;

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) float row_max(
    const float* x, int64_t n) {
  float max_value = x[0];
#pragma omp simd reduction(max : max_value)
  for (int64_t j = 0; j < n; ++j) max_value = x[j] > max_value ? x[j] : max_value;
  return max_value;
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) RowSums row_sums(
    const float* x, int64_t n, float max_value) {
  RowSums sums;
  for (int64_t start = 0; start < n; start += kSumBlock) {
    const int64_t end = start + kSumBlock < n ? start + kSumBlock : n;
    float block_exp = 0.0f, block_x = 0.0f;
#pragma omp simd reduction(+ : block_exp, block_x)
    for (int64_t j = start; j < end; ++j) {
      block_exp += exp_poly(x[j] - max_value);
      block_x += x[j];
    }
    sums.sum_exp += block_exp;
    sums.sum_x += block_x;
  }
  return sums;
}

// lp = x - log_sum (log_sum = max + log sum_exp).
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void row_log_probs(
    float* lp, const float* x, int64_t n, float log_sum) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) lp[j] = x[j] - log_sum;
}

// g = dloss (exp(lp) - q), with q = off_target everywhere; the caller corrects the target.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void row_gradient(
    float* g, const float* lp, int64_t n, float dloss, float off_target) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) g[j] = dloss * (exp_poly(lp[j]) - off_target);
}

// The same passes for double (the gradient checks' precision): libm exp, scalar.
double row_max(const double* x, int64_t n) {
  double max_value = x[0];
  for (int64_t j = 1; j < n; ++j) max_value = x[j] > max_value ? x[j] : max_value;
  return max_value;
}

RowSums row_sums(const double* x, int64_t n, double max_value) {
  RowSums sums;
  for (int64_t j = 0; j < n; ++j) {
    sums.sum_exp += std::exp(x[j] - max_value);
    sums.sum_x += x[j];
  }
  return sums;
}

void row_log_probs(double* lp, const double* x, int64_t n, double log_sum) {
  for (int64_t j = 0; j < n; ++j) lp[j] = x[j] - log_sum;
}

void row_gradient(double* g, const double* lp, int64_t n, double dloss, double off_target) {
  for (int64_t j = 0; j < n; ++j) g[j] = dloss * (std::exp(lp[j]) - off_target);
}

float exp_of(float x) { return exp_poly(x); }
double exp_of(double x) { return std::exp(x); }

}  // namespace

template <typename T>
double log_sum_exp(const T* x, int64_t n) {
  const T max_value = row_max(x, n);
  // log sum_j exp(x_j) = max + log sum_j exp(x_j - max)
  return std::log(row_sums(x, n, max_value).sum_exp) + static_cast<double>(max_value);
}

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
  // The reduction adds per-thread partial sums, so the loss may differ in its last bits between
  // thread counts; the saved log-probabilities (and so the gradients) do not.
#pragma omp parallel for schedule(static) if (rows * vocab >= kParallelMinElements) reduction(+ : loss, nll, tokens)
  for (int64_t m = 0; m < rows; ++m) {
    const T* x = logits.data() + m * vocab;
    const T max_logit = row_max(x, vocab);
    const RowSums sums = row_sums(x, vocab, max_logit);
    // log sum_j exp(x_j) = max + log sum_j exp(x_j - max)
    const double log_sum = std::log(sums.sum_exp) + static_cast<double>(max_logit);
    const int32_t target = targets[m];
    // Read before the row is overwritten: log_probs may be the logits' own buffer.
    const double target_log_prob =
        target == pad_id ? 0.0 : static_cast<double>(x[target]) - log_sum;
    row_log_probs(log_probs.data() + m * vocab, x, vocab, static_cast<T>(log_sum));
    if (target == pad_id) continue;
    // sum_j log p_j = sum_j x_j - N log_sum
    const double sum_log_probs = sums.sum_x - static_cast<double>(vocab) * log_sum;
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
#pragma omp parallel for schedule(guided) if (rows * vocab >= kParallelMinElements)
  for (int64_t m = 0; m < rows; ++m) {
    T* g = dlogits.data() + m * vocab;
    const int32_t target = targets[m];
    if (target == pad_id) {
      for (int64_t j = 0; j < vocab; ++j) g[j] = T(0);
      continue;
    }
    const T* lp = log_probs.data() + m * vocab;
    // Read before the row is overwritten: dlogits may be the log-probabilities' own buffer.
    // q_target = on_target, not off_target (the same exponential as the rest of the row).
    const T target_gradient = dloss * (exp_of(lp[target]) - on_target);
    row_gradient(g, lp, vocab, dloss, off_target);
    g[target] = target_gradient;
  }
}

template double log_sum_exp<float>(const float*, int64_t);
template double log_sum_exp<double>(const double*, int64_t);
template LossSums cross_entropy_forward<float>(TensorView<float>, TensorView<const float>,
                                               const int32_t*, float, int32_t);
template LossSums cross_entropy_forward<double>(TensorView<double>, TensorView<const double>,
                                                const int32_t*, float, int32_t);
template void cross_entropy_backward<float>(TensorView<float>, float, TensorView<const float>,
                                            const int32_t*, float, int32_t);
template void cross_entropy_backward<double>(TensorView<double>, double, TensorView<const double>,
                                             const int32_t*, float, int32_t);

}  // namespace attnlab::ops
