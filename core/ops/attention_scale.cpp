// Parsing and values of the attention scale modes.
#include "core/ops/attention_scale.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/util/check.h"

namespace attnlab {

AttentionScale AttentionScale::parse(const std::string& text) {
  AttentionScale scale;
  if (text == "rsqrt_dk") {
    scale.mode = Mode::kRsqrtDk;
  } else if (text == "none") {
    scale.mode = Mode::kNone;
  } else if (text == "inv_dk") {
    scale.mode = Mode::kInvDk;
  } else if (text == "learned") {
    scale.mode = Mode::kLearned;
  } else {
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    CHECK(!text.empty() && end == text.c_str() + text.size() && std::isfinite(value) && value > 0)
        << "attention_scale '" << text
        << "' is not one of rsqrt_dk, none, inv_dk, learned or a positive number";
    scale.mode = Mode::kConstant;
    scale.constant = value;
  }
  return scale;
}

std::string AttentionScale::str() const {
  switch (mode) {
    case Mode::kRsqrtDk: return "rsqrt_dk";
    case Mode::kNone: return "none";
    case Mode::kInvDk: return "inv_dk";
    case Mode::kLearned: return "learned";
    case Mode::kConstant: {
      std::ostringstream text;
      text.precision(17);
      text << constant;
      return text.str();
    }
  }
  return "rsqrt_dk";
}

double AttentionScale::initial_value(int64_t d_k) const {
  switch (mode) {
    case Mode::kRsqrtDk:
    case Mode::kLearned: return 1.0 / std::sqrt(static_cast<double>(d_k));
    case Mode::kNone: return 1.0;
    case Mode::kInvDk: return 1.0 / static_cast<double>(d_k);
    case Mode::kConstant: return constant;
  }
  return 1.0;
}

}  // namespace attnlab
