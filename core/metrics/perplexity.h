// Perplexity from a summed negative log-likelihood: the per-token loss exponentiated.
#pragma once

#include <cstdint>

namespace attnlab {

// exp(nll_sum / tokens) with nll in nats; Error if tokens <= 0 or nll_sum is negative or NaN.
double perplexity(double nll_sum, int64_t tokens);

}  // namespace attnlab
