// The VNNI int8 tables (issue 19): AVX2's table with qgemm / qconv2d / qd8_gemm and their packers replaced by
// qgemm_tiles.h's tiles on vpdpbusd (u8 x s8, four products summed into each int32 lane, no int16
// saturation: exact for any s8 weights, so one path, QPath::kDot: u8 activations, s8 ones shifted by +128 with
// the shift folded into the packed bias, qgemm_layout.h). Depthwise and element-wise entries stay AVX2's: they
// have no 4-byte dot products to gain from.
//
// Each table is its own translation unit with its own flags, naming the one instruction (acc, a_u8, w_s8) ->
// acc + the 4-byte dot products, as the macro WEBXNN_VNNI_DPBUSD before including this header:
//   avx512vnni.cc  -mavx512vnni -mavx512vl -mavx512bw -mavx512f (Ice Lake+ / Zen 4): qgemm_zmm.h's 512-bit
//                  tiles (ZmmDotMul), which replace this header's ymm ones; _mm256_dpbusd_epi32 names EVEX's
//   avxvnni.cc     -mavxvnni: _mm256_dpbusd_avx_epi32 (VEX; Alder Lake+ clients, Zen 5)
//   emu.cc         AVX2 flags, testing builds only: an exact AVX2 emulation, so every line of these kernels
//                  but the instruction itself runs (and is tested) on CPUs without VNNI.
// zmm on AVX512-VNNI: one vpdpbusd per 16-column panel, twice the int8 rate of ymm on an Emerald Rapids Xeon
// (bench kernels, 1 thread: int8 GEMM 384^3 366 -> 713 GOP/s, 98 % of the ymm peak -> 99 % of the zmm one).
//
// ODR: everything here and in qgemm_tiles.h is in an anonymous namespace (each TU gets its own copy; the EVEX
// TU's code can never stand in for another's); the TUs export only their table function (internal.h).
#pragma once

#ifndef WEBXNN_VNNI_DPBUSD
#error "define WEBXNN_VNNI_DPBUSD (the vpdpbusd intrinsic or its emulation) before including qgemm_vnni.h"
#endif

#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/qgemm_tiles.h"
#include "kernels/internal.h"
#include "kernels/qgemm_layout.h"

namespace webxnn {
namespace vnni {
namespace {

// acc += the 4-byte dot products of a (u8) and 8 columns of w (s8): one vpdpbusd.
struct DotMul {
  static constexpr bool kZmm = false;  // qgemm_tiles.h's tile_one; avx512vnni.cc's ZmmDotMul has its own
  __attribute__((always_inline)) __m256i row(__m256i va) const { return va; }
  __attribute__((always_inline)) __m256i add(__m256i acc, __m256i va, __m256i, __m256i w) const {
    return WEBXNN_VNNI_DPBUSD(acc, va, w);
  }
};

// qgemm_tiles.h's policy: tiles of MR2 rows x 32 columns and MR1 rows x 16, multiplied by Mul (DotMul, or
// the 512-bit ZmmDotMul); one path (QPath::kDot), the activations flipped when they are s8.
template <int MR2, int MR1, typename Mul>
struct DotPolicy {
  static constexpr int kMR2 = MR2, kMR1 = MR1;
  static constexpr bool kWide = false;
  static constexpr bool kCopyRows = Mul::kZmm;  // qgemm_tiles.h's run_block_flipped / run_block_padded
  template <typename F>
  static void select(const qtiles::QCtx& x, const F& f) {
    if (x.flip) {
      f(qtiles::Flag<true>{}, Mul{});
    } else {
      f(qtiles::Flag<false>{}, Mul{});
    }
  }
};

// qconv2d on P's tiles. The ymm tables run image stems (C <= 4) on AVX2's exact fp32-FMA path instead, which
// reads any packed path's bias and shift (kDot's too) and takes their NCHW image in place (the table keeps
// AVX2's qconv2d_reads_nchw, so the two route alike); the 512-bit tiles run stems themselves (merged filter
// rows, qgemm_layout.h, on qgemm_tiles.h's padded copy) after the planner's NHWC transpose: ResNet-50's
// 7x7x3->64 s2 stem on an Emerald Rapids Xeon 2.56 -> 0.64 ms (onnxruntime 1.31), MobileNetV2's 3x3x3->32 s2
// 0.28 -> 0.16 (bench kernels, 1 thread).
// (Also the table's qconv2d_reads_nchw.)
template <typename P>
bool stem_on_fp32(const ConvParams& p) {
  return !P::kCopyRows && avx2::qconv2d_fp32acc_applies(p);
}

template <typename P>
void qconv2d_dot(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
                 const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par) {
  if (stem_on_fp32<P>(p))
    return avx2::qconv2d_fp32acc(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par);
  qtiles::qconv2d_run<P>(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par);
}

// qconv2d_residual likewise.
template <typename P>
void qconv2d_residual_dot(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH,
                          size_t OW, const void* packed, const int8_t* residual, void* out, int32_t out_min,
                          int32_t out_max, const QElemParams& add, Parallel& par) {
  if (stem_on_fp32<P>(p)) {
    return avx2::qconv2d_fp32acc_residual(p, N, H, W, in, OH, OW, packed, residual, out, out_min, out_max,
                                          add, par);
  }
  qtiles::qconv2d_residual_run<P>(p, N, H, W, in, OH, OW, packed, residual, out, out_min, out_max, add, par);
}

// AVX2's table (the CPU has AVX2 + FMA + F16C whenever a VNNI table is chosen: dispatch.cc) with the int8 GEMM
// entries on P's tiles.
template <typename P>
KernelTable make_table(const char* name) {
  KernelTable t = *internal::avx2_table();
  t.name = name;
  t.qgemm_pack = qgemm_pack_dot;
  t.qgemm = qtiles::qgemm_run<P>;
  t.qconv2d_pack = qconv2d_pack_dot;
  t.qconv2d = qconv2d_dot<P>;
  t.qconv2d_reads_nchw = stem_on_fp32<P>;
  t.qgemm_residual = qtiles::qgemm_residual_run<P>;
  t.qconv2d_residual = qconv2d_residual_dot<P>;
  t.qd8_gemm_pack = qd8_gemm_pack_dot;
  t.qd8_gemm = qtiles::qd8_gemm_run<P>;
  return t;
}

// The int8 peak yardstick of a VNNI machine: `iters` steps of kPeakChains independent vpdpbusd on V's vectors
// (YmmOps: 32 multiply-adds each; qgemm_zmm.h's ZmmOps: 64). Each chain multiplies its own accumulator's bytes,
// so nothing can be hoisted; 12 chains cover vpdpbusd's latency (4-5 cycles) at two per cycle and fit 16
// registers with the weights.
constexpr int kPeakChains = internal::kVnniPeakChains;
template <typename V>
int32_t peak_loop(size_t iters) {
  typename V::Vec acc[kPeakChains];
  const typename V::Vec w = V::bytes(-5);
#pragma GCC unroll 12
  for (int i = 0; i < kPeakChains; ++i) acc[i] = V::lanes(i);
  for (size_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kPeakChains; ++i) acc[i] = V::dot(acc[i], acc[i], w);
  }
#pragma GCC unroll 11
  for (int i = 1; i < kPeakChains; ++i) acc[0] = V::add(acc[0], acc[i]);
  return V::first(acc[0]);  // returned so the loop cannot be removed
}

struct YmmOps {
  using Vec = __m256i;
  static Vec bytes(char b) { return _mm256_set1_epi8(b); }
  static Vec lanes(int32_t v) { return _mm256_set1_epi32(v); }
  static Vec dot(Vec acc, Vec a, Vec w) { return WEBXNN_VNNI_DPBUSD(acc, a, w); }
  static Vec add(Vec a, Vec b) { return _mm256_add_epi32(a, b); }
  static int32_t first(Vec v) { return _mm256_cvtsi256_si32(v); }
};

// The table `name` on tiles of MR2 x 32 and MR1 x 16 (each TU's table function).
template <int MR2, int MR1, typename Mul = DotMul>
const KernelTable* table(const char* name) {
  static const KernelTable t = make_table<DotPolicy<MR2, MR1, Mul>>(name);
  return &t;
}

}  // namespace
}  // namespace vnni
}  // namespace webxnn
