// Adam over a buffer large enough for its threaded, vectorised loop: three steps against the
// textbook update computed in double per element, and the same bits with one and two threads
// (an elementwise update has no reduction, so resumed and multi-rank runs stay bit-exact).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/optim/adam.h"
#include "core/util/rng.h"

namespace attnlab {
namespace {

// Above Adam's threading threshold (2^18) and not a multiple of any vector width.
constexpr int64_t kSize = (1 << 18) + 4099;

std::vector<float> gradients(uint64_t seed) {
  Rng rng(seed);
  std::vector<float> g(static_cast<size_t>(kSize));
  // Magnitudes from 1e-6 to 10, both signs, and exact zeros (sqrt(v) = 0 leaves only eps).
  for (size_t i = 0; i < g.size(); ++i) {
    g[i] = i % 97 == 0
               ? 0.0f
               : static_cast<float>(rng.uniform(-1, 1) * std::pow(10.0, rng.uniform(-6, 1)));
  }
  return g;
}

TEST(AdamLarge, ThreeStepsMatchTheTextbookUpdateInDouble) {
  const AdamOptions options{0.9, 0.98, 1e-9};
  Adam adam(kSize, options);
  std::vector<float> params(static_cast<size_t>(kSize), 0.25f);
  std::vector<double> p(params.size(), 0.25), m(params.size(), 0.0), v(params.size(), 0.0);
  const double lr = 1e-3;
  for (int t = 1; t <= 3; ++t) {
    const std::vector<float> g = gradients(static_cast<uint64_t>(t));
    adam.step(params.data(), g.data(), lr);
    const double c1 = 1.0 - std::pow(options.beta1, t), c2 = 1.0 - std::pow(options.beta2, t);
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = options.beta1 * m[i] + (1 - options.beta1) * g[i];
      v[i] = options.beta2 * v[i] + (1 - options.beta2) * double{g[i]} * g[i];
      p[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + options.eps);
    }
  }
  // Each step moves a parameter by at most about lr: float rounding of 0.25 - 3e-3 is 3e-8, and
  // the float update's relative error adds a few 1e-7 of lr.
  double worst = 0.0;
  for (size_t i = 0; i < p.size(); ++i) worst = std::max(worst, std::fabs(params[i] - p[i]));
  EXPECT_LT(worst, 1e-7);
  EXPECT_EQ(adam.steps_taken(), 3);
}

TEST(AdamLarge, OneAndTwoThreadsGiveTheSameBits) {
  std::vector<float> results[2];
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    Adam adam(kSize, AdamOptions{});
    std::vector<float> params(static_cast<size_t>(kSize), -1.0f);
    for (int t = 1; t <= 2; ++t) adam.step(params.data(), gradients(10 + t).data(), 5e-4);
    results[threads - 1] = params;
  }
  omp_set_num_threads(saved);
  ASSERT_EQ(results[0].size(), results[1].size());
  for (size_t i = 0; i < results[0].size(); ++i) ASSERT_EQ(results[0][i], results[1][i]) << i;
}

}  // namespace
}  // namespace attnlab
