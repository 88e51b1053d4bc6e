// The precision of a process's float matrix products, chosen from a run's config or a command's
// --precision, and how the program reports it.
#pragma once

#include <string>

#include "core/tensor/blas.h"

namespace attnlab {

// Sets blas::precision. bf16 on a CPU without native bfloat16
// products is refused with a ConfigError (exit code 2) naming `key`, the CPU's flags and the fix;
// nothing falls back or emulates.
void use_precision(blas::Precision precision, const std::string& key);

// What multiplies the matrices now: "fp32 products: OpenBLAS kernel SkylakeX" or "bf16 products:
// oneDNN avx512_core_bf16 (fp32: OpenBLAS kernel SkylakeX)".
std::string matmul_engine();

}  // namespace attnlab
