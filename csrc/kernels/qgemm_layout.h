// The packed layout of the int8 GEMM / convolution entries (table.def: qgemm, qconv2d), private to
// csrc/kernels: the scalar packers (scalar/qgemm_pack.cc) write it, and every table's qgemm / qconv2d reads it
// (today scalar/qgemm.cc and avx2/qgemm.cc; AVX2 keeps the scalar packers).
//
//   [64-byte header][panel 0][panel 1]...  one panel per 16 output columns (N zero-padded to 16):
//   panel = [int32 bias'[16]][float scale[16]][Kp / 4 groups x 16 columns x 4 bytes], Kp = K rounded up to 4,
// where group g of column n holds w[n, 4g .. 4g+3] (zero past K). Four consecutive k bytes per int32 lane is
// the operand order of vpdpbusd (AVX-VNNI / AVX512-VNNI): the VNNI tables (vnni/qgemm_vnni.h) read these panels
// as they are; AVX2 reads them with vpmaddubsw, whose int16 pair sums are the lane's two k pairs. vpdpbusd
// multiplies u8 activations, as kSmall does, so the VNNI tables pack with QPath::kDot: kSmall's shift d
// whatever the weights (their packers, the *_pack_dot functions below, share the scalar packers' code).
// The kernels multiply a' = a + d with d chosen by the path (QPath): d = -128 for u8 activations on the s8
// paths (a ^ 0x80), d = +128 for s8 activations on the u8 path (also a ^ 0x80), else 0; the packed bias is
// bias'[n] = bias[n] - (za + d) * sum_k w[n, k] (wrapping int32).
// qconv2d's packed buffer, per group (p.groups of them, qconv2d_group_bytes apart): qgemm's layout for
// K = taps * Tp (QConvTaps: kh * kw taps of C channels, or for a merged-row conv kh taps of kw * C bytes; Tp =
// those bytes rounded up to 4, each tap zero-padded), then a row of Tp input zero points (the padding taps'
// row), padded to 64 bytes.
// qd8_gemm's packed buffer: qgemm's layout for s8 activations with zero point 0, unit activation and output
// scales (each column's scale is then w_scale[n], its bias' -d * sum_k w), then the section Qd8Columns below
// (Np = N rounded up to 16): the kernels subtract the row's zero point times the column sum and add the bias
// in their fp32 epilogue.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace webxnn {

constexpr size_t kQNR = 16;  // columns per panel
constexpr size_t kQHeaderBytes = 64;  // QGemmHeader, padded

// How the AVX2 kernel multiplies, chosen at pack time from the weights (avx2/qgemm.cc says why):
//   kSmall: every |w| <= 64: u8 activations straight into vpmaddubsw (255 * 64 * 2 < 2^15);
//   kSign:  no w is -128: s8 activations, |a| x sign(w, a);
//   kWide:  some w is -128: the 16-bit path;
// and how the VNNI tables multiply, whatever the weights:
//   kDot:   u8 activations (s8 ones shifted by +128, as kSmall) into vpdpbusd (u8 x s8, exact for any w).
enum class QPath : uint8_t { kSmall, kSign, kWide, kDot };

struct QGemmHeader {
  uint64_t K, N;
  int32_t out_zero_point;
  int32_t a_shift;  // d above: -128, 0 or +128 (a ^ 0x80 whenever it is not 0)
  QType a_type, out_type;
  QPath path;
};

// What every qgemm reads from the packed buffer, and its clamp: [out_min, out_max] clipped to the output type's
// range, minus the output zero point, as floats (the bounds the kernels clamp v to before rounding).
struct QGemmRun {
  QGemmHeader h;
  size_t panel_bytes;  // one panel of K
  float lo, hi;
};
QGemmRun qgemm_run_params(const void* packed, size_t K, int32_t out_min, int32_t out_max);
// The clamp a q8 kernel applies before rounding: [out_min, out_max] clipped to the output type's range, minus
// the output zero point (qgemm_run_params' lo and hi; the depthwise kernels, qdw_layout.h, use it too).
void q8_clamp_bounds(QType out_type, int32_t out_zero_point, int32_t out_min, int32_t out_max, float* lo,
                     float* hi);

// The bytes of qgemm's layout for K x N (= qgemm_packed_size), and qconv2d's GEMM depth kh * kw * Cp: where
// qconv2d's zero-point row starts is qgemm_layout_bytes(qconv2d_packed_k(p), p.group_output_channels).
size_t qgemm_layout_bytes(size_t K, size_t N);
size_t qconv2d_packed_k(const ConvParams& p);
// How qconv2d's K splits into taps. A conv with few input channels (an image stem, C = 3) and groups 1 merges
// each filter row's kw taps into one tap of kw * C bytes: the input pixels of a filter row are one contiguous
// run (in NHWC with groups 1), so the kernels read it as whole row groups instead of kw partial ones (C = 3:
// every tap a 3-byte tail). Weight (ky, kx, c) sits at ky * tap_k + kx * tap_c + c of a packed row.
struct QConvTaps {
  bool merged;
  size_t taps;  // kh * kw, or kh when merged
  size_t tap_c;  // bytes from one kx to the next in a packed row: Tp, or C when merged
  size_t row_k;  // bytes of input read per tap: C, or kw * C when merged
  size_t tap_k;  // row_k rounded up to 4 (Tp): the packed bytes per tap, the zero-point row's length
};
QConvTaps qconv2d_taps(const ConvParams& p);
// One group's bytes in qconv2d's packed buffer (a multiple of 64).
size_t qconv2d_group_bytes(const ConvParams& p);

// The scalar kernels' view of one output: column n's packed bias' plus sum_k (a[k] + a_shift) * w[n, k] over the
// row a (u8 or s8 bytes per a_u8), wrapping like int32; *scale gets the column's packed scale. Out of line in
// scalar/qgemm_pack.cc (baseline flags), shared by the scalar qgemm and qd8_gemm.
uint32_t qgemm_column_sum(const void* packed, size_t panel_bytes, size_t n, const uint8_t* a, size_t K,
                          bool a_u8, int32_t a_shift, float* scale);

// The VNNI tables' packers (table.def's qgemm_pack, qconv2d_pack, qd8_gemm_pack): the scalar ones' layout with
// QPath::kDot whatever the weights. Generic code (scalar/qgemm_pack.cc, scalar/qd8.cc), run once at load.
void qgemm_pack_dot(size_t K, size_t N, const int8_t* B, bool b_is_nk, const int32_t* bias,
                    const QGemmQuant& q, void* packed);
void qconv2d_pack_dot(const ConvParams& p, const int8_t* filter_ohwi, const int32_t* bias,
                      const QGemmQuant& q, void* packed);
void qd8_gemm_pack_dot(size_t K, size_t N, const int8_t* B, bool b_is_nk, const float* w_scales,
                       size_t w_scale_count, const float* bias, void* packed);

// qd8_gemm's section after qgemm's layout, 64-byte aligned: int32 wsum[Np] then float bias[Np].
struct Qd8Columns {
  const int32_t* wsum;
  const float* bias;
};
Qd8Columns qd8_columns(const void* packed, size_t K, size_t N);

}  // namespace webxnn
