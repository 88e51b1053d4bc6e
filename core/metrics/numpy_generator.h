// numpy's default random generator, `np.random.default_rng(seed)`, bit for bit, for the draws
// sacreBLEU's paired tests make: with the same seed, attnlab resamples exactly the segments
// sacreBLEU resamples, so the two give the same p-values, not only values within Monte Carlo
// error of each other.
//
// default_rng(seed) is SeedSequence(seed) -> PCG64 -> Generator:
//   SeedSequence: the seed as little-endian 32-bit words, hashed into a pool of four words, from
//     which generate_state(4, uint64) draws the PCG64 state and increment;
//   PCG64: a 128-bit LCG (multiplier 0x2360ED051FC65DA44385DF649FCCF645) with the XSL-RR output,
//     each 64-bit output giving two 32-bit draws (low half first);
//   Generator.integers(0, n) and choice(n, replace=True): Lemire's bounded 32-bit method for
//     n <= 2^32; integers(2, dtype=bool): one 32-bit draw gives 32 booleans, lowest bit first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attnlab {

// numpy's SeedSequence(entropy).generate_state(words, np.uint64) for a seed given as 32-bit words
// (least significant first, as numpy splits a Python int).
std::vector<uint64_t> numpy_seed_state(const std::vector<uint32_t>& entropy, size_t words);

// The 32-bit words numpy makes of an integer seed: 0 -> {0}, 12345 -> {12345}, 2^32 -> {0, 1}.
std::vector<uint32_t> numpy_seed_words(uint64_t seed);

class NumpyGenerator {
 public:
  // np.random.default_rng(seed) with an integer seed.
  explicit NumpyGenerator(uint64_t seed);
  // SeedSequence over these entropy words (default_rng(None) uses 128 bits from the OS).
  explicit NumpyGenerator(const std::vector<uint32_t>& entropy);

  // PCG64.random_raw(): the next 64-bit output.
  uint64_t next_uint64();
  // The next 32-bit output (the low half of a 64-bit output, then its high half).
  uint32_t next_uint32();
  // One element of Generator.integers(0, n) or choice(n, replace=True): uniform in [0, n),
  // 1 <= n <= 2^32 - 1.
  uint32_t below(uint32_t n);
  // One element of Generator.integers(2, dtype=bool): the elements of one call (one array) share
  // a 32-bit buffer, so a sequence of these is one such call.
  bool next_bool();

 private:
  unsigned __int128 state_ = 0;
  unsigned __int128 increment_ = 0;
  bool has_high_half_ = false;
  uint32_t high_half_ = 0;
  uint32_t bool_bits_ = 0;
  int bool_bits_left_ = 0;
};

}  // namespace attnlab
