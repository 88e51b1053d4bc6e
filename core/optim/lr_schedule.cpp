// Learning-rate schedules.
#include "core/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "core/util/check.h"

namespace attnlab {

LrSchedule::Kind LrSchedule::parse(const std::string& text) {
  if (text == "noam") return Kind::kNoam;
  if (text == "constant") return Kind::kConstant;
  if (text == "inverse_sqrt") return Kind::kInverseSqrt;
  CHECK(false) << "train.lr.schedule '" << text << "' must be noam, constant or inverse_sqrt";
  return Kind::kNoam;
}

std::string LrSchedule::name(Kind kind) {
  switch (kind) {
    case Kind::kNoam: return "noam";
    case Kind::kConstant: return "constant";
    case Kind::kInverseSqrt: return "inverse_sqrt";
  }
  return "noam";
}

double LrSchedule::rate(int64_t step) const {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  const double w = static_cast<double>(std::max<int64_t>(warmup, 1));
  switch (kind) {
    case Kind::kNoam:
      return scale / std::sqrt(static_cast<double>(d_model)) *
             std::min(1.0 / std::sqrt(s), s * std::pow(w, -1.5));
    case Kind::kConstant: return peak;
    case Kind::kInverseSqrt:
      return warmup <= 0 ? peak / std::sqrt(s) : peak * std::min(s / w, std::sqrt(w / s));
  }
  return peak;
}

}  // namespace attnlab
