// avx2/rows.cc compiled again for the AVX512-VNNI table, in namespace avx512f: its softmax rows on zmm
// (WEBXNN_F32_ZMM; kernels/avx2/isa_ns.h).
#include "kernels/avx2/rows.cc"
