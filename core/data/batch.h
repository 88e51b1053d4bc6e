// Batch: padded source and target token ids for one step.
// Teacher forcing: tgt_in = bos + y, tgt_out = y + eos.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab {

struct Batch {
  int64_t size = 0;              // B sentences
  int64_t src_length = 0;        // S, padded
  int64_t tgt_length = 0;        // T, padded
  std::vector<int32_t> src;      // (B,S), pad-filled
  std::vector<int32_t> tgt_in;   // (B,T), decoder input: bos y_1 ... y_{n}
  std::vector<int32_t> tgt_out;  // (B,T), expected output: y_1 ... y_n eos
  int64_t src_tokens = 0;        // non-pad source tokens
  int64_t tgt_tokens = 0;        // non-pad target tokens (the loss normaliser)
};

}  // namespace attnlab
