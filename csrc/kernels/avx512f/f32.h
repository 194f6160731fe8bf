// The fp32 GEMM family compiled on 512-bit tiles (this folder: avx2's sources again, kernels/avx2/isa_ns.h), as
// the AVX512-VNNI table takes it. Declarations only.
#pragma once

#include "kernels/avx2/avx2.h"  // WEBXNN_F32_GEMM_KERNELS
#include "kernels/kernels.h"

namespace webxnn {
namespace avx512f {

#define WEBXNN_AVX512F_DECLARE(fn) kernel_fn::fn fn;
WEBXNN_F32_GEMM_KERNELS(WEBXNN_AVX512F_DECLARE)
#undef WEBXNN_AVX512F_DECLARE

}  // namespace avx512f
}  // namespace webxnn
