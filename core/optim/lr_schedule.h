// Learning-rate schedules: noam (the paper), constant, inverse_sqrt. Pure functions of the step,
// so resuming needs only the step count.
#pragma once

#include <cstdint>
#include <string>

namespace attnlab {

struct LrSchedule {
  enum class Kind { kNoam, kConstant, kInverseSqrt };
  Kind kind = Kind::kNoam;
  int64_t warmup = 4000;
  double scale = 1.0;     // noam multiplier
  double peak = 1e-3;     // constant rate, or inverse_sqrt rate at the end of warmup
  int64_t d_model = 512;  // noam's d_model^-0.5

  // "noam" | "constant" | "inverse_sqrt"; throws Error naming the text otherwise.
  static Kind parse(const std::string& text);
  static std::string name(Kind kind);
  // The rate of update number `step` (1-based).
  //   noam:         scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
  //   inverse_sqrt: peak * min(step / warmup, sqrt(warmup / step))   (linear warmup, then 1/sqrt)
  double rate(int64_t step) const;
};

}  // namespace attnlab
