// AVX2+FMA dense convolution (IGEMM; the plain GEMM is in gemm.cc) (compiled with -mavx2 -mfma -mf16c).
//
// One microkernel serves both: an MR x 16 (MR <= 6) tile of C (gemm_microkernel.h's, as in gemm.cc) computed
// over `ks` taps of `kc` inputs each, A rows given as pointers (GEMM: one tap, row pointers into A; conv: per
// tap, pointers to input pixels or to a zero row for padding — the indirection of the Indirect Convolution
// Algorithm, built per tile, no im2col).
// Accumulators (2*MR ymm) start from the bias stored at the head of each packed 16-column panel.
// RGB stems can read an NCHW image in place (ConvParams::input_nchw): ukernel_planar takes the tile's
// pixels as one base pointer and the row / plane strides, over the same packed panels.
//
// Packed layouts (private to this table):
//   gemm:  per 16-column panel  [16 bias][K x 16 weights]                 (N zero-padded to 16)
//   conv:  per group, per panel [16 bias][taps x gic x 16 weights]         (goc zero-padded to 16)
//
// ODR hygiene: this TU instantiates no std:: templates and defines everything in an anonymous namespace
// except the table entries; parallelism and scratch memory go through internal.h's generic helpers.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/gemm_microkernel.h"
#include "kernels/avx2/simd.h"
#include "kernels/avx2/vmath.h"
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

inline void store16(float* c, size_t nc, __m256 lo, __m256 hi) {
  if (nc == kNR) {
    _mm256_storeu_ps(c, lo);
    _mm256_storeu_ps(c + 8, hi);
    return;
  }
  alignas(32) float tmp[kNR];
  _mm256_store_ps(tmp, lo);
  _mm256_store_ps(tmp + 8, hi);
  for (size_t j = 0; j < nc; ++j) c[j] = tmp[j];
}

// Adds the fused residual r (dense rows with the output's stride; null: none) before the clamp, then stores
// the tile's nc columns.
template <int MR>
__attribute__((always_inline)) inline void finish_tile(__m256 (&acc0)[MR], __m256 (&acc1)[MR], float* c,
                                                       size_t ldc, size_t nc, __m256 vmin, __m256 vmax,
                                                       const float* r) {
  if (r) {
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) {
      if (nc == kNR) {
        acc0[m] = _mm256_add_ps(acc0[m], _mm256_loadu_ps(r + m * ldc));
        acc1[m] = _mm256_add_ps(acc1[m], _mm256_loadu_ps(r + m * ldc + 8));
      } else {
        alignas(32) float tmp[kNR] = {};
        for (size_t j = 0; j < nc; ++j) tmp[j] = r[m * ldc + j];
        acc0[m] = _mm256_add_ps(acc0[m], _mm256_load_ps(tmp));
        acc1[m] = _mm256_add_ps(acc1[m], _mm256_load_ps(tmp + 8));
      }
    }
  }
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m)
    store16(c + m * ldc, nc, clamp8(acc0[m], vmin, vmax), clamp8(acc1[m], vmin, vmax));
}

// KC > 0: the per-tap input depth is the compile-time KC (small-channel convs such as RGB stems, where a
// runtime-count loop of 3 would cost more than its FMAs); KC = 0: runtime kc.
template <int MR, int KC>
__attribute__((always_inline)) inline void ukernel_inl(size_t ks, size_t kc_rt, const float* const* a,
                                                       const float* w, float* c, size_t ldc, size_t nc,
                                                       __m256 vmin, __m256 vmax, const float* r) {
  const size_t kc = KC > 0 ? size_t{KC} : kc_rt;
  __m256 acc0[MR], acc1[MR];
  tile16_load_bias<MR>(w, acc0, acc1);
  w += kNR;
  for (size_t t = 0; t < ks; ++t, a += MR) {
    const float* ap[MR];
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) ap[m] = a[m];
#pragma GCC unroll 4
    for (size_t k = 0; k < kc; ++k, w += kNR) tile16_fma<MR>(w, ap, k, acc0, acc1);
  }
  finish_tile<MR>(acc0, acc1, c, ldc, nc, vmin, vmax, r);
}

#if defined(WEBXNN_F32_ZMM)
// ukernel_inl's tile on gemm_microkernel.h's 512-bit pieces (the AVX-512 build of this file) for NP = 1 or 2
// full panels, the second pstride floats after the first.
template <int MR, int KC, int NP>
__attribute__((always_inline)) inline void ukernel_zmm(size_t ks, size_t kc_rt, const float* const* a,
                                                       const float* w, size_t pstride, float* c, size_t ldc,
                                                       __m256 vmin, __m256 vmax, const float* r) {
  const size_t kc = KC > 0 ? size_t{KC} : kc_rt;
  __m512 acc[MR][NP];
  ztile_load_bias<MR, NP>(w, pstride, acc);
  w += kNR;
  for (size_t t = 0; t < ks; ++t, a += MR) {
    const float* ap[MR];
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) ap[m] = a[m];
#pragma GCC unroll 4
    for (size_t k = 0; k < kc; ++k, w += kNR) ztile_fma<MR, NP>(w, pstride, ap, k, acc);
  }
  ztile_store<MR, NP>(acc, c, ldc, r, ldc, true, vmin, vmax);  // finish_tile's order
}
#endif

// A tile of an RGB conv reading planes (NCHW): kernel_w KW, stride SW, 3 input channels, the tile's MR
// pixels consecutive in one output row. `base` is the top-left input of the first window in plane 0; `row`
// and `plane` are the element strides of an input row and plane (the image's, or a zero-padded copy's).
// Taps are taken in the packed (ky, kx, ci) order, so the sums are those of the NHWC kernel, bit for bit.
template <int MR, int KW, int SW>
__attribute__((always_inline)) inline void ukernel_planar(size_t kh, const float* base, size_t row,
                                                          size_t plane, const float* w, float* c, size_t ldc,
                                                          size_t nc, __m256 vmin, __m256 vmax,
                                                          const float* r) {
  __m256 acc0[MR], acc1[MR];
  tile16_load_bias<MR>(w, acc0, acc1);
  w += kNR;
  for (size_t ky = 0; ky < kh; ++ky, base += row) {
#pragma GCC unroll 7
    for (int kx = 0; kx < KW; ++kx) {
      // Opaque to the compiler, so it does not keep the broadcasts that a later kx re-reads (pixel m + 1's
      // tap kx - SW is pixel m's tap kx): more live vectors than there are registers, spilled and reloaded
      // (3x3 stride-2 stem: 287 -> 247 us).
      const float* pc[3] = {base + kx, base + plane + kx, base + 2 * plane + kx};
      asm("" : "+r"(pc[0]), "+r"(pc[1]), "+r"(pc[2]));
#pragma GCC unroll 3
      for (int ci = 0; ci < 3; ++ci, w += kNR) {
        const float* px[MR];  // the tile's pixels of this tap and channel
#pragma GCC unroll 6
        for (int m = 0; m < MR; ++m) px[m] = pc[ci] + m * SW;
        tile16_fma<MR>(w, px, 0, acc0, acc1);
      }
    }
  }
  finish_tile<MR>(acc0, acc1, c, ldc, nc, vmin, vmax, r);
}

#if defined(WEBXNN_F32_ZMM)
// ukernel_planar on gemm_microkernel.h's 512-bit pieces, NP = 1 or 2 full panels (pstride floats apart).
template <int MR, int KW, int SW, int NP>
__attribute__((always_inline)) inline void ukernel_planar_zmm(size_t kh, const float* base, size_t row,
                                                              size_t plane, const float* w, size_t pstride,
                                                              float* c, size_t ldc, __m256 vmin, __m256 vmax,
                                                              const float* r) {
  __m512 acc[MR][NP];
  ztile_load_bias<MR, NP>(w, pstride, acc);
  w += kNR;
  for (size_t ky = 0; ky < kh; ++ky, base += row) {
#pragma GCC unroll 7
    for (int kx = 0; kx < KW; ++kx) {
      const float* pc[3] = {base + kx, base + plane + kx, base + 2 * plane + kx};
      asm("" : "+r"(pc[0]), "+r"(pc[1]), "+r"(pc[2]));  // as in ukernel_planar
#pragma GCC unroll 3
      for (int ci = 0; ci < 3; ++ci, w += kNR) {
        const float* px[MR];  // the tile's pixels of this tap and channel
#pragma GCC unroll 6
        for (int m = 0; m < MR; ++m) px[m] = pc[ci] + m * SW;
        ztile_fma<MR, NP>(w, pstride, px, 0, acc);
      }
    }
  }
  ztile_store<MR, NP>(acc, c, ldc, r, ldc, true, vmin, vmax);
}
#endif

// Pixels per planar tile: 5 for the 3-wide kernels. With 6, the 12 accumulators, 2 weight vectors and the
// broadcast leave one spare register, and GCC spilled an accumulator (and swapped a weight vector through the
// stack) in the tap loop: the 224x224 3x3 stride-2 stem ran 241 us with 6-pixel tiles, 230 with 5 (stride 1,
// 112x112 -> 32: 239-245 -> 232-236 us). The 7-wide ones keep 6 (2133 us; 2165 with 5).
size_t planar_mr(const ConvParams& p) { return p.kernel_w == 3 ? 5 : kMR; }

// An output row of OW pixels cut into div_up(OW, mr) planar tiles as equal as possible: their sizes differ by
// one pixel at most (4-5 pixels for rows of 16 or more at mr = 5).
struct PlanarTiles {
  size_t count, ow;
  PlanarTiles(size_t OW, size_t mr) : count(div_up(OW, mr)), ow(OW) {}
  size_t start(size_t j) const { return ow * j / count; }
  size_t rows(size_t j) const { return start(j + 1) - start(j); }
};

// The planar kernels there are: 3x3 (stride 1 or 2) and 7x7 (stride 2) RGB stems.
bool planar_tiles(const ConvParams& p) {
  return p.group_input_channels == 3 && p.groups == 1 && p.dilation_h == 1 && p.dilation_w == 1 &&
         ((p.kernel_w == 3 && (p.stride_w == 1 || p.stride_w == 2)) || (p.kernel_w == 7 && p.stride_w == 2));
}

template <int MR>
void planar_panels(const ConvParams& p, const float* base, size_t row, size_t plane, const float* w,
                   size_t panel_floats, size_t panels, float* c, size_t ldc, size_t goc, __m256 vmin,
                   __m256 vmax, const float* r) {
  each_panel_tile(0, panels, goc, [&](size_t q, size_t nc, auto np) {
    constexpr int NP = decltype(np)::value;
    const float* wq = w + q * panel_floats;
    float* cq = c + q * kNR;
    const float* rq = r ? r + q * kNR : nullptr;
#if defined(WEBXNN_F32_ZMM)
    if (nc == kNR) {  // full panels on zmm
      if (p.kernel_w == 7) {
        ukernel_planar_zmm<MR, 7, 2, NP>(p.kernel_h, base, row, plane, wq, panel_floats, cq, ldc, vmin, vmax,
                                         rq);
      } else if (p.stride_w == 2) {
        ukernel_planar_zmm<MR, 3, 2, NP>(p.kernel_h, base, row, plane, wq, panel_floats, cq, ldc, vmin, vmax,
                                         rq);
      } else {
        ukernel_planar_zmm<MR, 3, 1, NP>(p.kernel_h, base, row, plane, wq, panel_floats, cq, ldc, vmin, vmax,
                                         rq);
      }
      return;
    }
#endif
    if constexpr (NP == 1) {
      if (p.kernel_w == 7) {
        ukernel_planar<MR, 7, 2>(p.kernel_h, base, row, plane, wq, cq, ldc, nc, vmin, vmax, rq);
      } else if (p.stride_w == 2) {
        ukernel_planar<MR, 3, 2>(p.kernel_h, base, row, plane, wq, cq, ldc, nc, vmin, vmax, rq);
      } else {
        ukernel_planar<MR, 3, 1>(p.kernel_h, base, row, plane, wq, cq, ldc, nc, vmin, vmax, rq);
      }
    }
  });
}

// Runs ukernel_planar over `panels` consecutive panels from w for one tile of mr pixels (planar_tiles(p)).
void planar_tile(size_t mr, const ConvParams& p, const float* base, size_t row, size_t plane, const float* w,
                 size_t panel_floats, size_t panels, float* c, size_t ldc, size_t goc, __m256 vmin,
                 __m256 vmax, const float* r) {
  with_rows<kMR>(mr, [&](auto m) {
    planar_panels<decltype(m)::value>(p, base, row, plane, w, panel_floats, panels, c, ldc, goc, vmin, vmax,
                                      r);
  });
}

template <int MR, int KC>
void ukernel(size_t ks, size_t kc_rt, const float* const* a, const float* w, float* c, size_t ldc, size_t nc,
             __m256 vmin, __m256 vmax, const float* r) {
  ukernel_inl<MR, KC>(ks, kc_rt, a, w, c, ldc, nc, vmin, vmax, r);
}

// NP = 2: two full panels, the second pstride floats after w (the 512-bit build only, from each_panel_tile;
// NP = 1 there runs full panels on zmm too).
template <int KC, int NP>
void run_ukernel_kc(size_t mr, size_t ks, size_t kc, const float* const* a, const float* w, size_t pstride,
                    float* c, size_t ldc, size_t nc, __m256 vmin, __m256 vmax, const float* r) {
#if defined(WEBXNN_F32_ZMM)
  if (nc == kNR) {
    return with_rows<kMR>(mr, [&](auto m) {
      ukernel_zmm<decltype(m)::value, KC, NP>(ks, kc, a, w, pstride, c, ldc, vmin, vmax, r);
    });
  }
#endif
  if constexpr (NP == 1) {
    with_rows<kMR>(mr,
                   [&](auto m) { ukernel<decltype(m)::value, KC>(ks, kc, a, w, c, ldc, nc, vmin, vmax, r); });
  }
}

template <int NP>
void run_ukernel_np(size_t mr, size_t ks, size_t kc, const float* const* a, const float* w, size_t pstride,
                    float* c, size_t ldc, size_t nc, __m256 vmin, __m256 vmax, const float* r) {
  switch (kc) {
    case 1: return run_ukernel_kc<1, NP>(mr, ks, kc, a, w, pstride, c, ldc, nc, vmin, vmax, r);
    case 2: return run_ukernel_kc<2, NP>(mr, ks, kc, a, w, pstride, c, ldc, nc, vmin, vmax, r);
    case 3: return run_ukernel_kc<3, NP>(mr, ks, kc, a, w, pstride, c, ldc, nc, vmin, vmax, r);
    case 4: return run_ukernel_kc<4, NP>(mr, ks, kc, a, w, pstride, c, ldc, nc, vmin, vmax, r);
    case 9: return run_ukernel_kc<9, NP>(mr, ks, kc, a, w, pstride, c, ldc, nc, vmin, vmax, r);  // 3 x RGB
    case 21: return run_ukernel_kc<21, NP>(mr, ks, kc, a, w, pstride, c, ldc, nc, vmin, vmax, r);  // 7 x RGB
    default: return run_ukernel_kc<0, NP>(mr, ks, kc, a, w, pstride, c, ldc, nc, vmin, vmax, r);
  }
}

// The tile (mr rows, ks taps of kc steps from a) against panels [q0, q1) of a group's packed weights wg, into
// c's columns from q0 * 16 (residual r: the same columns of the tile's residual rows, or null); the 512-bit
// build takes two full panels at a time (each_panel_tile).
void run_panels(size_t mr, size_t ks, size_t kc, const float* const* a, const float* wg, size_t panel_floats,
                size_t q0, size_t q1, size_t goc, float* c, size_t ldc, __m256 vmin, __m256 vmax,
                const float* r) {
  each_panel_tile(q0, q1, goc, [&](size_t q, size_t nc, auto np) {
    run_ukernel_np<decltype(np)::value>(mr, ks, kc, a, wg + q * panel_floats, panel_floats, c + q * kNR, ldc,
                                        nc, vmin, vmax, r ? r + q * kNR : nullptr);
  });
}

// Panels per task group: keep one group's packed weights within ~256 KB (L2) and, when M is small, leave
// enough groups for every thread.
// The 512-bit build keeps pairs of panels together (its two-panel tiles): ResNet-50's 7x7x512 3x3 convs have
// 295 KB panels, one per group otherwise.
size_t panels_per_group(size_t panel_floats, size_t panels, size_t m_tiles, size_t threads) {
  size_t g = max_sz(1, (256 * 1024) / (panel_floats * sizeof(float)));
  if (threads > 1 && m_tiles < threads * 4) g = min_sz(g, max_sz(1, panels / (threads * 4)));
#if defined(WEBXNN_F32_ZMM)
  g = round_up(g, 2);
#endif
  return min_sz(g, panels);
}

// ------------------------------------------------------------------------------------------------ conv
struct ConvCtx {
  const ConvParams* p;
  size_t N, H, W, OH, OW, IC, OC, gic, goc, taps;
  size_t ptiles, panels, group, n_pgroups, units, tasks;
  // conv_task: the pixel tiles in mchunks chunks of ctiles (chunks outside the panel groups: see conv2d)
  size_t mchunks = 1, ctiles = 0;
  const float* in;
  const float* packed;
  const float* zero = nullptr;  // conv_task's zero row (padding taps)
  float* out;
  const float* residual;  // dense like out, or null
  const size_t* tap_off = nullptr;  // conv_task: element offset of each tap from the window's top-left pixel
  size_t span_h, span_w;  // dilation * (kernel - 1)
  size_t pix, chs;  // element strides between adjacent input pixels and between input channels (NCHW
  // input, p.input_nchw: conv_task gathers the windows, planar_task reads the planes)
  bool rows_contig;  // NHWC, one group, dilation_w 1: a kernel row's kw * gic inputs are contiguous
  float vmin, vmax;
};

void conv_task(const void* vctx, size_t task) {
  const ConvCtx& x = *static_cast<const ConvCtx*>(vctx);
  const ConvParams& p = *x.p;
  const size_t u0 = x.units * task / x.tasks, u1 = x.units * (task + 1) / x.tasks;
  const size_t panel_floats = kNR + x.taps * x.gic * kNR;
  const size_t group_floats = x.panels * panel_floats;
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  float* gbuf = (x.gic < 8 && x.taps > 1) || p.input_nchw
                    ? static_cast<float*>(internal::scratch(internal::Scratch::kIgemmGather,
                                                            kMR * x.taps * x.gic * sizeof(float)))
                    : nullptr;
  // The thread's scratch, not one or two allocations per task (up to 16 tasks per thread and call).
  const size_t n_ind = x.taps * kMR, n_krows = gbuf && x.rows_contig ? size_t{p.kernel_h} * kMR : 0;
  const float** ind = static_cast<const float**>(
      internal::scratch(internal::Scratch::kIgemmRows, max_sz(n_ind + n_krows, 1) * sizeof(const float*)));
  const float** krows = n_krows ? ind + n_ind : nullptr;
  bool inner[kMR];
  const size_t krow_step = size_t{p.dilation_h} * x.W * x.IC;  // between kernel rows, in elements
  const size_t P = x.OH * x.OW;
  // unit = (((n * groups + g) * mchunks + mc) * n_pgroups + pg) * ctiles + k: pixel tile pt = mc * ctiles + k
  // (none past the last tile: the last chunk's padding units are empty), innermost so a task's consecutive
  // units reuse the same weight panels. Decomposed once, then stepped (divisions per unit showed up in small
  // convs such as RGB stems, where a unit is only a few hundred cycles of FMAs).
  const RowTiles tiles(P);
  size_t k = u0 % x.ctiles, pg = u0 / x.ctiles % x.n_pgroups, mc = u0 / x.ctiles / x.n_pgroups % x.mchunks;
  const size_t gn = u0 / x.ctiles / x.n_pgroups / x.mchunks;
  size_t g = gn % p.groups, n = gn / p.groups;
  size_t pt = mc * x.ctiles + k, px0 = 0, mr = 0, toy = 0, tox = 0;  // tox, toy: the tile's first pixel
  const auto start_tile = [&] {
    px0 = tiles.start(pt);
    toy = px0 / x.OW;
    tox = px0 % x.OW;
  };
  if (pt < x.ptiles) start_tile();
  for (size_t u = u0; u < u1; ++u) {
    if (u != u0) {
      if (++k == x.ctiles) {
        k = 0;
        if (++pg == x.n_pgroups) {
          pg = 0;
          if (++mc == x.mchunks) {
            mc = 0;
            if (++g == p.groups) g = 0, ++n;
          }
        }
        pt = mc * x.ctiles;
        if (pt < x.ptiles) start_tile();
      } else if (++pt < x.ptiles) {
        px0 += mr;
        for (tox += mr; tox >= x.OW; tox -= x.OW) ++toy;
      }
    }
    if (pt >= x.ptiles) continue;  // the last chunk's padding
    mr = tiles.rows(pt);
    const float* in_n = x.in + n * x.H * x.W * x.IC + g * x.gic * x.chs;
    size_t oy = toy, ox = tox;  // of pixel px0 + m, stepped (no division per pixel)
    // Row-contiguous path, whole tile in one output row and inside the input (most tiles of a stem): the
    // kernel rows' pointers are a 2-D progression, no per-pixel checks.
    bool tile_inner = false;
    if (krows && tox + mr <= x.OW) {
      const size_t iy0 = toy * p.stride_h, ix0 = tox * p.stride_w, ix1 = (tox + mr - 1) * p.stride_w;
      if (iy0 >= p.pad_top && iy0 + x.span_h - p.pad_top < x.H && ix0 >= p.pad_left &&
          ix1 + x.span_w - p.pad_left < x.W) {
        const float* base = in_n + ((iy0 - p.pad_top) * x.W + (ix0 - p.pad_left)) * x.IC;
        const size_t pix = size_t{p.stride_w} * x.IC;
        for (size_t ky = 0; ky < p.kernel_h; ++ky, base += krow_step)
          for (size_t m = 0; m < mr; ++m) krows[ky * mr + m] = base + m * pix;
        tile_inner = true;
      }
    }
    for (size_t m = 0; m < (tile_inner ? 0 : mr); ++m, ox = ox + 1 == x.OW ? (++oy, 0) : ox + 1) {
      const size_t iy0 = oy * p.stride_h, ix0 = ox * p.stride_w;  // padded coordinates of tap (0, 0)
      if (iy0 >= p.pad_top && iy0 + x.span_h - p.pad_top < x.H && ix0 >= p.pad_left &&
          ix0 + x.span_w - p.pad_left < x.W) {
        // Whole window inside the input: the pixel's base plus the per-tap offsets.
        const float* base = in_n + ((iy0 - p.pad_top) * x.W + (ix0 - p.pad_left)) * x.pix;
        inner[m] = true;
        if (krows) {  // the kernel rows read in place (see below)
          const float* rp = base;
          for (size_t ky = 0; ky < p.kernel_h; ++ky, rp += krow_step) krows[ky * mr + m] = rp;
          continue;
        }
        for (size_t t = 0; t < x.taps; ++t) ind[t * kMR + m] = base + x.tap_off[t];
        continue;
      }
      inner[m] = false;
      for (size_t ky = 0; ky < p.kernel_h; ++ky) {
        const size_t iy_p = oy * p.stride_h + ky * p.dilation_h;  // in padded coordinates
        const bool y_ok = iy_p >= p.pad_top && iy_p - p.pad_top < x.H;
        for (size_t kx = 0; kx < p.kernel_w; ++kx) {
          const size_t ix_p = ox * p.stride_w + kx * p.dilation_w;
          const bool ok = y_ok && ix_p >= p.pad_left && ix_p - p.pad_left < x.W;
          ind[(ky * p.kernel_w + kx) * kMR + m] =
              ok ? in_n + ((iy_p - p.pad_top) * x.W + (ix_p - p.pad_left)) * x.pix : x.zero;
        }
      }
    }
    const float* wg = x.packed + g * group_floats;
    const size_t q0 = pg * x.group, q1 = min_sz(x.panels, q0 + x.group);
    float* c = x.out + (n * P + px0) * x.OC + g * x.goc;
    if (krows) {
      // Few input channels, one group, no horizontal dilation (RGB stems): a kernel row's kw * gic inputs
      // are contiguous in the input and the packed weights are (ky, kx, ci)-major, so each kernel row is one
      // microkernel tap of kw * gic steps read in place (no copy). Windows that cross the border are gathered
      // (zeros for padding) into gbuf rows. Same products in the same order as the gathered path below.
      const size_t kh = p.kernel_h, kw = p.kernel_w, kc = kw * x.gic, kk = x.taps * x.gic;
      for (size_t m = 0; m < (tile_inner ? 0 : mr); ++m) {
        if (inner[m]) continue;  // krows already set
        float* row = gbuf + m * kk;
        for (size_t t = 0; t < x.taps; ++t) {
          const float* src = ind[t * kMR + m];
          for (size_t ci = 0; ci < x.gic; ++ci) row[t * x.gic + ci] = src[ci];
        }
        for (size_t ky = 0; ky < kh; ++ky) krows[ky * mr + m] = row + ky * kc;
      }
      if (mr == kMR && kc == 9 && kh == 3 && !x.residual && x.goc % kNR == 0) {
        // A 3x3 RGB stem's full tiles: the microkernel inlined, every size known (a call and two dispatches
        // per panel cost ~7 % of such a stem, whose panels are ~160 cycles of FMAs each).
        each_panel_tile(q0, q1, x.goc, [&](size_t q, size_t, auto np) {
#if defined(WEBXNN_F32_ZMM)
          ukernel_zmm<kMR, 9, decltype(np)::value>(3, 9, krows, wg + q * panel_floats, panel_floats,
                                                   c + q * kNR, x.OC, vmin, vmax, nullptr);
#else
          ukernel_inl<kMR, 9>(3, 9, krows, wg + q * panel_floats, c + q * kNR, x.OC, kNR, vmin, vmax, nullptr);
#endif
        });
      } else {
        run_panels(mr, kh, kc, krows, wg, panel_floats, q0, q1, x.goc, c, x.OC, vmin, vmax,
                   x.residual ? x.residual + (c - x.out) : nullptr);
      }
    } else if (gbuf) {
      // Few input channels (RGB stems), or planes: gather the tile's windows into mr contiguous rows of
      // taps * gic (row order = the packed weights' tap-major order), then one long k loop per panel instead
      // of many taps of a 1-3 step loop.
      const size_t kk = x.taps * x.gic;
      const float* rows[kMR];
      for (size_t m = 0; m < mr; ++m) {
        float* row = gbuf + m * kk;
        for (size_t t = 0; t < x.taps; ++t, row += x.gic) {
          const float* src = ind[t * kMR + m];
          const size_t cs = src == x.zero ? 0 : x.chs;  // the zero row is one channel long
          for (size_t ci = 0; ci < x.gic; ++ci) row[ci] = src[ci * cs];
        }
        rows[m] = gbuf + m * kk;
      }
      run_panels(mr, 1, kk, rows, wg, panel_floats, q0, q1, x.goc, c, x.OC, vmin, vmax,
                 x.residual ? x.residual + (c - x.out) : nullptr);
    } else {
      // The microkernel reads MR pointers per tap; its template MR equals mr, so stride the buffer by mr.
      if (mr != kMR) {
        for (size_t t = 0; t < x.taps; ++t)
          for (size_t m = 0; m < mr; ++m) ind[t * mr + m] = ind[t * kMR + m];
      }
      run_panels(mr, x.taps, x.gic, ind, wg, panel_floats, q0, q1, x.goc, c, x.OC, vmin, vmax,
                 x.residual ? x.residual + (c - x.out) : nullptr);
    }
    // The fused post-op over the tile just written (mr pixels x this unit's panels, in L1).
    apply_post(p.act.post, c + q0 * kNR, mr, min_sz(x.goc, q1 * kNR) - q0 * kNR, x.OC);
  }
}

// An RGB conv reading planes (planar_tiles(p)): tiles of pixels within one output row (PlanarTiles), so
// every tile runs ukernel_planar: on the image in place when its windows are inside it, else on a zero-padded
// copy of the few input rows and columns the tile reads.
void planar_task(const void* vctx, size_t task) {
  const ConvCtx& x = *static_cast<const ConvCtx*>(vctx);
  const ConvParams& p = *x.p;
  const size_t u0 = x.units * task / x.tasks, u1 = x.units * (task + 1) / x.tasks;
  const size_t panel_floats = kNR + x.taps * x.gic * kNR, plane = x.chs;
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  const size_t patch_w =
      (planar_mr(p) - 1) * p.stride_w + p.kernel_w;  // columns of the widest tile's windows
  float* patch = static_cast<float*>(
      internal::scratch(internal::Scratch::kIgemmGather, x.gic * p.kernel_h * patch_w * sizeof(float)));
  const PlanarTiles tiles(x.OW, planar_mr(p));
  // unit = ((n * n_pgroups + pg) * OH + oy) * tiles.count + j: pixel tiles innermost (weight panels reused).
  size_t j = u0 % tiles.count, oy = u0 / tiles.count % x.OH, pg = u0 / tiles.count / x.OH % x.n_pgroups;
  size_t n = u0 / tiles.count / x.OH / x.n_pgroups;
  for (size_t u = u0; u < u1; ++u) {
    if (u != u0 && ++j == tiles.count) {
      j = 0;
      if (++oy == x.OH) {
        oy = 0;
        if (++pg == x.n_pgroups) pg = 0, ++n;
      }
    }
    const size_t mr = tiles.rows(j), ox = tiles.start(j);
    const size_t iy0 = oy * p.stride_h, ix0 = ox * p.stride_w;  // padded coordinates of the first window
    const size_t cols = (mr - 1) * p.stride_w + p.kernel_w;
    const float* in_n = x.in + n * x.IC * plane;
    const float* base;
    size_t row = x.W, pl = plane;
    if (iy0 >= p.pad_top && iy0 + x.span_h - p.pad_top < x.H && ix0 >= p.pad_left &&
        ix0 + cols - 1 - p.pad_left < x.W) {
      base = in_n + (iy0 - p.pad_top) * x.W + (ix0 - p.pad_left);
    } else {  // [3][kh][cols] copy of what the windows read, zeros for padding
      row = cols;
      pl = size_t{p.kernel_h} * cols;
      // Columns [k0, k1) of the copy are inside the image.
      const size_t k0 = min_sz(cols, ix0 < p.pad_left ? p.pad_left - ix0 : 0);
      const size_t k1 = max_sz(k0, x.W + p.pad_left > ix0 ? min_sz(cols, x.W + p.pad_left - ix0) : 0);
      for (size_t ci = 0; ci < x.gic; ++ci) {
        for (size_t ky = 0; ky < p.kernel_h; ++ky) {
          float* dst = patch + ci * pl + ky * cols;
          const size_t iy = iy0 + ky;
          if (iy < p.pad_top || iy - p.pad_top >= x.H) {
            std::memset(dst, 0, cols * sizeof(float));
            continue;
          }
          const float* src = in_n + ci * plane + (iy - p.pad_top) * x.W;
          std::memset(dst, 0, k0 * sizeof(float));
          std::memcpy(dst + k0, src + (ix0 + k0 - p.pad_left), (k1 - k0) * sizeof(float));
          std::memset(dst + k1, 0, (cols - k1) * sizeof(float));
        }
      }
      base = patch;
    }
    const size_t q0 = pg * x.group, q1 = min_sz(x.panels, q0 + x.group);
    float* c = x.out + ((n * x.OH + oy) * x.OW + ox) * x.OC;
    planar_tile(mr, p, base, row, pl, x.packed + q0 * panel_floats, panel_floats, q1 - q0, c + q0 * kNR, x.OC,
                x.goc - q0 * kNR, vmin, vmax, x.residual ? x.residual + (c - x.out) + q0 * kNR : nullptr);
    apply_post(p.act.post, c + q0 * kNR, mr, min_sz(x.goc, q1 * kNR) - q0 * kNR, x.OC);
  }
}

}  // namespace

size_t conv2d_packed_size(const ConvParams& p) {
  if (narrow_groups(p)) return scalar::conv2d_packed_size(p);
  if (winograd_applies(p)) return winograd_packed_size(p);
  const size_t taps = size_t{p.kernel_h} * p.kernel_w;
  return size_t{p.groups} * div_up(p.group_output_channels, kNR) *
         (kNR + taps * p.group_input_channels * kNR) * sizeof(float);
}

void conv2d_pack(const ConvParams& p, const float* filter, const float* bias, void* packed) {
  if (narrow_groups(p)) return scalar::conv2d_pack(p, filter, bias, packed);
  if (winograd_applies(p)) return winograd_pack(p, filter, bias, packed);
  const size_t gic = p.group_input_channels, goc = p.group_output_channels;
  const size_t taps = size_t{p.kernel_h} * p.kernel_w, rows = taps * gic;
  const size_t group_floats = div_up(goc, kNR) * (kNR + rows * kNR);
  float* out = static_cast<float*>(packed);
  for (size_t g = 0; g < p.groups; ++g) {
    // Row r = tap * gic + ci of output channel co: filter OHWI [g*goc + co][tap][ci].
    const float* fg = filter + g * goc * rows;
    pack_panels(
        rows, goc, bias ? bias + g * goc : nullptr, [&](size_t r, size_t co) { return fg[co * rows + r]; },
        out + g * group_floats);
  }
}

namespace {

// ------------------------------------------------------------------------------------------------ im2col
// A convolution with few output pixels and deep windows as one GEMM: each output pixel's window (taps x
// channels, the packed weights' row order) copied into a row of A, then gemm.cc's K-blocked GEMM on conv2d's
// own packed panels. The IGEMM tile has no K blocking: with 4608-deep windows (ResNet-50's 7x7x512 3x3
// convs) it re-read each pair of 295 KB panels from L2 for every 6 pixels. The sums are the IGEMM's, tap by
// tap and channel by channel (padding taps multiply zeros), so the bits are too. Measured in ResNet-50 (1 thread,
// the 512-bit table, weights from DRAM): its 7x7x512 3x3 convs 1.93 -> 1.37 ms, the 1x1 stride-2 14x14x1024 ->
// 7x7x2048 1.71 -> 1.18.
constexpr size_t kIm2colBytes = size_t{1} << 20;  // A's bound: a per-call copy that stays in L2

bool im2col_applies(const ConvParams& p, size_t N, size_t OH, size_t OW) {
  const size_t k = size_t{p.kernel_h} * p.kernel_w * p.group_input_channels;
  return !p.input_nchw && p.groups == 1 && p.group_input_channels >= 64 &&
         static_cast<double>(N) * OH * OW * k * sizeof(float) <= static_cast<double>(kIm2colBytes);
}

struct Im2colCtx {
  const ConvParams* p;
  size_t H, W, IC, OH, OW, M, K, tasks;
  const float* in;
  float* a;
};

void im2col_task(const void* vctx, size_t task) {
  const Im2colCtx& x = *static_cast<const Im2colCtx*>(vctx);
  const ConvParams& p = *x.p;
  const size_t m0 = x.M * task / x.tasks, m1 = x.M * (task + 1) / x.tasks, P = x.OH * x.OW;
  for (size_t m = m0; m < m1; ++m) {
    const size_t n = m / P, oy = m % P / x.OW, ox = m % x.OW;
    float* row = x.a + m * x.K;
    for (size_t ky = 0; ky < p.kernel_h; ++ky) {
      const size_t iy_p = oy * p.stride_h + ky * p.dilation_h;  // in padded coordinates
      for (size_t kx = 0; kx < p.kernel_w; ++kx, row += x.IC) {
        const size_t ix_p = ox * p.stride_w + kx * p.dilation_w;
        if (iy_p < p.pad_top || iy_p - p.pad_top >= x.H || ix_p < p.pad_left || ix_p - p.pad_left >= x.W) {
          std::memset(row, 0, x.IC * sizeof(float));
          continue;
        }
        std::memcpy(row, x.in + ((n * x.H + iy_p - p.pad_top) * x.W + ix_p - p.pad_left) * x.IC,
                    x.IC * sizeof(float));
      }
    }
  }
}

void im2col_conv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                   const void* packed, const float* residual, float* out, Parallel& par) {
  Im2colCtx x;
  x.p = &p;
  x.H = H;
  x.W = W;
  x.IC = p.group_input_channels;
  x.OH = OH;
  x.OW = OW;
  x.M = N * OH * OW;
  x.K = size_t{p.kernel_h} * p.kernel_w * x.IC;
  x.in = in;
  // The caller's scratch, read by the GEMM's tasks on every thread until it returns.
  x.a = static_cast<float*>(internal::scratch(internal::Scratch::kIm2col, x.M * x.K * sizeof(float)));
  x.tasks = internal::task_count(x.M, static_cast<double>(x.K) / 4.0, internal::parallel_threads(par), 1);
  internal::parallel_run(par, x.tasks, im2col_task, &x);
  const size_t oc = p.group_output_channels;
  gemm_ahead(x.M, oc, x.K, x.a, x.K, packed, residual, oc, out, oc, p.act, p.ahead, par);
}

void conv2d_impl(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                 const void* packed, const float* residual, float* out, Parallel& par) {
  if (N == 0 || OH == 0 || OW == 0 || p.groups == 0 || p.group_output_channels == 0) return;
  if (winograd_applies(p)) return winograd_conv2d(p, N, H, W, in, OH, OW, packed, residual, out, par);
  if (!p.input_nchw && p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
      p.groups == 1 && p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0 &&
      OH == H && OW == W) {
    // 1x1, stride 1, no padding: a GEMM on the [N*H*W, C] view; the packed panels ([16 bias][gic x 16]) are
    // exactly gemm.cc's layout.
    const size_t oc = p.group_output_channels;
    return gemm_ahead(N * H * W, oc, p.group_input_channels, in, p.group_input_channels, packed, residual, oc,
                      out, oc, p.act, p.ahead, par);
  }
  if (im2col_applies(p, N, OH, OW)) return im2col_conv2d(p, N, H, W, in, OH, OW, packed, residual, out, par);
  ConvCtx x;
  x.p = &p;
  x.N = N;
  x.H = H;
  x.W = W;
  x.OH = OH;
  x.OW = OW;
  x.gic = p.group_input_channels;
  x.goc = p.group_output_channels;
  x.IC = size_t{p.groups} * x.gic;
  x.OC = size_t{p.groups} * x.goc;
  x.taps = size_t{p.kernel_h} * p.kernel_w;
  x.in = in;
  x.packed = static_cast<const float*>(packed);
  x.out = out;
  x.residual = residual;
  x.pix = p.input_nchw ? 1 : x.IC;
  x.chs = p.input_nchw ? H * W : 1;
  x.vmin = p.act.min;
  x.vmax = p.act.max;
  const bool by_rows = p.input_nchw && planar_tiles(p);  // planar_task's tiles stay within output rows
  x.ptiles = by_rows ? OH * PlanarTiles(OW, planar_mr(p)).count : RowTiles(OH * OW).count;
  x.panels = div_up(x.goc, kNR);
  const size_t threads = internal::parallel_threads(par);
  const size_t panel_floats = kNR + x.taps * x.gic * kNR;
  x.group = panels_per_group(panel_floats, x.panels, x.ptiles * N * p.groups, threads);
  x.n_pgroups = div_up(x.panels, x.group);
  // Panel groups inside pixel chunks, one chunk per thread, where the input outweighs the weights: the threads'
  // shares then split the pixels, not the panels, and each thread reads its part of the input (the rows the
  // op before wrote on its core) instead of all of it. ResNet-50's 3x3 s2 56x56x128 conv at 2 threads: 844 ->
  // 676 us in the model (its input 1.6 MB, written half on each core; its weights 0.6 MB).
  const double in_bytes = double(N) * H * W * x.IC * sizeof(float);
  const double w_bytes = double(p.groups) * x.panels * panel_floats * sizeof(float);
  if (!by_rows && threads > 1 && x.n_pgroups > 1 && x.ptiles >= threads * 4 && in_bytes > w_bytes)
    x.mchunks = threads;
  x.ctiles = div_up(x.ptiles, x.mchunks);
  x.units = N * p.groups * x.mchunks * x.n_pgroups * x.ctiles;  // planar_task: mchunks 1, ctiles = ptiles
  // Up to 16 tasks per thread: ResNet-50's big convs ran 16 tasks of ~0.13 ms on 2 threads, and the threads'
  // unequal speeds left one waiting up to a task at the end.
  x.tasks = internal::task_count(x.units, static_cast<double>(kMR) * kNR * x.group * (x.taps * x.gic + 1),
                                 threads, 16);
  x.span_h = size_t{p.dilation_h} * (p.kernel_h - 1);
  x.span_w = size_t{p.dilation_w} * (p.kernel_w - 1);
  x.rows_contig = !p.input_nchw && p.groups == 1 && p.dilation_w == 1;
  if (by_rows) return internal::parallel_run(par, x.tasks, planar_task, &x);
  // conv_task's tap offsets and zero row (padding taps point at it); planar_task needs neither.
  size_t* tap_off = static_cast<size_t*>(internal::aligned_alloc64(x.taps * sizeof(size_t)));
  for (size_t ky = 0; ky < p.kernel_h; ++ky)
    for (size_t kx = 0; kx < p.kernel_w; ++kx)
      tap_off[ky * p.kernel_w + kx] = (ky * p.dilation_h * W + kx * p.dilation_w) * x.pix;
  x.tap_off = tap_off;
  float* zero = static_cast<float*>(internal::aligned_alloc64(max_sz(x.gic, 1) * sizeof(float)));
  std::memset(zero, 0, max_sz(x.gic, 1) * sizeof(float));
  x.zero = zero;
  internal::parallel_run(par, x.tasks, conv_task, &x);
  internal::aligned_free(zero);
  internal::aligned_free(tap_off);
}
}  // namespace

void conv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
            const void* packed, float* out, Parallel& par) {
  if (narrow_groups(p)) {
    scalar::conv2d(without_post(p), N, H, W, in, OH, OW, packed, out, par);
    return apply_post(p.act.post, out, 1, N * OH * OW * size_t{p.groups} * p.group_output_channels, 0);
  }
  conv2d_impl(p, N, H, W, in, OH, OW, packed, nullptr, out, par);
}

// Planes are read in place by the kernels planar_tiles names, gathered per tile by the rest (see conv_task).
bool conv2d_reads_nchw(const ConvParams& p) { return planar_tiles(p); }

void conv2d_residual(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                     const void* packed, const float* residual, float* out, Parallel& par) {
  if (narrow_groups(p)) {
    scalar::conv2d_residual(without_post(p), N, H, W, in, OH, OW, packed, residual, out, par);
    return apply_post(p.act.post, out, 1, N * OH * OW * size_t{p.groups} * p.group_output_channels, 0);
  }
  conv2d_impl(p, N, H, W, in, OH, OW, packed, residual, out, par);
}

}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
