// int8 GEMM / convolution kernel contract (the core the quantized node kinds rest on). In a header of its own
// for now; the entries are table-ready (same style as kernels.h) and move into the KernelTable when it is merged:
//   qgemm_packed_size, qgemm_pack,        one implementation for every table (qgemm_pack.cc, generic code),
//   qconv2d_packed_size, qconv2d_pack:    since the scalar and AVX2 kernels read the same packed layout;
//   qgemm, qconv2d:                       scalar:: (the reference) and avx2::.
//
// What is computed, for m < M, n < N (a = A[m, :], w = B[n, :] as [N, K]):
//   acc[m, n] = bias[n] + sum_k (a[k] - za) * w[n, k]                    exact, int32 (wraps modulo 2^32)
//   scale[n]  = (sa * sw[n]) / sy                                         two fp32 operations, in this order
//   v         = float(acc[m, n]) * scale[n]                               fp32 (int32 -> fp32 rounds to even)
//   y[m, n]   = clamp(rint(v) + zy, qmin, qmax)                           rint: round half to even
// with qmin/qmax the run-time clamp (a fused relu / clamp) clipped to the output type's range, so the result
// saturates at both ends. A NaN v (hostile scales only) gives qmin. In numpy, bit for bit:
//   s = np.float32(np.float32(sa) * np.float32(sw[n])) / np.float32(sy)      (float32 arithmetic)
//   y = np.clip(np.rint(acc.astype(np.float32) * s) + zy, qmin, qmax)
// How: the kernels clamp v to [qmin - zy, qmax - zy] in fp32 first (exact: rint is monotone and the bounds
// are integers), then convert with round-to-nearest-even (cvtps2dq) and add zy in int32.
//
// Types: activations A u8 (quint8) or s8 (qint8), per-tensor scale sa and zero point za; weights s8 with zero
// point 0 and a scale per output channel (qcint8) or one per tensor; bias int32 with scale sa * sw[n] (null:
// zero); output u8 or s8 with scale sy and zero point zy.
//
// Conventions
//  * A is [M, K] with row stride lda (bytes), C is [M, N] with row stride ldc (bytes); their element type is
//    the one given to qgemm_pack. A rows are read only within [0, K): no slack past a row is needed.
//  * Weights are packed once at load by qgemm_pack into qgemm_packed_size(K, N) bytes (64-byte aligned).
//  * qgemm may split its work with Parallel; results do not depend on the thread count (int32 sums are exact,
//    so they do not depend on any blocking either).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/parallel.h"

namespace webxnn {

enum class QType : uint8_t { kU8, kS8 };  // quint8, qint8

// The quantization of one int8 GEMM, fixed at pack time.
struct QGemmQuant {
  QType a_type = QType::kS8;
  int32_t a_zero_point = 0;  // in a_type's range
  float a_scale = 1.f;
  const float* w_scales = nullptr;  // w_scale_count scales: N (per channel) or 1 (per tensor)
  size_t w_scale_count = 1;
  QType out_type = QType::kS8;
  int32_t out_zero_point = 0;  // in out_type's range
  float out_scale = 1.f;
};

// The packed layout (qgemm_pack.cc), common to every table:
//   [64-byte header][panel 0][panel 1]...  one panel per 16 output columns (N zero-padded to 16):
//   panel = [int32 bias'[16]][float scale[16]][Kp / 4 groups x 16 columns x 4 bytes], Kp = K rounded up to 4,
// where group g of column n holds w[n, 4g .. 4g+3] (zero past K). Four consecutive k bytes per int32 lane is
// the operand order of vpdpbusd (AVX-VNNI / AVX512-VNNI), so a VNNI kernel can read these panels as they are;
// AVX2 reads them with vpmaddubsw, whose int16 pair sums are the lane's two k pairs. (vpdpbusd multiplies u8
// activations, as kSmall does: a VNNI table would take the panels and scales as they are and pack the bias
// with kSmall's shift d whatever the weights, e.g. through a flag to qgemm_pack.)
// The kernels multiply a' = a + d with d chosen by the path (QPath): d = -128 for u8 activations on the s8
// paths (a ^ 0x80), d = +128 for s8 activations on the u8 path (also a ^ 0x80), else 0; the packed bias is
// bias'[n] = bias[n] - (za + d) * sum_k w[n, k] (wrapping int32).
constexpr size_t kQNR = 16;           // columns per panel
constexpr size_t kQHeaderBytes = 64;  // QGemmHeader, padded

// How the AVX2 kernel multiplies, chosen at pack time from the weights (avx2/qgemm.cc says why):
//   kSmall: every |w| <= 64: u8 activations straight into vpmaddubsw (255 * 64 * 2 < 2^15);
//   kSign:  no w is -128: s8 activations, |a| x sign(w, a);
//   kWide:  some w is -128: the 16-bit path.
enum class QPath : uint8_t { kSmall, kSign, kWide };

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

// Packs B (s8, [N, K] when b_is_nk, else [K, N]) with bias (null: zero) and the quantization q.
size_t qgemm_packed_size(size_t K, size_t N);
void qgemm_pack(size_t K, size_t N, const int8_t* B, bool b_is_nk, const int32_t* bias, const QGemmQuant& q,
                void* packed);

// ---- int8 convolution, NHWC, by IGEMM on the GEMM's tiles (groups = 1; depthwise has kernels of its own) ----
// The same quantization and requantization as qgemm: out[n, oy, ox, :] is the qgemm row of the input pixels the
// filter taps cover (ConvParams: pads, strides, dilations; p.act is ignored, the clamp is out_min / out_max),
// padding read as the input zero point. The filter is OHWI [OC, kh, kw, C] (s8), bias [OC] (null: zero).
// Packed: qgemm's layout for K = kh * kw * Cp (Cp = C rounded up to 4, each tap's channels zero-padded), then
// a row of Cp input zero points (the padding taps' row). Input rows are read only within [0, C).
size_t qconv2d_packed_k(const ConvParams& p);  // kh * kw * Cp
size_t qconv2d_packed_size(const ConvParams& p);
void qconv2d_pack(const ConvParams& p, const int8_t* filter_ohwi, const int32_t* bias, const QGemmQuant& q,
                  void* packed);

// C = requantized A x packed. A and C are u8 or s8 as packed; [out_min, out_max] is the clamp (clipped to the
// output type's range; out_min > out_max gives out_max everywhere).
#define WEBXNN_QGEMM_DECL                                                                                     \
  void qgemm(size_t M, size_t N, size_t K, const void* A, size_t lda, const void* packed, void* C, size_t ldc, \
             int32_t out_min, int32_t out_max, Parallel& par)

#define WEBXNN_QCONV_DECL                                                                                     \
  void qconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,       \
               const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par)

namespace scalar {
WEBXNN_QGEMM_DECL;
WEBXNN_QCONV_DECL;
}
namespace avx2 {
WEBXNN_QGEMM_DECL;
WEBXNN_QCONV_DECL;
}
#undef WEBXNN_QGEMM_DECL
#undef WEBXNN_QCONV_DECL

namespace internal {
// avx2/peak.cc (x86 builds only): `iters` steps of 10 independent u8 x s8 steps (vpmaddubsw + vpmaddwd +
// vpaddd, 32 multiply-adds = 64 ops each; 640 ops per step), the int8 peak yardstick of the benchmark. Only call
// after checking cpu_features().avx2.
int32_t int8_peak_loop(size_t iters);
}  // namespace internal

}  // namespace webxnn
