// Perplexity: exp of the mean negative log-likelihood per token.
#include "core/metrics/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/util/check.h"

namespace attnlab {
namespace {

TEST(Perplexity, ExponentiatesTheMeanNll) {
  // Two tokens each with probability 1/4: NLL sum 2 ln 4, perplexity 4.
  EXPECT_NEAR(perplexity(2.0 * std::log(4.0), 2), 4.0, 1e-12);
  EXPECT_DOUBLE_EQ(perplexity(0.0, 10), 1.0);
  // A uniform model over N = 8000 pieces has perplexity N.
  EXPECT_NEAR(perplexity(5.0 * std::log(8000.0), 5), 8000.0, 1e-6);
}

TEST(Perplexity, RejectsNoTokensAndNegativeNll) {
  EXPECT_THROW(perplexity(1.0, 0), Error);
  EXPECT_THROW(perplexity(-1.0, 3), Error);
  EXPECT_THROW(perplexity(std::nan(""), 3), Error);
}

}  // namespace
}  // namespace attnlab
