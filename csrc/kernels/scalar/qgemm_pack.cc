// int8 GEMM weight packing (the table entries qgemm_packed_size, qgemm_pack, qconv2d_packed_size, qconv2d_pack,
// and the VNNI tables' qgemm_pack_dot / qconv2d_pack_dot) into qgemm_layout.h's layout, which the AVX2 and VNNI
// tables' qgemm / qconv2d read too: generic code, run once at load.
#include <cstring>
#include <vector>

#include "kernels/qdw_layout.h"
#include "kernels/qgemm_layout.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {

namespace {
size_t k_padded(size_t K) { return (K + 3) / 4 * 4; }
size_t panel_bytes(size_t K) { return kQNR * 8 + k_padded(K) * kQNR; }
}  // namespace

QConvTaps qconv2d_taps(const ConvParams& p) {
  const size_t C = p.group_input_channels, kw = p.kernel_w;
  QConvTaps t;
  // Merged when C is not a multiple of 4 and small (the partial groups dominate) and a filter row's input is
  // one run: groups 1 (pixels C bytes apart), no horizontal dilation; 64 bytes bound the kernels' gather buffer.
  t.merged = p.groups == 1 && p.dilation_w == 1 && kw > 1 && C < 8 && C % 4 != 0 && kw * C <= 64;
  t.taps = size_t{p.kernel_h} * (t.merged ? 1 : kw);
  t.row_k = t.merged ? kw * C : C;
  t.tap_k = k_padded(t.row_k);
  t.tap_c = t.merged ? C : t.tap_k;
  return t;
}

size_t qconv2d_packed_k(const ConvParams& p) {
  const QConvTaps t = qconv2d_taps(p);
  return t.taps * t.tap_k;
}

size_t qgemm_layout_bytes(size_t K, size_t N) {
  return kQHeaderBytes + (N + kQNR - 1) / kQNR * panel_bytes(K);
}

size_t qconv2d_group_bytes(const ConvParams& p) {
  const size_t bytes =
      qgemm_layout_bytes(qconv2d_packed_k(p), p.group_output_channels) + qconv2d_taps(p).tap_k;
  return (bytes + 63) / 64 * 64;  // each group's panels stay 64-byte aligned
}

namespace {

// qgemm_pack (dot: qgemm_pack_dot, the VNNI tables' QPath::kDot).
void pack_qgemm(size_t K, size_t N, const int8_t* B, bool b_is_nk, const int32_t* bias, const QGemmQuant& q,
                void* packed, bool dot) {
  uint8_t* base = static_cast<uint8_t*>(packed);
  std::memset(base, 0, qgemm_layout_bytes(K, N));
  QGemmHeader h{};
  h.K = K;
  h.N = N;
  h.out_zero_point = q.out_zero_point;
  h.a_type = q.a_type;
  h.out_type = q.out_type;
  const auto w_at = [&](size_t n, size_t k) { return b_is_nk ? B[n * K + k] : B[k * N + n]; };
  int w_min = 0, w_max = 0;
  for (size_t i = 0; i < N * K; ++i) {
    w_min = B[i] < w_min ? B[i] : w_min;
    w_max = B[i] > w_max ? B[i] : w_max;
  }
  h.path = dot                           ? QPath::kDot
           : w_min >= -64 && w_max <= 64 ? QPath::kSmall
           : w_min == -128               ? QPath::kWide
                                         : QPath::kSign;
  const bool a_u8 = q.a_type == QType::kU8;
  const bool u8_path =
      h.path == QPath::kSmall || h.path == QPath::kDot;  // the kernels multiply u8 activations
  h.a_shift = u8_path ? (a_u8 ? 0 : 128) : (a_u8 ? -128 : 0);
  // The kernels see a + d instead of a, so they add d * sum_k w too much: fold -(za + d) * sum_k w.
  const uint32_t za_d = static_cast<uint32_t>(q.a_zero_point + h.a_shift);
  const size_t pb = panel_bytes(K);
  for (size_t n = 0; n < N; ++n) {
    uint8_t* panel = base + kQHeaderBytes + n / kQNR * pb;
    const size_t j = n % kQNR;
    int8_t* w = reinterpret_cast<int8_t*>(panel + kQNR * 8);
    // Unsigned arithmetic: wraps like the kernels' int32 accumulators instead of overflowing (UB) on hostile
    // weights.
    uint32_t wsum = 0;
    for (size_t k = 0; k < K; ++k) {
      const int8_t v = w_at(n, k);
      w[(k / 4) * kQNR * 4 + j * 4 + k % 4] = v;
      wsum += static_cast<uint32_t>(static_cast<int32_t>(v));
    }
    const int32_t b = static_cast<int32_t>((bias ? static_cast<uint32_t>(bias[n]) : 0u) - za_d * wsum);
    const float sw = q.w_scales[q.w_scale_count > 1 ? n : 0];
    const float scale = q.a_scale * sw / q.out_scale;
    std::memcpy(panel + j * 4, &b, 4);
    std::memcpy(panel + kQNR * 4 + j * 4, &scale, 4);
  }
  std::memcpy(base, &h, sizeof(h));
}

void pack_qconv2d(const ConvParams& p, const int8_t* filter_ohwi, const int32_t* bias, const QGemmQuant& q,
                  void* packed, bool dot) {
  const QConvTaps ct = qconv2d_taps(p);
  const size_t kh = p.kernel_h, kw = p.kernel_w, C = p.group_input_channels;
  const size_t OC = p.group_output_channels, K = ct.taps * ct.tap_k;
  std::vector<int8_t> b(OC * K, 0);  // [OC, taps x Tp]: each tap's bytes zero-padded to the row groups
  for (size_t g = 0; g < p.groups; ++g) {
    const int8_t* f = filter_ohwi + g * OC * kh * kw * C;
    for (size_t o = 0; o < OC; ++o)
      for (size_t ky = 0; ky < kh; ++ky)
        for (size_t kx = 0; kx < kw; ++kx)
          std::memcpy(&b[o * K + ky * (K / kh) + kx * ct.tap_c], f + ((o * kh + ky) * kw + kx) * C, C);
    QGemmQuant qg = q;
    if (q.w_scale_count > 1) {
      qg.w_scales = q.w_scales + g * OC;
      qg.w_scale_count = OC;
    }
    uint8_t* dst = static_cast<uint8_t*>(packed) + g * qconv2d_group_bytes(p);
    pack_qgemm(K, OC, b.data(), true, bias ? bias + g * OC : nullptr, qg, dst, dot);
    uint8_t* zero_row = dst + qgemm_layout_bytes(K, OC);
    std::memset(zero_row, static_cast<uint8_t>(q.a_zero_point), ct.tap_k);  // the raw byte of za (u8 or s8)
  }
}

}  // namespace

void qgemm_pack_dot(size_t K, size_t N, const int8_t* B, bool b_is_nk, const int32_t* bias,
                    const QGemmQuant& q, void* packed) {
  pack_qgemm(K, N, B, b_is_nk, bias, q, packed, true);
}

void qconv2d_pack_dot(const ConvParams& p, const int8_t* filter_ohwi, const int32_t* bias,
                      const QGemmQuant& q, void* packed) {
  pack_qconv2d(p, filter_ohwi, bias, q, packed, true);
}

namespace scalar {

size_t qgemm_packed_size(size_t K, size_t N) { return qgemm_layout_bytes(K, N); }

void qgemm_pack(size_t K, size_t N, const int8_t* B, bool b_is_nk, const int32_t* bias, const QGemmQuant& q,
                void* packed) {
  pack_qgemm(K, N, B, b_is_nk, bias, q, packed, false);
}

size_t qconv2d_packed_size(const ConvParams& p) { return size_t{p.groups} * qconv2d_group_bytes(p); }

void qconv2d_pack(const ConvParams& p, const int8_t* filter_ohwi, const int32_t* bias, const QGemmQuant& q,
                  void* packed) {
  pack_qconv2d(p, filter_ohwi, bias, q, packed, false);
}

}  // namespace scalar

uint32_t qgemm_column_sum(const void* packed, size_t panel_bytes, size_t n, const uint8_t* a, size_t K,
                          bool a_u8, int32_t a_shift, float* scale) {
  const uint8_t* panel = static_cast<const uint8_t*>(packed) + kQHeaderBytes + n / kQNR * panel_bytes;
  const size_t j = n % kQNR;
  const int8_t* w = reinterpret_cast<const int8_t*>(panel + kQNR * 8) + j * 4;
  int32_t b;
  std::memcpy(&b, panel + j * 4, 4);
  std::memcpy(scale, panel + kQNR * 4 + j * 4, 4);
  // The kernels' view of a, a + d (qgemm_layout.h); the packed bias holds the correction.
  // Unsigned arithmetic: wraps like int32 would, without UB.
  uint32_t acc = static_cast<uint32_t>(b);
  for (size_t k = 0; k < K; ++k) {
    const int32_t ak = a_u8 ? static_cast<int32_t>(a[k]) : static_cast<int32_t>(static_cast<int8_t>(a[k]));
    acc += static_cast<uint32_t>((ak + a_shift) * w[(k / 4) * kQNR * 4 + k % 4]);
  }
  return acc;
}

QGemmRun qgemm_run_params(const void* packed, size_t K, int32_t out_min, int32_t out_max) {
  QGemmRun r;
  std::memcpy(&r.h, packed, sizeof(r.h));
  r.panel_bytes = panel_bytes(K);
  q8_clamp_bounds(r.h.out_type, r.h.out_zero_point, out_min, out_max, &r.lo, &r.hi);
  return r;
}

void q8_clamp_bounds(QType out_type, int32_t out_zero_point, int32_t out_min, int32_t out_max, float* lo,
                     float* hi) {
  const bool out_u8 = out_type == QType::kU8;
  const int32_t l = out_min > (out_u8 ? 0 : -128) ? out_min : (out_u8 ? 0 : -128);
  const int32_t u = out_max < (out_u8 ? 255 : 127) ? out_max : (out_u8 ? 255 : 127);
  *lo = static_cast<float>(l - out_zero_point);
  *hi = static_cast<float>(u - out_zero_point);
}

}  // namespace webxnn
