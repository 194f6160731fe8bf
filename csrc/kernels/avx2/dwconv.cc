// AVX2+FMA depthwise convolution (and the MobileNet block around it: dwconv2d_fused).
//
// Depthwise, per output row: the columns whose whole window lies inside the input ("interior") run in strips
// of 4-8 output pixels x 8 channels, one accumulator register per pixel (8 independent FMA chains cover the
// FMA latency), each weight vector loaded once per strip; 3-wide kernels at stride 1 or 2 also load each
// input column once per kernel row (these kernels are bound by loads more than by FMAs). Strips are sized to
// split the interior evenly, so there is no tail. Border columns (and interiors under 4 pixels) take a
// per-pixel path over the valid taps only. 3x3 convs of stride 1 or 2 run two output rows per pass where
// their input rows are inside (pair_strips): 4-pixel strips whose input columns feed both rows, so each
// output row reads 2 (2.5) input rows instead of 3 (these kernels are bound by reading their rows from L2).
// Channel tails use masked loads and store_lanes. A depth multiplier > 1 reads expanded copies of the input
// rows (each channel repeated; a small per-task ring), then runs the same code.
// A MobileNet block in one call (dwconv2d_fused): a fused expand computes the input rows into that ring with
// the GEMM (each row once per task, carried between a thread's tasks); a fused project takes a task's output
// rows in batches (project_rows_for) from a per-thread buffer, still in L2, through the GEMM (+ the residual)
// into the output. In both the GEMM's sums are the unfused ones, so fusing never changes results. Measured on
// this machine: the row-by-row expand loses to separate steps unless the tensor between them would not stay
// in L2 (the runtime fuses an expand only from 1 MB, a project from 14 rows: plan_fusion.cc).
// Taps are always accumulated in (ky, kx) order starting from the bias, padding taps skipped (adding 0), as
// in the scalar kernel. Packed layout = the scalar one: [C bias][kh*kw][C].
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/simd.h"
#include "kernels/avx2/vmath.h"
#include "kernels/avx2/window.h"
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

struct DwCtx {
  const ConvParams* p;
  size_t H, W, OH, OW, rows, tasks, ox_lo, ox_hi;
  size_t C;  // output channels (= input channels x depth multiplier)
  size_t Cin;  // input channels
  const float* in;
  const float* bias;
  const float* w;
  float* out;
  float vmin, vmax;
  int stride3;  // 1 or 2: 3 wide, that stride, no dilation (input columns shared by taps); else 0
  // stride3 and at most one column of padding on each side: the strips cover whole rows, the first one
  // skipping the left padding column (when there is one) and the last one the right
  bool edge_strips;
  bool clamp;  // false for {-inf, +inf}
  // pairable(p) and edge_strips: pairs of output rows whose input rows are all inside run as one pass
  // (pair_strips), where a task's rows hold both.
  bool pair_rows;
  size_t unit;  // rows per unit of work: 2 (tasks never split a pair) unless that unbalances the threads
  // The rows of the per-thread ring of expanded input rows (0: the kernel reads `in` directly), filled by one of:
  //  * depth multiplier > 1: per 8 output channels [first input channel, input lanes, 8 lane indices];
  //  * a fused pointwise conv (conv1x1_dwconv2d): its packed filter, clamp; `in` is its input (Cin channels).
  const int32_t* expand_plan;
  const void* pw_packed;
  Activation pw_act;
  size_t ring_rows;
  // A fused project (null: none): output rows are computed into a per-thread buffer, proj_rows at most, then
  // their pointwise conv (+ the residual rows) is written to `out` ([N, OH, OW, project->channels]).
  const PointwiseConv* project;
  const float* residual;
  size_t proj_rows;  // output rows the project's buffer holds (project_rows_for; 0 without a project)
  uint64_t call;  // internal::unique_call_id() of this call: a thread's ring from an earlier call is stale
};

// The kernel rows of one output row that fall inside the input: where each starts in the input (column 0)
// and in the packed weights.
struct TapRows {
  const float* in[64];
  const float* w[64];
  size_t n = 0;
};

// NP interior output pixels x 8 channels [c, c + 8) (the last vector masked when kMask) of one output row,
// starting at input element offset col: NP independent accumulator chains cover the FMA latency. kS = 1 or
// 2 (3 wide, that stride, no dilation): each of the kS * (NP - 1) + 3 input columns is loaded once per kernel
// row and feeds every tap that reads it (3 at stride 1, 2 or 1 at stride 2), the 3 weights stay in registers.
// kL / kR (kS > 0 only): the strip's first column (the first pixel's left tap) / last column (the last
// pixel's right tap) is padding: it is skipped, and col is the element offset of the first column read.
// kS = 0: any width, stride and dilation; every tap loads its weight once for the NP pixels.
// kClamp false: the activation is unbounded, no min/max.
template <int NP, size_t KWC, int kS, bool kMask, bool kClamp, bool kL = false, bool kR = false>
inline void strip_ch(const DwCtx& x, const TapRows& rows, size_t col, size_t c, float* o, __m256 vmin,
                     __m256 vmax, __m256i m) {
  const ConvParams& p = *x.p;
  const size_t C = x.C, KW = KWC > 0 ? KWC : p.kernel_w;
  const size_t pix_step = p.stride_w * C, tap_step = p.dilation_w * C;
  __m256 acc[NP];
  const __m256 b = load8<kMask>(x.bias + c, m);
#pragma GCC unroll 16
  for (int i = 0; i < NP; ++i) acc[i] = b;
  for (size_t j = 0; j < rows.n; ++j) {
    const float* ip = rows.in[j] + col + c;
    const float* wp = rows.w[j] + c;
    if (kS > 0) {
      const __m256 w0 = load8<kMask>(wp, m), w1 = load8<kMask>(wp + C, m), w2 = load8<kMask>(wp + 2 * C, m);
#pragma GCC unroll 32
      // Column q is tap t of pixel (q - t) / kS.
      for (int q = kL ? 1 : 0; q < kS * (NP - 1) + (kR ? 2 : 3); ++q, ip += C) {
        const __m256 v = load8<kMask>(ip, m);
        if (q % kS == 0 && q / kS < NP) acc[q / kS] = _mm256_fmadd_ps(v, w0, acc[q / kS]);
        if (q >= 1 && (q - 1) % kS == 0 && (q - 1) / kS < NP)
          acc[(q - 1) / kS] = _mm256_fmadd_ps(v, w1, acc[(q - 1) / kS]);
        if (q >= 2 && (q - 2) % kS == 0) acc[(q - 2) / kS] = _mm256_fmadd_ps(v, w2, acc[(q - 2) / kS]);
      }
    } else {
#pragma GCC unroll 5
      for (size_t kx = 0; kx < KW; ++kx, ip += tap_step) {
        const __m256 wv = load8<kMask>(wp + kx * C, m);
        const float* t = ip;
#pragma GCC unroll 16
        for (int i = 0; i < NP; ++i, t += pix_step) acc[i] = _mm256_fmadd_ps(load8<kMask>(t, m), wv, acc[i]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < NP; ++i, o += C) {
    const __m256 r = kClamp ? clamp8(acc[i], vmin, vmax) : acc[i];
    if (kMask) {
      store_lanes(o + c, m, r);
    } else {
      _mm256_storeu_ps(o + c, r);
    }
  }
}

template <int NP, size_t KWC, int kS, bool kClamp, bool kL = false, bool kR = false>
void strip_c(const DwCtx& x, const TapRows& rows, size_t col, float* o, __m256 vmin, __m256 vmax, __m256i m) {
  const size_t C = x.C, cfull = C & ~size_t{7};
  for (size_t c = 0; c < cfull; c += 8)
    strip_ch<NP, KWC, kS, false, kClamp, kL, kR>(x, rows, col, c, o, vmin, vmax, m);
  if (cfull < C) strip_ch<NP, KWC, kS, true, kClamp, kL, kR>(x, rows, col, cfull, o, vmin, vmax, m);
}

// A 3-wide strip that starts and/or ends at a padded edge of the row (edge bit 1: left, bit 2: right).
template <int NP, int kS, bool kClamp>
void edge_strip_c(int edge, const DwCtx& x, const TapRows& rows, size_t col, float* o, __m256 vmin,
                  __m256 vmax, __m256i m) {
  switch (edge) {
    case 1: return strip_c<NP, 3, kS, kClamp, true, false>(x, rows, col, o, vmin, vmax, m);
    case 2: return strip_c<NP, 3, kS, kClamp, false, true>(x, rows, col, o, vmin, vmax, m);
    case 3: return strip_c<NP, 3, kS, kClamp, true, true>(x, rows, col, o, vmin, vmax, m);
    default: return strip_c<NP, 3, kS, kClamp>(x, rows, col, o, vmin, vmax, m);
  }
}

// NP output pixels starting at input element offset col, all channels; edge (KWC = 3 with stride3 only): see
// edge_strip_c.
template <int NP, size_t KWC>
void strip(const DwCtx& x, const TapRows& rows, size_t col, float* o, __m256 vmin, __m256 vmax, __m256i m,
           int edge = 0) {
  const int s = KWC == 3 ? x.stride3 : 0;
  const bool clamp = x.clamp;
  if (KWC == 3 && edge != 0) {
    if (s == 1) {
      return clamp ? edge_strip_c<NP, 1, true>(edge, x, rows, col, o, vmin, vmax, m)
                   : edge_strip_c<NP, 1, false>(edge, x, rows, col, o, vmin, vmax, m);
    }
    return clamp ? edge_strip_c<NP, 2, true>(edge, x, rows, col, o, vmin, vmax, m)
                 : edge_strip_c<NP, 2, false>(edge, x, rows, col, o, vmin, vmax, m);
  }
  if (s == 1) {
    clamp ? strip_c<NP, KWC, 1, true>(x, rows, col, o, vmin, vmax, m)
          : strip_c<NP, KWC, 1, false>(x, rows, col, o, vmin, vmax, m);
  } else if (s == 2) {
    clamp ? strip_c<NP, KWC, 2, true>(x, rows, col, o, vmin, vmax, m)
          : strip_c<NP, KWC, 2, false>(x, rows, col, o, vmin, vmax, m);
  } else {
    clamp ? strip_c<NP, KWC, 0, true>(x, rows, col, o, vmin, vmax, m)
          : strip_c<NP, KWC, 0, false>(x, rows, col, o, vmin, vmax, m);
  }
}

// Two output rows (o0, o1: rows oy and oy + 1) x NP pixels x 8 channels [c, c + 8) of a 3x3 depthwise conv
// with stride kS (1 or 2) in both directions, from the 3 + kS input rows in[] that the two read (o0 reads
// rows 0-2, o1 rows kS to kS + 2), starting at input element offset col; kL / kR as in strip_ch. Each input
// column is loaded once per input row and feeds both output rows where they share it. Against one-row strips
// that reads 2 input rows per output row instead of 3 at stride 1 (2.5 at stride 2): these kernels are bound
// by reading their rows from L2 (three input rows of a 14x14x384 map are 64 KB). NP <= 4: 8 accumulators,
// the 6 weight vectors of two kernel rows and the column fill the 16 registers. Each output still sums bias +
// taps in (ky, kx) order: the bits of the one-row strip.
template <bool B>
struct Flag {  // a bool as a type: a template argument chosen at run time through a generic lambda
  static constexpr bool value = B;
};

template <int NP, int kS, bool kMask, bool kClamp, bool kL, bool kR>
inline void pair_strip_ch(const DwCtx& x, const float* const* in, size_t col, size_t c, float* o0, float* o1,
                          __m256 vmin, __m256 vmax, __m256i m) {
  const size_t C = x.C;
  __m256 a[NP], b[NP];
  const __m256 bias = load8<kMask>(x.bias + c, m);
#pragma GCC unroll 4
  for (int i = 0; i < NP; ++i) a[i] = b[i] = bias;
#pragma GCC unroll 5
  for (int r = 0; r < 3 + kS; ++r) {
    const bool ua = r < 3, ub = r >= kS;  // row r feeds o0 / o1
    const float* wa = x.w + (ua ? r : 0) * 3 * C + c;  // kernel row r of o0
    const float* wb = x.w + (ub ? r - kS : 0) * 3 * C + c;  // kernel row r - kS of o1
    __m256 a0 = bias, a1 = bias, a2 = bias, b0 = bias, b1 = bias, b2 = bias;
    if (ua) a0 = load8<kMask>(wa, m), a1 = load8<kMask>(wa + C, m), a2 = load8<kMask>(wa + 2 * C, m);
    if (ub) b0 = load8<kMask>(wb, m), b1 = load8<kMask>(wb + C, m), b2 = load8<kMask>(wb + 2 * C, m);
    const float* ip = in[r] + col + c;
#pragma GCC unroll 16
    // Column q is tap t of pixel (q - t) / kS.
    for (int q = kL ? 1 : 0; q < kS * (NP - 1) + (kR ? 2 : 3); ++q, ip += C) {
      const __m256 v = load8<kMask>(ip, m);
      if (q % kS == 0 && q / kS < NP) {
        if (ua) a[q / kS] = _mm256_fmadd_ps(v, a0, a[q / kS]);
        if (ub) b[q / kS] = _mm256_fmadd_ps(v, b0, b[q / kS]);
      }
      if (q >= 1 && (q - 1) % kS == 0 && (q - 1) / kS < NP) {
        if (ua) a[(q - 1) / kS] = _mm256_fmadd_ps(v, a1, a[(q - 1) / kS]);
        if (ub) b[(q - 1) / kS] = _mm256_fmadd_ps(v, b1, b[(q - 1) / kS]);
      }
      if (q >= 2 && (q - 2) % kS == 0) {
        if (ua) a[(q - 2) / kS] = _mm256_fmadd_ps(v, a2, a[(q - 2) / kS]);
        if (ub) b[(q - 2) / kS] = _mm256_fmadd_ps(v, b2, b[(q - 2) / kS]);
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < NP; ++i) {
    const __m256 ra = kClamp ? clamp8(a[i], vmin, vmax) : a[i];
    const __m256 rb = kClamp ? clamp8(b[i], vmin, vmax) : b[i];
    if (kMask) {
      store_lanes(o0 + i * C + c, m, ra);
      store_lanes(o1 + i * C + c, m, rb);
    } else {
      _mm256_storeu_ps(o0 + i * C + c, ra);
      _mm256_storeu_ps(o1 + i * C + c, rb);
    }
  }
}

template <int NP, int kS, bool kClamp, bool kL, bool kR>
void pair_strip_c(const DwCtx& x, const float* const* in, size_t col, float* o0, float* o1, __m256 vmin,
                  __m256 vmax, __m256i m) {
  const size_t cfull = x.C & ~size_t{7};
  for (size_t c = 0; c < cfull; c += 8)
    pair_strip_ch<NP, kS, false, kClamp, kL, kR>(x, in, col, c, o0, o1, vmin, vmax, m);
  if (cfull < x.C) pair_strip_ch<NP, kS, true, kClamp, kL, kR>(x, in, col, cfull, o0, o1, vmin, vmax, m);
}

template <int NP, int kS, bool kClamp>
void pair_strip_edge(int edge, const DwCtx& x, const float* const* in, size_t col, float* o0, float* o1,
                     __m256 vmin, __m256 vmax, __m256i m) {
  switch (edge) {
    case 1: return pair_strip_c<NP, kS, kClamp, true, false>(x, in, col, o0, o1, vmin, vmax, m);
    case 2: return pair_strip_c<NP, kS, kClamp, false, true>(x, in, col, o0, o1, vmin, vmax, m);
    case 3: return pair_strip_c<NP, kS, kClamp, true, true>(x, in, col, o0, o1, vmin, vmax, m);
    default: return pair_strip_c<NP, kS, kClamp, false, false>(x, in, col, o0, o1, vmin, vmax, m);
  }
}

// Output rows o0 and o1 (the next one) whole, from the 3 + stride input rows in[] they read (x.pair_rows):
// strips of 3-4 pixels as equal as possible, the first and last skipping their padding column (see
// edge_strips).
template <int kS>
void pair_strips(const DwCtx& x, const float* const* in, float* o0, float* o1, __m256 vmin, __m256 vmax,
                 __m256i m) {
  const size_t C = x.C, strips = div_up(x.OW, 4), base = x.OW / strips, extra = x.OW % strips;
  for (size_t s = 0, ox = 0; s < strips; ++s) {
    const size_t np = base + (s < extra ? 1 : 0);
    const int edge = (ox < x.ox_lo ? 1 : 0) | (ox + np > x.ox_hi ? 2 : 0);
    const size_t col = (ox * kS + (edge & 1) - x.p->pad_left) * C;  // the first column read
    float* a = o0 + ox * C;
    float* b = o1 + ox * C;
    const auto run = [&](auto clamp) {
      constexpr bool kC = decltype(clamp)::value;
      switch (np) {
        case 4: return pair_strip_edge<4, kS, kC>(edge, x, in, col, a, b, vmin, vmax, m);
        case 3: return pair_strip_edge<3, kS, kC>(edge, x, in, col, a, b, vmin, vmax, m);
        case 2: return pair_strip_edge<2, kS, kC>(edge, x, in, col, a, b, vmin, vmax, m);
        default: return pair_strip_edge<1, kS, kC>(edge, x, in, col, a, b, vmin, vmax, m);
      }
    };
    if (x.clamp) {
      run(Flag<true>{});
    } else {
      run(Flag<false>{});
    }
    ox += np;
  }
}

// One input row [W][Cin] expanded to [W][C] (channel c repeated C / Cin times): per 8 output channels one
// masked load and one lane permute, as x.expand_plan says.
void expand_row(const DwCtx& x, const float* src, float* dst) {
  const size_t groups = div_up(x.C, 8), cfull = x.C & ~size_t{7};
  const __m256i tail = lane_mask(x.C - cfull);
  for (size_t q = 0; q < x.W; ++q, src += x.Cin, dst += x.C) {
    for (size_t g = 0; g < groups; ++g) {
      const int32_t* e = x.expand_plan + g * 10;
      const __m256 in8 = _mm256_maskload_ps(src + e[0], lane_mask(static_cast<size_t>(e[1])));
      const __m256 v =
          _mm256_permutevar8x32_ps(in8, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e + 2)));
      if (g * 8 < cfull) {
        _mm256_storeu_ps(dst + g * 8, v);
      } else {
        store_lanes(dst + g * 8, tail, v);
      }
    }
  }
}

// KW > 0: kernel width known at compile time (3 and 5: the tap loop fully unrolled).
template <size_t KWC>
void dw_task(const void* vctx, size_t task) {
  const DwCtx& x = *static_cast<const DwCtx*>(vctx);
  const ConvParams& p = *x.p;
  // Rows [r0, r1): whole units (see DwCtx::unit).
  const size_t unit = x.unit, units = div_up(x.rows, unit);
  const size_t r0 = min_sz(x.rows, unit * (units * task / x.tasks));
  const size_t r1 = min_sz(x.rows, unit * (units * (task + 1) / x.tasks));
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  const size_t C = x.C, KW = KWC > 0 ? KWC : p.kernel_w, sw = p.stride_w, dw = p.dilation_w;
  const size_t cfull = C & ~size_t{7};
  const __m256i cmask = lane_mask(C - cfull);
  const size_t taps = size_t{p.kernel_h} * p.kernel_w;
  // The per-pixel path's valid taps: the thread's scratch, not two allocations per task (~0.2 us a task, 4
  // tasks per thread in most steps at 2 threads, one task per step at 1).
  const float** tin = static_cast<const float**>(
      internal::scratch(internal::Scratch::kDwTaps, 2 * max_sz(taps, 1) * sizeof(const float*)));
  const float** twt = tin + taps;
  // Depth multiplier > 1 or a fused pointwise conv: the kernel rows read expanded input rows, kept in a ring
  // of (kernel_h - 1) * dilation_h + 1 rows (the rows one output row reads are distinct modulo that), so each
  // input row is expanded once and is still in cache when read. The ring is the thread's, and outlives the
  // task: a thread's next task of the same call usually starts where this one ended (tasks are handed out
  // in order; see thread_pool.h), so the rows the two share are not expanded again.
  float* ring = nullptr;
  uint64_t* ring_key = nullptr;  // which (image, input row) each slot holds
  if (x.ring_rows) {
    ring = static_cast<float*>(
        internal::scratch(internal::Scratch::kDwRing, x.ring_rows * x.W * C * sizeof(float)));
    uint64_t* keys = static_cast<uint64_t*>(
        internal::scratch(internal::Scratch::kDwRingKeys, (x.ring_rows + 1) * sizeof(uint64_t)));
    ring_key = keys + 1;
    if (keys[0] != x.call) {  // the ring holds another call's rows, or garbage
      keys[0] = x.call;
      for (size_t i = 0; i < x.ring_rows; ++i) ring_key[i] = ~uint64_t{0};
    }
  }
  // A fused project's input: up to proj_rows output rows (this thread's buffer).
  float* row_buf = x.project ? static_cast<float*>(internal::scratch(internal::Scratch::kDwRow,
                                                                     x.proj_rows * x.OW * C * sizeof(float)))
                             : nullptr;
  size_t b0 = r0;  // the first output row in row_buf
  // Input row iy of image n as the kernel reads it: in place, or its slot of the ring (expanded first if the
  // slot holds another row).
  const auto input_row = [&](size_t n, size_t iy) -> const float* {
    const float* src = x.in + (n * x.H + iy) * x.W * x.Cin;
    if (!ring) return src;
    const size_t key = n * x.H + iy, slot = key % x.ring_rows;
    float* dst = ring + slot * x.W * C;
    if (ring_key[slot] != key) {
      if (x.pw_packed) {
        gemm_serial(x.W, C, x.Cin, src, x.Cin, x.pw_packed, dst, C, x.pw_act);
      } else {
        expand_row(x, src, dst);
      }
      ring_key[slot] = key;
    }
    return dst;
  };
  // The project conv (+ residual) of output rows [r, r + count) in row_buf, while they are in L1.
  const auto project_rows = [&](size_t r, size_t count) {
    const size_t co = x.project->channels;
    gemm_serial(count * x.OW, co, C, row_buf, C, x.project->packed, x.out + r * x.OW * co, co, x.project->act,
                x.residual ? x.residual + r * x.OW * co : nullptr, co);
  };
  // Rows [b0, r_end) are in row_buf: through the project when the buffer cannot take a pair more, or at the end.
  const auto project_if_full = [&](size_t r_end) {
    if (!row_buf || (r_end - b0 + 2 <= x.proj_rows && r_end < r1)) return;
    project_rows(b0, r_end - b0);
    b0 = r_end;
  };
  for (size_t r = r0; r < r1; ++r) {
    const size_t n = r / x.OH, oy = r % x.OH;
    // Rows oy and oy + 1 together when the 3 + stride input rows they read (from padded row oy * stride) are
    // all inside.
    const size_t ps = p.stride_h, pr = 3 + ps;
    const bool pair_inside = oy * ps >= p.pad_top && oy * ps - p.pad_top + pr <= x.H;
    if (x.pair_rows && r + 1 < r1 && oy + 1 < x.OH && pair_inside) {
      const float* in[5];
      for (size_t k = 0; k < pr; ++k) in[k] = input_row(n, oy * ps - p.pad_top + k);
      float* o0 = row_buf ? row_buf + (r - b0) * x.OW * C : x.out + r * x.OW * C;
      if (ps == 1) {
        pair_strips<1>(x, in, o0, o0 + x.OW * C, vmin, vmax, cmask);
      } else {
        pair_strips<2>(x, in, o0, o0 + x.OW * C, vmin, vmax, cmask);
      }
      apply_post(p.act.post, o0, 1, 2 * x.OW * C, 0);
      project_if_full(r + 2);
      ++r;
      continue;
    }
    TapRows rows;
    for (size_t ky = 0; ky < p.kernel_h; ++ky) {
      const size_t iy_p = oy * p.stride_h + ky * p.dilation_h;
      if (iy_p < p.pad_top || iy_p - p.pad_top >= x.H) continue;
      rows.in[rows.n] = input_row(n, iy_p - p.pad_top);
      rows.w[rows.n] = x.w + ky * KW * C;
      ++rows.n;
    }
    float* orow = row_buf ? row_buf + (r - b0) * x.OW * C : x.out + r * x.OW * C;
    // Interior: ceil(span / 8) strips of 4 to 8 pixels as equal as possible (8 accumulator chains cover
    // the FMA latency; fewer are slower, but better than the per-pixel path when the span is short). With
    // edge_strips the whole row: the first and last strips skip their padding column.
    const size_t lo = x.edge_strips ? 0 : x.ox_lo, hi = x.edge_strips ? x.OW : x.ox_hi;
    size_t done_hi = lo;
    const size_t span = hi - lo;
    if (span >= 4) {
      const size_t strips = div_up(span, 8), base = span / strips, extra = span % strips;
      size_t ox = lo;
      for (size_t s = 0; s < strips; ++s) {
        const size_t np = base + (s < extra ? 1 : 0);
        const int edge = (ox < x.ox_lo ? 1 : 0) | (ox + np > x.ox_hi ? 2 : 0);  // 0 unless edge_strips
        const size_t col = (ox * sw + (edge & 1) - p.pad_left) * C;  // the first column read
        float* o = orow + ox * C;
        switch (np) {
          case 8: strip<8, KWC>(x, rows, col, o, vmin, vmax, cmask, edge); break;
          case 7: strip<7, KWC>(x, rows, col, o, vmin, vmax, cmask, edge); break;
          case 6: strip<6, KWC>(x, rows, col, o, vmin, vmax, cmask, edge); break;
          case 5: strip<5, KWC>(x, rows, col, o, vmin, vmax, cmask, edge); break;
          default: strip<4, KWC>(x, rows, col, o, vmin, vmax, cmask, edge); break;
        }
        ox += np;
      }
      done_hi = hi;
    }
    // Everything else, one pixel at a time over the valid taps.
    for (size_t q = 0; q < x.OW; ++q) {
      if (q >= lo && q < done_hi) {
        q = done_hi - 1;
        continue;
      }
      // Valid taps of this pixel as (input, weight) element offsets.
      size_t nt = 0;
      for (size_t j = 0; j < rows.n; ++j) {
        for (size_t kx = 0; kx < KW; ++kx) {
          const size_t ix_p = q * sw + kx * dw;
          if (ix_p < p.pad_left || ix_p - p.pad_left >= x.W) continue;
          tin[nt] = rows.in[j] + (ix_p - p.pad_left) * C;
          twt[nt] = rows.w[j] + kx * C;
          ++nt;
        }
      }
      float* o = orow + q * C;
      size_t c = 0;
      // 32 channels per step: four independent accumulator chains (one chain would wait on FMA latency).
      for (; c + 32 <= C; c += 32) {
        __m256 a0 = _mm256_loadu_ps(x.bias + c), a1 = _mm256_loadu_ps(x.bias + c + 8);
        __m256 a2 = _mm256_loadu_ps(x.bias + c + 16), a3 = _mm256_loadu_ps(x.bias + c + 24);
        for (size_t t = 0; t < nt; ++t) {
          const float* ip = tin[t] + c;
          const float* wp = twt[t] + c;
          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(ip), _mm256_loadu_ps(wp), a0);
          a1 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 8), _mm256_loadu_ps(wp + 8), a1);
          a2 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 16), _mm256_loadu_ps(wp + 16), a2);
          a3 = _mm256_fmadd_ps(_mm256_loadu_ps(ip + 24), _mm256_loadu_ps(wp + 24), a3);
        }
        _mm256_storeu_ps(o + c, clamp8(a0, vmin, vmax));
        _mm256_storeu_ps(o + c + 8, clamp8(a1, vmin, vmax));
        _mm256_storeu_ps(o + c + 16, clamp8(a2, vmin, vmax));
        _mm256_storeu_ps(o + c + 24, clamp8(a3, vmin, vmax));
      }
      for (; c < C; c += 8) {
        const bool full = c < cfull;
        __m256 a0 = full ? _mm256_loadu_ps(x.bias + c) : _mm256_maskload_ps(x.bias + c, cmask);
        for (size_t t = 0; t < nt; ++t) {
          if (full) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(tin[t] + c), _mm256_loadu_ps(twt[t] + c), a0);
          } else {
            a0 = _mm256_fmadd_ps(_mm256_maskload_ps(tin[t] + c, cmask), _mm256_maskload_ps(twt[t] + c, cmask),
                                 a0);
          }
        }
        a0 = clamp8(a0, vmin, vmax);
        if (full) {
          _mm256_storeu_ps(o + c, a0);
        } else {
          store_lanes(o + c, cmask, a0);
        }
      }
    }
    apply_post(p.act.post, orow, 1, x.OW * C, 0);  // the fused post-op over the row just written (in L1/L2)
    project_if_full(r + 1);
  }
}

}  // namespace

// Bound on one task's row work space: the ring of expanded input rows (depth multiplier > 1, or a fused
// expand) and a fused project's output row; beyond it (absurd dilations or widths) the unfused / scalar path
// runs instead.
constexpr double kMaxRowSpaceBytes = 16.0 * (1 << 20);

namespace {

// 3x3, stride 1 or 2 both ways, no dilation: output rows can run in pairs (pair_strips; run_dw also needs
// edge_strips, and keeps them only where they balance the threads).
bool pairable(const ConvParams& p) {
  return p.kernel_h == 3 && p.kernel_w == 3 && p.stride_h == p.stride_w && p.stride_w <= 2 &&
         p.dilation_h == 1 && p.dilation_w == 1;
}

// Rows of the ring of expanded input rows: the rows one output row reads, distinct modulo that, or those of a
// pair of output rows (3 + stride).
size_t ring_rows_for(const ConvParams& p) {
  return (size_t{p.kernel_h} - 1) * p.dilation_h + 1 + (pairable(p) ? p.stride_h : 0);
}

// The output rows a fused project's buffer holds (a whole number of pairs with pairable(p)): its GEMM runs
// on that many rows at once, each of a task's batches up to kProjectBatchBytes. One row at a time (M = one
// row of pixels) re-read the project's weights for every row: fused, the 14x14 and 28x28 blocks of
// MobileNetV2 ran slower than apart. Batched they run faster (2 threads, dw + project: 14x14x576 -> 96 88.4
// -> 82.2 us) and the steps between them go.
size_t project_rows_for(const ConvParams& p, size_t OW, size_t C) {
  constexpr double kProjectBatchBytes = 256.0 * 1024;
  const size_t least = pairable(p) ? 2 : 1;
  const double fit = kProjectBatchBytes / (static_cast<double>(OW) * static_cast<double>(C) * 4.0);
  const size_t rows = fit >= 1024.0 ? 1024 : static_cast<size_t>(fit);
  return rows < least ? least : rows / least * least;
}

// ring_rows input rows of W pixels plus out_row_pixels output pixels (a fused project's row buffer), OC
// channels each, fit the bound.
bool dw_fits(const ConvParams& p, size_t W, size_t OC, size_t ring_rows, size_t out_row_pixels = 0) {
  const double floats =
      (static_cast<double>(ring_rows) * static_cast<double>(W) + static_cast<double>(out_row_pixels)) *
      static_cast<double>(OC);
  return p.kernel_h <= 64 && floats * 4.0 <= kMaxRowSpaceBytes;
}

// The depthwise convolution p over [N, H, W, p.groups * dm] computed from `in`: that tensor itself, or (pw
// non-null) the input [N, H, W, pw->channels] of the pointwise conv whose output it is; written to `out`, or
// (project non-null) fed row by row to that pointwise conv (+ residual), which writes `out`.
void run_dw(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
            const void* packed, float* out, Parallel& par, const PointwiseConv* pw,
            const PointwiseConv* project = nullptr, const float* residual = nullptr) {
  const size_t dm = p.group_output_channels, OC = size_t{p.groups} * dm;
  const size_t ring_rows = dm == 1 && !pw ? 0 : ring_rows_for(p);
  int32_t* plan = nullptr;
  if (ring_rows && !pw) {
    const size_t groups = div_up(OC, 8);
    plan = static_cast<int32_t*>(internal::aligned_alloc64(groups * 10 * sizeof(int32_t)));
    for (size_t g = 0; g < groups; ++g) {
      const size_t base = g * 8 / dm;  // output channel o reads input channel o / dm
      plan[g * 10] = static_cast<int32_t>(base);
      plan[g * 10 + 1] = static_cast<int32_t>(min_sz(8, p.groups - base));
      for (size_t i = 0; i < 8; ++i)
        plan[g * 10 + 2 + i] = static_cast<int32_t>(min_sz((g * 8 + i) / dm - base, 7));
    }
  }
  DwCtx x;
  x.p = &p;
  x.H = H;
  x.W = W;
  x.OH = OH;
  x.OW = OW;
  x.C = OC;
  x.Cin = pw ? pw->channels : p.groups;
  x.in = in;
  x.bias = static_cast<const float*>(packed);
  x.w = x.bias + x.C;
  x.out = out;
  x.vmin = p.act.min;
  x.vmax = p.act.max;
  x.stride3 = p.kernel_w == 3 && p.dilation_w == 1 && p.stride_w <= 2 ? static_cast<int>(p.stride_w) : 0;
  x.clamp = p.act.min != -__builtin_inff() || p.act.max != __builtin_inff();
  x.expand_plan = plan;
  x.pw_packed = pw ? pw->packed : nullptr;
  x.pw_act = pw ? pw->act : Activation();
  x.ring_rows = ring_rows;
  x.project = project;
  x.residual = residual;
  x.proj_rows = project ? project_rows_for(p, OW, OC) : 0;
  x.rows = N * OH;
  interior(OW, W, p.kernel_w, p.stride_w, p.dilation_w, p.pad_left, &x.ox_lo, &x.ox_hi);
  // One padding column at most on each side: pixel 0's left tap at column -1, the last pixel's right tap at
  // column W. Their per-pixel path (pointer lists, two loads per FMA) cost 19 % of a 14x14 and 30 % of a 7x7
  // depthwise conv, for 2 pixels of 14 and 7.
  x.edge_strips = x.stride3 != 0 && OW >= 4 && x.ox_lo <= 1 && (x.ox_lo == 0 || p.pad_left == 1) &&
                  x.ox_hi + 1 >= OW && (x.ox_hi == OW || (OW - 1) * p.stride_w + 2 == W + p.pad_left);
  x.pair_rows = pairable(p) && x.edge_strips;
  const size_t threads = internal::parallel_threads(par);
  // Row pairs are the units of work then, unless a thread would get more rows than with single rows: 14 rows
  // on 2 threads as 7 pairs split 4 : 3, and the 14x14 steps of MobileNetV2 ran 12 -> 14 us. With single rows
  // as units, a task's rows still run in pairs where it has two.
  x.unit = x.pair_rows ? 2 : 1;
  if (x.pair_rows && 2 * div_up(div_up(x.rows, 2), threads) > div_up(x.rows, threads) + x.rows % 2)
    x.unit = 1;
  x.call = internal::unique_call_id();
  // A few tasks per thread, so the pool can even out threads that run at different speeds. With a fused
  // pointwise conv that costs no recomputation unless a thread takes another's task: its ring then lacks the
  // rows the two tasks share (the halo), and so does the other thread's next task.
  // Measured on MobileNetV2 at 2 threads: with one task per thread (no carried ring), the three big fused
  // pairs left one thread waiting 30-70 us each.
  const double row_cost =
      static_cast<double>(OW) * x.C *
      ((pw ? x.Cin + 9.0 : double(p.kernel_h) * p.kernel_w) + (project ? project->channels : 0));
  x.tasks = internal::task_count(div_up(x.rows, x.unit), row_cost * x.unit, threads, 4);
  // Single-row units that could run in pairs: tasks of 3 rows or more, so most rows still pair up (7 rows on 2
  // threads as 7 tasks ran every row alone).
  if (x.pair_rows && x.unit == 1) x.tasks = max_sz(1, min_sz(x.tasks, max_sz(threads, x.rows / 3)));
  const internal::TaskFn fn = p.kernel_w == 3 ? dw_task<3> : p.kernel_w == 5 ? dw_task<5> : dw_task<0>;
  internal::parallel_run(par, x.tasks, fn, &x);
  internal::aligned_free(plan);
}

}  // namespace

void dwconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par) {
  const size_t dm = p.group_output_channels, OC = size_t{p.groups} * dm;
  if (dm == 0 || !dw_fits(p, W, OC, dm == 1 ? 0 : ring_rows_for(p))) {
    scalar::dwconv2d(without_post(p), N, H, W, in, OH, OW, packed, out, par);
    return apply_post(p.act.post, out, 1, N * OH * OW * OC, 0);
  }
  if (N == 0 || OH == 0 || OW == 0 || OC == 0) return;
  run_dw(p, N, H, W, in, OH, OW, packed, out, par, nullptr);
}

void dwconv2d_fused(const PointwiseConv* expand, const ConvParams& p, size_t N, size_t H, size_t W,
                    const float* in, size_t OH, size_t OW, const void* dw_packed,
                    const PointwiseConv* project, const float* residual, float* out, Parallel& par) {
  const size_t C = p.groups;
  if (N == 0 || OH == 0 || OW == 0 || C == 0) return;
  const size_t ring_rows = expand ? ring_rows_for(p) : 0;
  const size_t buf_pixels = project ? project_rows_for(p, OW, C) * OW : 0;  // the project's row buffer
  if (p.group_output_channels != 1 || (expand && expand->channels == 0) ||
      !dw_fits(p, W, C, ring_rows, buf_pixels)) {
    // The intermediate tensors in full (depth multiplier > 1, empty input channels, absurd geometry).
    float* mid = nullptr;
    if (expand) {
      mid = static_cast<float*>(internal::aligned_alloc64(N * H * W * C * sizeof(float)));
      gemm(N * H * W, C, expand->channels, in, expand->channels, expand->packed, mid, C, expand->act, par);
      in = mid;
    }
    float* dw_out = out;
    if (project) dw_out = static_cast<float*>(internal::aligned_alloc64(N * OH * OW * C * sizeof(float)));
    dwconv2d(p, N, H, W, in, OH, OW, dw_packed, dw_out, par);
    if (project) {
      const size_t M = N * OH * OW, co = project->channels;
      if (residual) {
        gemm_residual(M, co, C, dw_out, C, project->packed, residual, co, out, co, project->act, par);
      } else {
        gemm(M, co, C, dw_out, C, project->packed, out, co, project->act, par);
      }
      internal::aligned_free(dw_out);
    }
    return internal::aligned_free(mid);
  }
  run_dw(p, N, H, W, in, OH, OW, dw_packed, out, par, expand, project, residual);
}

}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
