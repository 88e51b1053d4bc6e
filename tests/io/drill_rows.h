// The rows the SIGKILL drill writes, as functions of the step, so that the test can check every
// value a killed writer left against what it must have written.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/io/run_log.h"

namespace attnlab::test {

inline io::Row drill_train_row(int64_t step) {
  auto s = static_cast<double>(step);
  return {{"step", s},
          {"tokens", 4096.0 * s},
          {"loss", 10.0 / s},
          {"nll", 9.0 / s},
          {"lr", 1e-4 * std::sqrt(s)},
          {"grad_norm", 1.0 + 1.0 / s},
          {"tokens_per_sec", 1000.0 + s},
          {"wall_time", 0.5 * s}};
}

// Evaluations every 5 steps.
constexpr int64_t kDrillEvalEvery = 5;
inline io::Row drill_eval_row(int64_t step) {
  auto s = static_cast<double>(step);
  return {{"step", s}, {"loss", 5.0 / s}, {"ppl", std::exp(5.0 / s)}, {"bleu", s / 100.0}};
}

// Per-layer gradient norms every 3 steps, for 4 layers.
constexpr int64_t kDrillDiagnosticEvery = 3;
inline std::vector<double> drill_grad_norms(int64_t step) {
  auto s = static_cast<double>(step);
  return {s, s + 0.25, s + 0.5, s + 0.75};
}

}  // namespace attnlab::test
