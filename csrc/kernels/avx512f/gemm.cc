// avx2/gemm.cc compiled again for the AVX512-VNNI table, in namespace avx512f, on gemm.cc's 512-bit full-panel
// tiles (WEBXNN_F32_ZMM; kernels/avx2/isa_ns.h).
#include "kernels/avx2/gemm.cc"
