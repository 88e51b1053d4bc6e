// Rng::normal by Box-Muller.
#include "core/util/rng.h"

#include <cmath>

namespace attnlab {

double Rng::normal() {
  double u1 = uniform();
  double u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace attnlab
