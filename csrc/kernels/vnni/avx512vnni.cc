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

// The fp32 peak of the 512-bit tiles: 12 independent zmm FMA chains (384 flops per step), as
// avx2/peak.cc's fma_peak_loop on ymm.
float webxnn::internal::avx512_fma_peak_loop(size_t iters) {
  __m512 acc[12];
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  for (size_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
#pragma GCC unroll 11
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);  // returned so the loop cannot be removed
}
