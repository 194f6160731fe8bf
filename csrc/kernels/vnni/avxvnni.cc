// The AVX-VNNI int8 table (qgemm_vnni.h): compiled with -mavxvnni (and AVX2's flags); dispatch.cc chooses it on
// a CPU with AVX-VNNI (CPUID 7.1 EAX bit 4) and AVX2 + FMA + F16C but without AVX512-VNNI.
#define WEBXNN_VNNI_DPBUSD _mm256_dpbusd_avx_epi32  // VEX
#include "kernels/vnni/qgemm_vnni.h"

// 16 ymm registers (VEX): AVX2's tile shapes, 2 x 32 (8 accumulators + 4 weight vectors + the broadcast) and
// 4 x 16. Not measured (no VNNI machine here).
const webxnn::KernelTable* webxnn::internal::avxvnni_table() { return vnni::table<2, 4>("avxvnni"); }
int32_t webxnn::internal::avxvnni_peak_loop(size_t iters) { return vnni::peak_loop<vnni::YmmOps>(iters); }
