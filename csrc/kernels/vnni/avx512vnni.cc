// The AVX512-VNNI table: int8 on qgemm_vnni.h with qgemm_zmm.h's 512-bit tiles, and fp32 GEMMs and
// convolutions on avx2/gemm.cc's 512-bit full-panel tiles (kernels/avx512f/). Compiled with -mavx512f
// -mavx512vl -mavx512bw -mavx512vnni (and AVX2's flags); dispatch.cc chooses it only on a CPU with all of them
// and the OS saving the ZMM state.
#define WEBXNN_VNNI_DPBUSD _mm256_dpbusd_epi32  // EVEX (the ymm peak loop and vnni-emu's shared code)
#include "kernels/avx512f/f32.h"
#include "kernels/vnni/qdw_zmm.h"
#include "kernels/vnni/qgemm_vnni.h"
#include "kernels/vnni/qgemm_zmm.h"

// Tiles of 8 rows x 32 columns (16 zmm accumulators, 2 weight vectors, the broadcast row group and the flip
// constant: 20 of EVEX's 32 registers) and 16 x 16 for a lone last panel; the int8 depthwise convolution on
// qdw_zmm.h's 512-bit strips; the fp32 GEMM family's entries from kernels/avx512f/.
const webxnn::KernelTable* webxnn::internal::avx512vnni_table() {
  static const KernelTable t = [] {
    KernelTable k = *vnni::table<8, 16, vnni::ZmmDotMul>("avx512vnni");
    k.qdwconv2d = avx2::qdwconv2d_run<vnni::ZmmDwStrip>;
#define WEBXNN_AVX512F_FILL(fn) k.fn = avx512f::fn;
    WEBXNN_F32_GEMM_KERNELS(WEBXNN_AVX512F_FILL)
#undef WEBXNN_AVX512F_FILL
    return k;
  }();
  return &t;
}

// The int8 peak of the 512-bit tiles: zmm vpdpbusd chains (64 multiply-adds each).
int32_t webxnn::internal::avx512vnni_peak_loop(size_t iters) { return vnni::peak_loop<vnni::ZmmOps>(iters); }
