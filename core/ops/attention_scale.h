// Attention scale modes of the ablation: rsqrt_dk (the paper), none, inv_dk, a constant, learned.
#pragma once

#include <cstdint>
#include <string>

namespace attnlab {

struct AttentionScale {
  enum class Mode { kRsqrtDk, kNone, kInvDk, kConstant, kLearned };
  Mode mode = Mode::kRsqrtDk;
  double constant = 1.0;  // used by kConstant

  // Parses "rsqrt_dk" | "none" | "inv_dk" | "learned" | a number; throws Error naming the text.
  static AttentionScale parse(const std::string& text);
  std::string str() const;
  // The scale's value at initialisation for heads of width d_k (learned starts at 1/sqrt(d_k)).
  double initial_value(int64_t d_k) const;
  bool learned() const { return mode == Mode::kLearned; }
  bool operator==(const AttentionScale& other) const {
    return mode == other.mode && (mode != Mode::kConstant || constant == other.constant);
  }
};

}  // namespace attnlab
