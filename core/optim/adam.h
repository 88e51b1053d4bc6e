// Adam over flat buffers (one loop over the whole parameter buffer) and global-norm clipping.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.98;
  double eps = 1e-9;
};

class Adam {
 public:
  Adam(int64_t size, AdamOptions options);

  // One update with learning rate lr: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
  // p -= lr * mhat / (sqrt(vhat) + eps) with bias corrections mhat = m/(1-b1^t), vhat = v/(1-b2^t).
  void step(float* params, const float* grads, double lr);
  int64_t steps_taken() const { return step_; }
  void set_steps_taken(int64_t step) { step_ = step; }
  std::vector<float>& m() { return m_; }
  const std::vector<float>& m() const { return m_; }
  std::vector<float>& v() { return v_; }
  const std::vector<float>& v() const { return v_; }
  const AdamOptions& options() const { return options_; }

 private:
  AdamOptions options_;
  std::vector<float> m_, v_;
  int64_t step_ = 0;
};

// The L2 norm of a flat gradient buffer (accumulated in double).
double global_norm(const float* grads, int64_t size);
// Scales grads so that their global norm is at most max_norm; returns the norm before clipping.
double clip_global_norm(float* grads, int64_t size, double max_norm);

}  // namespace attnlab
