// The AVX512-VNNI int8 table (qgemm_vnni.h): compiled with -mavx512f -mavx512vl -mavx512bw -mavx512vnni (and
// AVX2's flags); dispatch.cc chooses it only on a CPU with all of them and the OS saving the ZMM state.
#define WEBXNN_VNNI_DPBUSD _mm256_dpbusd_epi32  // EVEX
#include "kernels/vnni/qgemm_vnni.h"

// EVEX has 32 ymm registers: 4 x 32 tiles (16 accumulators + 4 weight vectors + the broadcast row group) and
// 8 x 16 for a lone last panel. Not measured (no VNNI machine here).
const webxnn::KernelTable* webxnn::internal::avx512vnni_table() { return vnni::table<4, 8>("avx512vnni"); }
int32_t webxnn::internal::avx512vnni_peak_loop(size_t iters) { return vnni::peak_loop(iters); }
