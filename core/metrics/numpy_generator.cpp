// numpy's SeedSequence, PCG64 and the bounded draws of Generator (numpy/random/bit_generator.pyx,
// src/pcg64/pcg64.h, src/distributions/distributions.c).
#include "core/metrics/numpy_generator.h"

#include "core/util/check.h"

namespace attnlab {
namespace {

// SeedSequence's hash constants.
constexpr uint32_t kInitA = 0x43b0d7e5;
constexpr uint32_t kMultA = 0x931e8875;
constexpr uint32_t kInitB = 0x8b51f9dd;
constexpr uint32_t kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd;
constexpr uint32_t kMixMultR = 0x4973f715;
constexpr int kXShift = 16;
constexpr size_t kPoolSize = 4;

uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

std::vector<uint32_t> mixed_pool(const std::vector<uint32_t>& entropy) {
  std::vector<uint32_t> pool(kPoolSize);
  uint32_t hash_const = kInitA;
  for (size_t i = 0; i < kPoolSize; ++i) {
    pool[i] = hashmix(i < entropy.size() ? entropy[i] : 0, hash_const);
  }
  for (size_t source = 0; source < kPoolSize; ++source) {
    for (size_t target = 0; target < kPoolSize; ++target) {
      if (source != target) pool[target] = mix(pool[target], hashmix(pool[source], hash_const));
    }
  }
  for (size_t source = kPoolSize; source < entropy.size(); ++source) {
    for (size_t target = 0; target < kPoolSize; ++target) {
      pool[target] = mix(pool[target], hashmix(entropy[source], hash_const));
    }
  }
  return pool;
}

constexpr unsigned __int128 kPcgMultiplier =
    (static_cast<unsigned __int128>(0x2360ED051FC65DA4ull) << 64) | 0x4385DF649FCCF645ull;

unsigned __int128 join(uint64_t high, uint64_t low) {
  return (static_cast<unsigned __int128>(high) << 64) | low;
}

}  // namespace

std::vector<uint32_t> numpy_seed_words(uint64_t seed) {
  if (seed == 0) return {0};
  std::vector<uint32_t> words;
  for (; seed > 0; seed >>= 32) words.push_back(static_cast<uint32_t>(seed));
  return words;
}

std::vector<uint64_t> numpy_seed_state(const std::vector<uint32_t>& entropy, size_t words) {
  const std::vector<uint32_t> pool = mixed_pool(entropy);
  uint32_t hash_const = kInitB;
  std::vector<uint64_t> state(words);
  // 2 * words 32-bit words, read as uint64 on a little-endian machine: the first is the low half.
  for (size_t i = 0; i < 2 * words; ++i) {
    uint32_t value = pool[i % kPoolSize];
    value ^= hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    value ^= value >> kXShift;
    state[i / 2] |= static_cast<uint64_t>(value) << (32 * (i % 2));
  }
  return state;
}

NumpyGenerator::NumpyGenerator(uint64_t seed) : NumpyGenerator(numpy_seed_words(seed)) {}

NumpyGenerator::NumpyGenerator(const std::vector<uint32_t>& entropy) {
  // PCG64(SeedSequence): state and increment from generate_state(4, uint64), then
  // pcg_setseq_128_srandom_r: inc = (seq << 1) | 1, one step, add the initial state, one step.
  const std::vector<uint64_t> words = numpy_seed_state(entropy, 4);
  increment_ = (join(words[2], words[3]) << 1) | 1u;
  state_ = 0;
  state_ = state_ * kPcgMultiplier + increment_;
  state_ += join(words[0], words[1]);
  state_ = state_ * kPcgMultiplier + increment_;
}

uint64_t NumpyGenerator::next_uint64() {
  state_ = state_ * kPcgMultiplier + increment_;
  // XSL-RR: the two halves xor-ed, rotated right by the top six bits.
  const auto folded = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
  const auto rotation = static_cast<unsigned>(state_ >> 122);
  return (folded >> rotation) | (folded << ((64u - rotation) & 63u));
}

uint32_t NumpyGenerator::next_uint32() {
  if (has_high_half_) {
    has_high_half_ = false;
    return high_half_;
  }
  const uint64_t next = next_uint64();
  has_high_half_ = true;
  high_half_ = static_cast<uint32_t>(next >> 32);
  return static_cast<uint32_t>(next);
}

uint32_t NumpyGenerator::below(uint32_t n) {
  CHECK(n >= 1) << "a draw below " << n;
  if (n == 1) return 0;  // numpy draws nothing for an empty range
  // Lemire's method as numpy's buffered_bounded_lemire_uint32 does it, with rng = n - 1.
  uint64_t scaled = static_cast<uint64_t>(next_uint32()) * n;
  auto leftover = static_cast<uint32_t>(scaled);
  if (leftover < n) {
    const uint32_t threshold = (UINT32_MAX - (n - 1)) % n;
    while (leftover < threshold) {
      scaled = static_cast<uint64_t>(next_uint32()) * n;
      leftover = static_cast<uint32_t>(scaled);
    }
  }
  return static_cast<uint32_t>(scaled >> 32);
}

bool NumpyGenerator::next_bool() {
  if (bool_bits_left_ == 0) {
    bool_bits_ = next_uint32();
    bool_bits_left_ = 31;
  } else {
    bool_bits_ >>= 1;
    --bool_bits_left_;
  }
  return (bool_bits_ & 1u) != 0;
}

}  // namespace attnlab
