// Learning-rate schedules.
#include "core/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace attnlab {

const EnumNames<LrSchedule::Kind>& LrSchedule::names() {
  static const EnumNames<Kind> names("train.lr.schedule", {{Kind::kNoam, "noam"},
                                                           {Kind::kConstant, "constant"},
                                                           {Kind::kInverseSqrt, "inverse_sqrt"},
                                                           {Kind::kCosine, "cosine"}});
  return names;
}

namespace {

constexpr double kPi = 3.14159265358979323846;

// The share of the way from `from` to `to` that `step` has gone, clamped to [0, 1].
double progress(int64_t step, int64_t from, int64_t to) {
  if (to <= from) return step >= to ? 1.0 : 0.0;
  const double done = static_cast<double>(step - from) / static_cast<double>(to - from);
  return std::clamp(done, 0.0, 1.0);
}

}  // namespace

double LrSchedule::rate(int64_t step) const {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  const double w = static_cast<double>(std::max<int64_t>(warmup, 1));
  double base = peak;
  switch (kind) {
    case Kind::kNoam:
      base = scale / std::sqrt(static_cast<double>(d_model)) *
             std::min(1.0 / std::sqrt(s), s * std::pow(w, -1.5));
      break;
    case Kind::kConstant: base = peak; break;
    case Kind::kInverseSqrt:
      base = warmup <= 0 ? peak / std::sqrt(s) : peak * std::min(s / w, std::sqrt(w / s));
      break;
    case Kind::kCosine:
      base = step < warmup ? peak * s / w
                           : peak * 0.5 * (1.0 + std::cos(kPi * progress(step, warmup, total)));
      break;
  }
  if (cooldown > 0) base *= 1.0 - progress(step, total - cooldown, total);
  return base;
}

}  // namespace attnlab
