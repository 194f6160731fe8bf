// AVX2 int8 GEMM and IGEMM convolution (table.def's qgemm, qconv2d, qd8_gemm), exact: compiled with -mavx2 -mfma.
// The tiles are qgemm_tiles.h's (shared with the VNNI tables); this file is AVX2's multiply steps and tile shapes.
//
// The u8 x s8 step vpmaddubsw (+ vpmaddwd with ones, + vpaddd) sums two products into an int16, which saturates
// for 255 * 127 * 2. Three exact paths, chosen at pack time from the weights (QPath, qgemm_layout.h):
//  * kSmall, every |w| <= 64 (7-bit weights, e.g. onnxruntime's reduce_range): u8 activations (s8 ones shifted
//    by +128) straight into vpmaddubsw: 255 * 64 * 2 = 32640 < 2^15.
//  * kSign, no w is -128 (symmetric 8-bit quantizers -- onnxruntime's, PyTorch's -- use [-127, 127]): s8
//    activations (u8 ones shifted by -128) and a * w as |a| * sign(w, a) (vpabsb, vpsignb): |pair| <= 32512.
//  * kWide, some w is -128: vpmovsxbw + vpmaddwd, exact for any weights.
// The shifts are folded into the packed bias. Measured (1 thread, CPU time, loaded machine, GOP/s, kSmall /
// kSign / kWide): 384^3 158 / 101 / 86, 128x3072x768 139 / 105 / 75, 3136x64x576 155 / 106 / 82. The vpsignb
// is what kSign pays: without it (wrong results, same tiles) 384^3 ran at 182. onnxruntime's AVX2 u8s8 kernel
// (plain vpmaddubsw on 8-bit weights, which may saturate) ran at 124-143 on these shapes in the same runs.
// Why kSign and not int16 weights (XNNPACK's AVX2 qs8 way: weights widened at pack time, vpmaddwd on
// activation pairs): both spend 4 vector ops per 32 MACs (vpsignb + vpmaddubsw + vpmaddwd + vpaddd against
// 2 x (vpmaddwd + vpaddd)), kSmall and onnxruntime 3, and int16 weights double the bytes streamed per MAC.
// An in-L1 loop microbenchmark (Zen 4, -O3, GOP/s): kSign 2x32 122, 4x16 130; kSmall 2x32 185; int16 with
// pre-widened activation pairs 2x32 123, 4x16 126, 3x32 / 4x24 / 6x16 80-97 (spills), with activations widened
// in the loop (vpmovzxbw + 2 vpshufd per 4 k) 104-120. So an exact AVX2 kernel for 8-bit weights tops out near
// 3/4 of a saturating one; the gains came from around the k loop instead (measured against the previous
// kernel, 1 thread, A/B alternating, u8 activations, GOP/s): pointwise 1x1 convs as plain GEMMs and one call
// per column strip of tiles (tile_strip loops down the rows) with a two-row epilogue (store2x16): MobileNetV2's
// 56x56x24->144 56 -> 82, 28x28x32->192 65 -> 89, 14x14x64->384 86 -> 105, 56x56x144->24 78 -> 85, 7x7x320->1280
// 114 -> 120; ResNet-50's 56x56x64->256 85 -> 104, 14x14x1024->256 121 -> 124; 3x3 56x56x64->64 level (110);
// image stems with merged filter rows (qconv2d_taps: a 3-channel tap was a 3-byte partial group, now a filter
// row is one run of kw * C bytes): ResNet-50's 7x7x3->64 s2 7 -> 77, MobileNetV2's 3x3x3->32 33 -> 47. Long K
// (a strip's weights past L1) runs in K blocks (tile_strip, kQBlockBytes; measured there).
//
// Tiles: 2 rows x 32 columns (two panels): 8 int32 accumulators, the panels' 4 weight vectors, the broadcast
// row group, its |a|, a product and the ones vector -- 16 ymm registers, no spills (the compiler reloads a
// weight vector rather than spill). Per row group and row: 1 broadcast (+ 1 xor for u8) and 1 vpabsb shared by
// 4 steps of vpsignb + vpmaddubsw + vpmaddwd + vpaddd; 4 x 16 tiles pay the broadcast and vpabsb per 2 steps.
// Measured here against 4 x 16 (1 thread, CPU time, the machine loaded, so +-15 %): level or ahead on 5 of
// 8 shapes; a lone last panel runs 4 x 16 tiles. Full K per tile (K blocks past 24 KB of a strip's weights),
// the accumulators started from the packed bias. M = 1 (GEMV, batch-1 FC layers) runs 1 x 64 tiles: 4 panels
// at once, 8 independent chains, streaming the weights. A row group (4 bytes) is broadcast from memory; a
// partial last group is assembled from the row's remaining bytes (no reads past K). Requantization per
// table.def.
//
//
// ODR hygiene: no std:: templates here; parallelism goes through internal.h; the tiles are in qgemm_tiles.h's
// anonymous namespace.
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/qgemm_tiles.h"

namespace webxnn {
namespace avx2 {
namespace {

// The kSmall / kSign step: acc += maddwd(maddubs(a', w'), 1) with a' = a, w' = w (kSmall) or a' = |a|,
// w' = sign(w, a) (kSign); row() is the |a| the 4 steps of a row group share.
template <bool kSmall>
struct MaddubsMul {
  static constexpr bool kZmm = false;  // qgemm_tiles.h's tile_one
  const __m256i ones = _mm256_set1_epi16(1);
  __attribute__((always_inline)) __m256i row(__m256i va) const { return kSmall ? va : _mm256_abs_epi8(va); }
  __attribute__((always_inline)) __m256i add(__m256i acc, __m256i va, __m256i ua, __m256i w) const {
    const __m256i s = kSmall ? w : _mm256_sign_epi8(w, va);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(ua, s), ones));
  }
};

// qgemm_tiles.h's policy: 2 x 32 and 4 x 16 tiles (above), the three paths by the packed QPath.
struct Avx2Policy {
  static constexpr int kMR2 = 2, kMR1 = 4;
  static constexpr bool kWide = true;
  static constexpr bool kCopyRows =
      false;  // qgemm_tiles.h's row copies: not measured on AVX2, which flips in the
  // tile (its xor issues beside the multiplies)
  template <typename F>
  static void select(const qtiles::QCtx& x, const F& f) {
    if (x.small) {
      if (x.flip) {
        f(qtiles::Flag<true>{}, MaddubsMul<true>{});
      } else {
        f(qtiles::Flag<false>{}, MaddubsMul<true>{});
      }
    } else if (x.flip) {
      f(qtiles::Flag<true>{}, MaddubsMul<false>{});
    } else {
      f(qtiles::Flag<false>{}, MaddubsMul<false>{});
    }
  }
};

}  // namespace

void qgemm(size_t M, size_t N, size_t K, const void* A, size_t lda, const void* packed, void* C, size_t ldc,
           int32_t out_min, int32_t out_max, Parallel& par) {
  qtiles::qgemm_run<Avx2Policy>(M, N, K, A, lda, packed, C, ldc, out_min, out_max, par);
}

void qconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
             const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par) {
  if (qconv2d_fp32acc_applies(p))  // image stems: exact on fp32 FMAs (qconv_fp32acc.cc)
    return qconv2d_fp32acc(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par);
  qtiles::qconv2d_run<Avx2Policy>(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par);
}

void qgemm_residual(size_t M, size_t N, size_t K, const void* A, size_t lda, const void* packed,
                    const int8_t* R, size_t ldr, void* C, size_t ldc, int32_t out_min, int32_t out_max,
                    const QElemParams& add, Parallel& par) {
  qtiles::qgemm_residual_run<Avx2Policy>(M, N, K, A, lda, packed, R, ldr, C, ldc, out_min, out_max, add, par);
}

void qconv2d_fp32acc_residual(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH,
                              size_t OW, const void* packed, const int8_t* residual, void* out,
                              int32_t out_min, int32_t out_max, const QElemParams& add, Parallel& par) {
  qconv2d_fp32acc(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par);
  int8_t* y = static_cast<int8_t*>(out);
  qadd(flat_binary_shape(N * OH * OW * p.groups * p.group_output_channels), y, residual, y, add, par);
}

void qconv2d_residual(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
                      const void* packed, const int8_t* residual, void* out, int32_t out_min, int32_t out_max,
                      const QElemParams& add, Parallel& par) {
  if (qconv2d_fp32acc_applies(p))
    return qconv2d_fp32acc_residual(p, N, H, W, in, OH, OW, packed, residual, out, out_min, out_max, add,
                                    par);
  qtiles::qconv2d_residual_run<Avx2Policy>(p, N, H, W, in, OH, OW, packed, residual, out, out_min, out_max,
                                           add, par);
}

void qd8_gemm(size_t M, size_t N, size_t K, const int8_t* A, size_t lda, const RowQuant* aq,
              const void* packed, float* C, size_t ldc, float out_min, float out_max, Parallel& par) {
  qtiles::qd8_gemm_run<Avx2Policy>(M, N, K, A, lda, aq, packed, C, ldc, out_min, out_max, par);
}

}  // namespace avx2
}  // namespace webxnn
