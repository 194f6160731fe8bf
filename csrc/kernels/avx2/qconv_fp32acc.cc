// AVX2 int8 convolution with few input channels (image stems) on fp32 FMAs, exact (compiled with -mavx2
// -mfma): qconv2d (qgemm.cc) routes here when qconv2d_fp32acc_applies(p).
//
// Why fp32: a stem's K is short (3x3x3: 27 products per output), so the exact AVX2 u8 x s8 steps of qgemm.cc
// run on merged filter rows of 9-12 bytes and the per-output requantization dominates (MobileNetV2's int8 3x3
// stride-2 stem 224x224x3 -> 32: 0.71 ms, ~30 GOP/s), while the fp32 stem of the same shape (igemm.cc) runs
// at the FMA rate (0.24 ms). The int32 sum of (x - za) * w is a sum of integers with |x - za| <= 255 and |w|
// <= 128, so while K * 255 * 128 < 2^24 every partial sum, in any order, is an integer that fp32 holds
// exactly: FMAs on float(x - za) and float(w) give exactly the int32 sum (kMaxExactK). Then the usual
// epilogue: cvtps2dq (exact), + the int32 bias, requantization per table.def (qrequant.h), so the bits are
// those of every other qconv2d path (with small biases, FCtx::fbias, the sums start from the bias instead).
//
// No packed-layout change: per call, the packed s8 panels (qgemm_layout.h) are read into fp32 panels in
// scratch, [int32 bias[16]][float scale[16]][float bias[16]][K x 16 weights] in (ky, kx, c) order, with the
// original bias (packed bias' + (za + d) * sum_k w: the packer folded the zero point and the path's shift d
// into it, and this kernel subtracts za from the input instead). Per task (a range of output rows), input
// rows are converted once into a ring of float(x - za) rows over the padded width (padding 0.0, i.e. x = za),
// each kept while the output rows that read it run; an output row then runs as tiles of 6 pixels x 16 columns
// (gemm_microkernel.h's tile, as igemm.cc's RGB stem: a filter row is kw * C contiguous floats of a ring
// row). The ring rows are filled from an NCHW image's planes as well (qconv2d_reads_nchw), so an ONNX model's
// image transpose never runs.
//
// ODR hygiene: no std:: templates here; parallelism and scratch go through internal.h.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/gemm_microkernel.h"
#include "kernels/avx2/qrequant.h"
#include "kernels/avx2/simd.h"
#include "kernels/internal.h"
#include "kernels/qgemm_layout.h"

namespace webxnn {
namespace avx2 {
namespace {

// The exactness bound: 514 * 255 * 128 = 16,776,960 < 2^24 = 16,777,216: up to there every partial sum is an
// integer fp32 holds exactly (515 products could reach 16,809,600).
constexpr size_t kMaxExactK = 514;
// Where fp32 pays. Measured against qgemm.cc's IGEMM (1 thread, u8 in, 8-bit weights, min of 40 calls, best
// of 3 alternating processes, loaded machine; ms old -> new): C <= 4 on every shape tried, 3x3 s2
// 224x224x3->32 0.463 -> 0.320, 7x7 s2 224x224x3->64 3.14 -> 2.59, 3x3 112x112x1->16 0.221 -> 0.086, 3x3
// 56x56x2->32 0.096 -> 0.063, 3x3 112x112x4->32 0.506 -> 0.384, 5x5 56x56x4->64 0.609 -> 0.471, 7x7
// 56x56x4->64 1.127 -> 0.892 (K = 196); past it less: 3x3 C = 5, 6, 7 by 1.16-1.19x, C = 8, 12, 16 by
// 1.06-1.11x, 5x5 C = 7 (K = 175) level.
constexpr size_t kMaxInputChannels = 4;
// Floats before a fp32 panel's weights: int32 bias, float scale, the bias as floats.
constexpr size_t kPanelHead = 3 * kQNR;

struct FCtx {
  const ConvParams* p;
  size_t H, W, OH, OW, C, OC;
  size_t kc;  // floats per filter row: kw * C
  size_t K;  // kh * kc
  size_t panels, panel_floats;
  size_t cols;  // padded input columns an output row reads: (OW - 1) * stride_w + kw
  size_t row_floats;  // one ring row: cols * C, rounded up to 8
  size_t ring;  // ring rows: the input rows one output row spans, dilation_h * (kh - 1) + 1
  size_t rows, tasks;  // output rows N * OH, split into tasks
  const uint8_t* in;
  uint8_t* out;
  const float* w;  // fp32 panels
  float za;
  bool a_u8;
  bool nchw;  // p.input_nchw: the input is [N, C, H, W]
  float lo, hi;  // the clamp relative to the output zero point
  int32_t zy;
  int32_t qmin, qmax;  // the clamp in output units (lo + zy, hi + zy)
  bool pairs;  // qmin <= qmax: rows requantized in pairs (qrequant.h's requant2x16)
  // Every |bias| + K * 255 * 128 < 2^24: the sums start from the bias in fp32 and stay exact integers, so the
  // epilogue needs no int32 round trip (cvtps2dq, + bias, cvtdq2ps).
  bool fbias;
  bool out_u8;
};

// n bytes from src (u8 or s8) as float(x - za) at dst.
void convert_row(const FCtx& x, const uint8_t* src, size_t n, float* dst) {
  const __m256 za = _mm256_set1_ps(x.za);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i));
    const __m256i v = x.a_u8 ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b);
    _mm256_storeu_ps(dst + i, _mm256_sub_ps(_mm256_cvtepi32_ps(v), za));
  }
  for (; i < n; ++i) {
    const int v = x.a_u8 ? int{src[i]} : int{static_cast<int8_t>(src[i])};
    dst[i] = static_cast<float>(v) - x.za;
  }
}

// An NCHW input's (p.input_nchw) columns [k0, k1) of row iy - pad_top as fill_row's floats (from
// dst + k0 * C): each channel's plane converted a chunk at a time, then interleaved.
void fill_planes(const FCtx& x, size_t n, size_t iy, size_t k0, size_t k1, float* dst) {
  constexpr size_t kChunk = 64;
  alignas(32) float tmp[kMaxInputChannels][kChunk];
  const size_t C = x.C, plane = x.H * x.W, pl = x.p->pad_left;
  const uint8_t* row = x.in + n * C * plane + (iy - x.p->pad_top) * x.W;
  for (size_t j0 = k0; j0 < k1; j0 += kChunk) {
    const size_t nj = min_sz(kChunk, k1 - j0);
    for (size_t c = 0; c < C; ++c) convert_row(x, row + c * plane + (j0 - pl), nj, tmp[c]);
    float* d = dst + j0 * C;
    if (C == 3) {  // the RGB image's case, with constant offsets
      for (size_t j = 0; j < nj; ++j, d += 3) d[0] = tmp[0][j], d[1] = tmp[1][j], d[2] = tmp[2][j];
    } else {
      for (size_t j = 0; j < nj; ++j)
        for (size_t c = 0; c < C; ++c) d[j * C + c] = tmp[c][j];
    }
  }
}

// Padded input row iy (of image n) into dst: cols * C floats, 0.0 where the row or a column is padding.
void fill_row(const FCtx& x, size_t n, size_t iy, float* dst) {
  const ConvParams& p = *x.p;
  const size_t C = x.C, cols = x.cols;
  if (iy < p.pad_top || iy - p.pad_top >= x.H) {
    std::memset(dst, 0, cols * C * sizeof(float));
    return;
  }
  // Columns [k0, k1) are inside the image.
  const size_t k0 = min_sz(cols, p.pad_left), k1 = max_sz(k0, min_sz(cols, x.W + p.pad_left));
  std::memset(dst, 0, k0 * C * sizeof(float));
  if (k1 > k0 && x.nchw) {
    fill_planes(x, n, iy, k0, k1, dst);
  } else if (k1 > k0) {
    convert_row(x, x.in + ((n * x.H + iy - p.pad_top) * x.W + (k0 - p.pad_left)) * C, (k1 - k0) * C,
                dst + k0 * C);
  }
  std::memset(dst + k1 * C, 0, (cols - k1) * C * sizeof(float));
}

// MR pixels x 16 columns: rows[ky] + m * step is pixel m's filter row ky (KC > 0: kc known at compile time,
// the stems' 9 and 21). Sums start at zero; the epilogue adds the int32 bias after the exact conversion.
template <int MR, int KC>
void tile(const FCtx& x, const float* const* rows, size_t step, const float* wp, uint8_t* c, size_t nc) {
  const size_t kc = KC > 0 ? size_t{KC} : x.kc, kh = x.p->kernel_h;
  __m256 acc0[MR], acc1[MR];
  // x.fbias: from the bias (every partial sum stays an integer below 2^24), else from zero.
  const __m256 i0 = x.fbias ? _mm256_load_ps(wp + 2 * kQNR) : _mm256_setzero_ps();
  const __m256 i1 = x.fbias ? _mm256_load_ps(wp + 2 * kQNR + 8) : _mm256_setzero_ps();
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m) acc0[m] = i0, acc1[m] = i1;
  const float* w = wp + kPanelHead;
  for (size_t ky = 0; ky < kh; ++ky) {
    const float* a[MR];
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) a[m] = rows[ky] + m * step;
#pragma GCC unroll 4
    for (size_t k = 0; k < kc; ++k, w += kQNR) tile16_fma<MR>(w, a, k, acc0, acc1);
  }
  // The int32 sums: exact conversions (integers below 2^24), + the bias unless the sums started from it.
  const __m256i zero = _mm256_setzero_si256();
  const __m256i b0 = x.fbias ? zero : _mm256_load_si256(reinterpret_cast<const __m256i*>(wp));
  const __m256i b1 = x.fbias ? zero : _mm256_load_si256(reinterpret_cast<const __m256i*>(wp + 8));
  const float* scale = wp + kQNR;
  const auto sum = [&](__m256 acc, __m256i b) __attribute__((always_inline)) {
    return _mm256_add_epi32(_mm256_cvtps_epi32(acc), b);
  };
  int m = 0;
  if (x.pairs) {
    const QRequantPair r{_mm256_set1_ps(x.hi), _mm256_set1_epi16(static_cast<int16_t>(x.zy)),
                         _mm256_set1_epi8(static_cast<char>(x.qmin)),
                         _mm256_set1_epi8(static_cast<char>(x.qmax)), x.out_u8};
#pragma GCC unroll 3
    for (; m + 2 <= MR; m += 2) {
      // x.fbias: acc is float(int32 sum) already, exactly.
      const __m256i b = x.fbias ? requant2x16_ps(r, acc0[m], acc1[m], acc0[m + 1], acc1[m + 1], scale)
                                : requant2x16(r, sum(acc0[m], b0), sum(acc1[m], b1), sum(acc0[m + 1], b0),
                                              sum(acc1[m + 1], b1), scale);
      store_bytes2x16(c + m * x.OC, c + (m + 1) * x.OC, b, nc);
    }
  }
  const QRequant r{_mm256_set1_ps(x.lo), _mm256_set1_ps(x.hi), _mm256_set1_epi32(x.zy), x.out_u8};
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5);
#pragma GCC unroll 6
  for (; m < MR; ++m)
    store_bytes16(c + m * x.OC, requant16(r, sum(acc0[m], b0), sum(acc1[m], b1), scale, order), nc);
}

template <int KC>
void tile_kc(size_t mr, const FCtx& x, const float* const* rows, size_t step, const float* wp, uint8_t* c,
             size_t nc) {
  with_rows<kMR>(mr, [&](auto m) { tile<decltype(m)::value, KC>(x, rows, step, wp, c, nc); });
}

void fp32acc_task(const void* vctx, size_t task) {
  const FCtx& x = *static_cast<const FCtx*>(vctx);
  const ConvParams& p = *x.p;
  const size_t r0 = x.rows * task / x.tasks, r1 = x.rows * (task + 1) / x.tasks;
  // [ring keys][ring rows]: key = n * (padded height) + padded input row held by the slot.
  const size_t key_floats = round_up(x.ring * sizeof(size_t), 64) / sizeof(float);
  float* buf = static_cast<float*>(internal::scratch(internal::Scratch::kIgemmGather,
                                                     (key_floats + x.ring * x.row_floats) * sizeof(float)));
  size_t* keys = reinterpret_cast<size_t*>(buf);
  for (size_t s = 0; s < x.ring; ++s) keys[s] = ~size_t{0};
  float* ring = buf + key_floats;
  const size_t hp = x.H + p.pad_top + p.pad_bottom + 1, kh = p.kernel_h;
  const size_t step = size_t{p.stride_w} * x.C;  // floats between adjacent pixels' windows
  const float* rows[64];  // kernel_h <= 64 (qconv2d_fp32acc_applies)
  for (size_t r = r0; r < r1; ++r) {
    const size_t n = r / x.OH, oy = r % x.OH;
    for (size_t ky = 0; ky < kh; ++ky) {
      const size_t iy = oy * p.stride_h + ky * p.dilation_h, s = iy % x.ring, key = n * hp + iy;
      float* row = ring + s * x.row_floats;
      if (keys[s] != key) {
        fill_row(x, n, iy, row);
        keys[s] = key;
      }
      rows[ky] = row;
    }
    uint8_t* crow = x.out + r * x.OW * x.OC;
    for (size_t ox = 0; ox < x.OW; ox += kMR) {
      const size_t mr = min_sz(kMR, x.OW - ox);
      const float* trows[64];
      for (size_t ky = 0; ky < kh; ++ky) trows[ky] = rows[ky] + ox * step;
      for (size_t q = 0; q < x.panels; ++q) {
        const float* wp = x.w + q * x.panel_floats;
        uint8_t* c = crow + ox * x.OC + q * kQNR;
        const size_t nc = min_sz(kQNR, x.OC - q * kQNR);
        switch (x.kc) {
          case 9: tile_kc<9>(mr, x, trows, step, wp, c, nc); break;  // 3 wide x RGB
          case 21: tile_kc<21>(mr, x, trows, step, wp, c, nc); break;  // 7 wide x RGB
          default: tile_kc<0>(mr, x, trows, step, wp, c, nc); break;
        }
      }
    }
  }
}

// The packed s8 panels of one group as fp32 panels (see the top): dst gets panels * panel_floats floats.
// Returns the largest |bias|.
uint32_t unpack_panels(const ConvParams& p, const uint8_t* packed, size_t Kp, const QGemmRun& run, int32_t za,
                       float* dst) {
  uint32_t max_bias = 0;
  const QConvTaps t = qconv2d_taps(p);
  const size_t kh = p.kernel_h, kw = p.kernel_w, C = p.group_input_channels, OC = p.group_output_channels;
  const size_t K = kh * kw * C, row_k = Kp / kh, panels = div_up(OC, kQNR);
  const uint32_t za_d = static_cast<uint32_t>(za + run.h.a_shift);
  for (size_t q = 0; q < panels; ++q) {
    const uint8_t* src = packed + kQHeaderBytes + q * run.panel_bytes;
    float* wp = dst + q * (kPanelHead + K * kQNR);
    const int8_t* w8 = reinterpret_cast<const int8_t*>(src + kQNR * 8);
    for (size_t j = 0; j < kQNR; ++j) {
      uint32_t wsum = 0;
      size_t k = 0;
      for (size_t ky = 0; ky < kh; ++ky)
        for (size_t kx = 0; kx < kw; ++kx)
          for (size_t c = 0; c < C; ++c, ++k) {
            const size_t kp = ky * row_k + kx * t.tap_c + c;  // the packer's order (qgemm_layout.h)
            const int8_t w = w8[kp / 4 * (kQNR * 4) + j * 4 + kp % 4];
            wp[kPanelHead + k * kQNR + j] = static_cast<float>(w);
            wsum += static_cast<uint32_t>(int32_t{w});
          }
      uint32_t bias;
      std::memcpy(&bias, src + j * 4, 4);
      bias += za_d * wsum;  // wrapping, as the packer's fold
      std::memcpy(wp + j, &bias, 4);
      std::memcpy(wp + kQNR + j, src + kQNR * 4 + j * 4, 4);
      const int32_t b = static_cast<int32_t>(bias);
      wp[2 * kQNR + j] = static_cast<float>(b);  // used only when exact (fbias)
      const uint32_t mag = b < 0 ? 0u - static_cast<uint32_t>(b) : static_cast<uint32_t>(b);
      max_bias = mag > max_bias ? mag : max_bias;
    }
  }
  return max_bias;
}

}  // namespace

// Groups 1 (a filter row's inputs are one contiguous run), no horizontal dilation, few input channels, and K
// within the exactness bound (kMaxExactK: larger K stays on the int8 IGEMM, whose int32 sums never round).
bool qconv2d_fp32acc_applies(const ConvParams& p) {
  const size_t K = size_t{p.kernel_h} * p.kernel_w * p.group_input_channels;
  return p.groups == 1 && p.dilation_w == 1 && p.kernel_h >= 1 && p.kernel_w >= 1 &&
         p.group_input_channels <= kMaxInputChannels && K <= kMaxExactK && p.kernel_h <= 64;
}

// The ring rows are filled from planes as well (fill_planes): an RGB image is read in place.
bool qconv2d_reads_nchw(const ConvParams& p) { return qconv2d_fp32acc_applies(p); }

void qconv2d_fp32acc(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
                     const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par) {
  if (N == 0 || OH == 0 || OW == 0 || p.group_output_channels == 0) return;
  const size_t Kp = qconv2d_packed_k(p), OC = p.group_output_channels;
  const uint8_t* pk = static_cast<const uint8_t*>(packed);
  const QGemmRun run = qgemm_run_params(pk, Kp, out_min, out_max);
  FCtx x;
  x.p = &p;
  x.H = H;
  x.W = W;
  x.OH = OH;
  x.OW = OW;
  x.C = p.group_input_channels;
  x.OC = OC;
  x.kc = size_t{p.kernel_w} * x.C;
  x.K = p.kernel_h * x.kc;
  x.panels = div_up(OC, kQNR);
  x.panel_floats = kPanelHead + x.K * kQNR;
  x.cols = (OW - 1) * p.stride_w + p.kernel_w;
  x.row_floats = round_up(x.cols * x.C, 16);
  x.ring = size_t{p.dilation_h} * (p.kernel_h - 1) + 1;
  x.rows = N * OH;
  x.in = static_cast<const uint8_t*>(in);
  x.out = static_cast<uint8_t*>(out);
  x.a_u8 = run.h.a_type == QType::kU8;
  x.nchw = p.input_nchw;
  const uint8_t zb = pk[qgemm_layout_bytes(Kp, OC)];  // the zero-point row's raw byte
  const int32_t za = x.a_u8 ? int32_t{zb} : int32_t{static_cast<int8_t>(zb)};
  x.za = static_cast<float>(za);
  x.lo = run.lo;
  x.hi = run.hi;
  x.zy = run.h.out_zero_point;
  x.qmin = static_cast<int32_t>(run.lo) + x.zy;
  x.qmax = static_cast<int32_t>(run.hi) + x.zy;
  x.pairs = x.qmin <= x.qmax;
  x.out_u8 = run.h.out_type == QType::kU8;
  float* w = static_cast<float*>(
      internal::scratch(internal::Scratch::kQConvF32W, x.panels * x.panel_floats * sizeof(float)));
  const uint32_t max_bias = unpack_panels(p, pk, Kp, run, za, w);
  x.fbias = max_bias < (uint32_t{1} << 24) && max_bias + x.K * 255 * 128 < (size_t{1} << 24);
  x.w = w;
  const size_t threads = internal::parallel_threads(par);
  x.tasks = internal::task_count(x.rows, static_cast<double>(OW) * OC * x.K, threads, 4);
  internal::parallel_run(par, x.tasks, fp32acc_task, &x);
}

}  // namespace avx2
}  // namespace webxnn
