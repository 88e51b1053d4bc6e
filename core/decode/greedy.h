// Greedy decoding with the KV cache: the most likely token at every step until eos.
#pragma once

#include <cstdint>
#include <vector>

#include "core/data/batch.h"
#include "core/model/transformer.h"

namespace attnlab {

// Decodes every sentence of source.src for at most max_length tokens; returns token ids without
// bos and eos.
template <typename T>
std::vector<std::vector<int32_t>> greedy_decode(Transformer<T>& model, const Batch& source,
                                                int64_t max_length);

}  // namespace attnlab
