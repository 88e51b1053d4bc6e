// Perplexity.
#include "core/metrics/perplexity.h"

#include <cmath>

#include "core/util/check.h"

namespace attnlab {

double perplexity(double nll_sum, int64_t tokens) {
  CHECK(tokens > 0) << "perplexity needs at least one token, got " << tokens;
  CHECK(nll_sum >= 0.0) << "perplexity needs a non-negative summed NLL, got " << nll_sum;
  return std::exp(nll_sum / static_cast<double>(tokens));
}

}  // namespace attnlab
