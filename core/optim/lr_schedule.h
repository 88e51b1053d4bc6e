// Learning-rate schedules: noam (the paper), constant, inverse_sqrt, cosine, and a linear cool-down
// to zero that ends any of them at the last step (a fixed budget). Pure functions of the step, so
// resuming needs only the step count.
#pragma once

#include <cstdint>
#include <string>

#include "core/util/enum_names.h"

namespace attnlab {

struct LrSchedule {
  enum class Kind { kNoam, kConstant, kInverseSqrt, kCosine };
  Kind kind = Kind::kNoam;
  int64_t warmup = 4000;
  double scale = 1.0;     // noam multiplier
  double peak = 1e-3;     // constant rate, or inverse_sqrt/cosine rate at the end of warmup
  int64_t d_model = 512;  // noam's d_model^-0.5
  int64_t total = 0;      // the run's last step (train.steps): where cosine and the cool-down end
  int64_t cooldown = 0;   // steps of the linear cool-down to zero before `total`; 0 = none

  // The names of the kinds (train.lr.schedule), declared once.
  static const EnumNames<Kind>& names();
  // A kind by name; throws Error naming the text otherwise.
  static Kind parse(const std::string& text) { return names().parse(text); }
  static std::string name(Kind kind) { return names().name(kind); }
  // The rate of update number `step` (1-based).
  //   noam:         scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
  //   inverse_sqrt: peak * min(step / warmup, sqrt(warmup / step))   (linear warmup, then 1/sqrt)
  //   cosine:       peak * step / warmup up to warmup, then
  //                 peak * (1 + cos(pi * (step - warmup) / (total - warmup))) / 2, 0 at total
  // and, with a cool-down, any of them times (total - step) / cooldown over the last `cooldown`
  // steps (1 at total - cooldown, 0 at total), as in warmup-stable-decay schedules.
  double rate(int64_t step) const;
  // Whether the rate reaches zero at `total` whatever happens in between (cosine or a cool-down):
  // every run under such a schedule ends on the same rate, not where its evaluations stall.
  bool fixed_budget() const { return kind == Kind::kCosine || cooldown > 0; }
};

}  // namespace attnlab
