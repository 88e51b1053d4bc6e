#include "core/train/precision.h"

#include "core/config/config.h"
#include "core/tensor/blas.h"

namespace attnlab {

void use_precision(blas::Precision precision, const std::string& key) {
  if (precision == blas::Precision::kBf16) {
    const std::string reason = blas::bf16_unsupported_reason();
    if (!reason.empty()) {
      throw ConfigError(key + " is bf16 but " + reason +
                        ": set it to fp32 (--set train.precision=fp32, or --precision fp32 for "
                        "eval and translate), or run on a CPU with AVX512_BF16 or AMX");
    }
  }
  blas::set_precision(precision);
}

std::string matmul_engine() {
  const std::string openblas = "OpenBLAS kernel " + blas::core_name();
  if (blas::precision() == blas::Precision::kBf16)
    return "bf16 products: oneDNN " + blas::onednn_isa() + " (fp32: " + openblas + ")";
  return "fp32 products: " + openblas;
}

}  // namespace attnlab
