// bf16 products in a test's scope: blas::Precision::kBf16 until destroyed, then fp32 again, even
// when the test throws in between.
#pragma once

#include "core/tensor/blas.h"

namespace attnlab::test {

class Bf16PrecisionScope {
 public:
  Bf16PrecisionScope() { blas::set_precision(blas::Precision::kBf16); }
  ~Bf16PrecisionScope() { blas::set_precision(blas::Precision::kFp32); }
  Bf16PrecisionScope(const Bf16PrecisionScope&) = delete;
  Bf16PrecisionScope& operator=(const Bf16PrecisionScope&) = delete;
};

}  // namespace attnlab::test
