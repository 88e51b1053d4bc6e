// keep_or_zero(value, keep): value when keep, else +0, as a bit mask. GCC turns a
// `keep ? value : 0` on floats into a branch, which stops the vectoriser; the mask keeps the
// elementwise loops (dropout, relu backward) branch-free.
#pragma once

#include <cstdint>
#include <cstring>

namespace attnlab::ops {

inline float keep_or_zero(float value, bool keep) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits &= 0u - static_cast<uint32_t>(keep);
  std::memcpy(&value, &bits, sizeof bits);
  return value;
}

inline double keep_or_zero(double value, bool keep) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits &= 0ull - static_cast<uint64_t>(keep);
  std::memcpy(&value, &bits, sizeof bits);
  return value;
}

}  // namespace attnlab::ops
