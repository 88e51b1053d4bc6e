// Counter-based random numbers: every draw is a pure function of (key, counter), so dropout masks
// and data order are reproducible without saving generator state (exact resume, rank independence).
#pragma once

#include <cstdint>

namespace attnlab {

// SplitMix64 finaliser: a bijective 64-bit mixer with full avalanche.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A stream key derived from up to four integers (seed, rank, step, purpose ...).
inline uint64_t rng_key(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
  return mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d);
}

// Uniform in [0, 1) with 24 bits, the counter-th draw of stream `key`.
inline float uniform_at(uint64_t key, uint64_t counter) {
  return static_cast<float>(mix64(key ^ mix64(counter)) >> 40) * (1.0f / 16777216.0f);
}

// A small sequential generator for initialisation and shuffling (seeded, deterministic).
class Rng {
 public:
  explicit Rng(uint64_t seed) : key_(rng_key(seed)) {}
  uint64_t next_u64() { return mix64(key_ ^ mix64(counter_++)); }
  // Uniform in [0, 1) with 53 bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  // Standard normal by Box-Muller (one value per call; simple beats fast for initialisation).
  double normal();
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return next_u64() % n; }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace attnlab
