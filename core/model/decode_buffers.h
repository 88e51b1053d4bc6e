// Buffers that decoder states leave behind, kept for the next state while a decoding of many
// batches runs: the packed weights (blas::PackBufferReuse) and the KV caches' keys and values.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor/blas.h"

namespace attnlab {

// While one lives (per thread), the key and value buffers of KV caches that end are kept, and the
// next caches take them instead of fresh memory; it also keeps packed-weight buffers as a
// blas::PackBufferReuse does. Decoding a split makes a decoder state per batch (Trainer::evaluate,
// translate_set), and a fresh buffer's first touch costs a page fault per 4 KiB: small's 32
// sentences x 33 positions take 13 MB of caches per batch, base's 51 MB. Scopes nest; when the
// last ends the kept buffers are freed, so no memory stays held between evaluations.
class DecodeBufferReuse {
 public:
  DecodeBufferReuse();
  ~DecodeBufferReuse();
  DecodeBufferReuse(const DecodeBufferReuse&) = delete;
  DecodeBufferReuse& operator=(const DecodeBufferReuse&) = delete;
  // Elements of T kept for reuse now (for tests).
  template <typename T>
  static int64_t kept_elements();

 private:
  blas::PackBufferReuse packs_;
};

namespace kv_buffers {

// A buffer of at least `elements` (float or double): a kept one when a DecodeBufferReuse lives
// and one is large enough (the smallest such; its contents are stale, and its size may exceed
// `elements`), else a fresh zeroed one. A KV cache writes every position before reading it.
template <typename T>
std::vector<T> take(int64_t elements);
// Keeps `buffer` for a later take() while a DecodeBufferReuse lives; frees it otherwise.
template <typename T>
void give_back(std::vector<T>&& buffer);

}  // namespace kv_buffers

}  // namespace attnlab
