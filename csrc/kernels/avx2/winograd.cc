// AVX2+FMA 3x3 stride-1 convolution by Winograd F(2x2, 3x3) (compiled with -mavx2 -mfma -mf16c).
//
// Why: a 3x3 conv already runs at ~96 % of the FMA peak as an IGEMM, so the only way past that is fewer
// multiplies. F(2x2, 3x3) computes each 2x2 output tile from a 4x4 input tile with 16 multiplies per
// (input channel, output channel) instead of 36: 2.25x fewer, and the 16 products of all tiles are 16 plain
// GEMMs [tiles x C] x [C x K] that run on gemm.cc's microkernel. The transforms only use 0, +-1 and +-1/2,
// so the rounding error stays within a few ULP of the direct sum (tests compare against numpy).
//
//   U = G g G^T (filter, at pack time)   V = B^T d B (input tile)   Y = A^T (U .* V) A (output tile)
//   G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
//
// Packed layout: for each of the 16 transform positions xi, U_xi [C x K] in gemm.cc's panel format (zero
// bias in the panels), then the bias [K] (added by the output transform, before the residual and the clamp).
//
// Work: the (n, tile row, tile col) tiles are cut into blocks sized so a block's transformed input V
// [16][tb][C] and GEMM output M [16][tb][K] stay near L2; per block: input transform, 16 GEMMs, output
// transform. When there are fewer blocks than threads the output channels are split as well. Every output
// is computed the same way for any thread count (the blocking depends only on the shapes).
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/internal.h"

namespace webxnn {
namespace avx2 {
namespace {

constexpr size_t kNR = 16;       // gemm.cc's panel width
constexpr size_t kMR = 6;        // gemm.cc's row tile: blocks are whole row tiles
constexpr size_t kXi = 16;       // 4x4 transform positions
constexpr size_t kMaxTiles = 120;
constexpr size_t kScratchBytes = 1536 * 1024;

inline size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
inline size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }
inline size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }
inline size_t round_up(size_t a, size_t b) { return div_up(a, b) * b; }

inline __m256i lane_mask(size_t n) {  // first min(n, 8) lanes set
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n > 8 ? 8 : n)), idx);
}

size_t panel_bytes(const ConvParams& p) { return gemm_packed_size(p.group_input_channels, p.group_output_channels); }

struct WinoCtx {
  size_t N, H, W, OH, OW, C, K, TH, TW, tiles;
  size_t tb, tblocks, kgroups, panels, panels_per_group, ldv;
  size_t pad_top, pad_left;
  const float* in;
  const char* packed;  // 16 gemm-packed U matrices, then the bias
  size_t u_bytes;      // bytes of one packed U
  const float* bias;
  const float* residual;
  float* out;
  float vmin, vmax;
};

// V[xi][t][c] = (B^T d B)[xi] for the block's tiles, 8 channels at a time (zero outside the input).
void input_transform(const WinoCtx& x, size_t t0, size_t tcount, float* V) {
  const __m256 zero = _mm256_setzero_ps();
  const size_t vstride = x.tb * x.ldv;  // between transform positions
  for (size_t ti = 0; ti < tcount; ++ti) {
    const size_t t = t0 + ti, n = t / (x.TH * x.TW), ty = t / x.TW % x.TH, tx = t % x.TW;
    const float* src[16];
    const ptrdiff_t iy0 = static_cast<ptrdiff_t>(2 * ty) - static_cast<ptrdiff_t>(x.pad_top);
    const ptrdiff_t ix0 = static_cast<ptrdiff_t>(2 * tx) - static_cast<ptrdiff_t>(x.pad_left);
    for (size_t i = 0; i < 4; ++i) {
      const ptrdiff_t iy = iy0 + static_cast<ptrdiff_t>(i);
      for (size_t j = 0; j < 4; ++j) {
        const ptrdiff_t ix = ix0 + static_cast<ptrdiff_t>(j);
        const bool ok = iy >= 0 && iy < static_cast<ptrdiff_t>(x.H) && ix >= 0 && ix < static_cast<ptrdiff_t>(x.W);
        src[i * 4 + j] = ok ? x.in + ((n * x.H + static_cast<size_t>(iy)) * x.W + static_cast<size_t>(ix)) * x.C
                            : nullptr;
      }
    }
    float* v = V + ti * x.ldv;
    for (size_t c = 0; c < x.C; c += 8) {
      const __m256i mask = lane_mask(x.C - c);
      const bool full = c + 8 <= x.C;
      __m256 d[16];
      for (size_t e = 0; e < 16; ++e)
        d[e] = !src[e] ? zero : full ? _mm256_loadu_ps(src[e] + c) : _mm256_maskload_ps(src[e] + c, mask);
      // rows: t = B^T d
      __m256 r[16];
      for (size_t j = 0; j < 4; ++j) {
        r[0 + j] = _mm256_sub_ps(d[0 + j], d[8 + j]);
        r[4 + j] = _mm256_add_ps(d[4 + j], d[8 + j]);
        r[8 + j] = _mm256_sub_ps(d[8 + j], d[4 + j]);
        r[12 + j] = _mm256_sub_ps(d[4 + j], d[12 + j]);
      }
      // columns: v = t B
      for (size_t i = 0; i < 4; ++i) {
        const __m256* q = r + i * 4;
        float* o = v + i * 4 * vstride + c;
        const __m256 o0 = _mm256_sub_ps(q[0], q[2]), o1 = _mm256_add_ps(q[1], q[2]);
        const __m256 o2 = _mm256_sub_ps(q[2], q[1]), o3 = _mm256_sub_ps(q[1], q[3]);
        if (full) {
          _mm256_storeu_ps(o, o0);
          _mm256_storeu_ps(o + vstride, o1);
          _mm256_storeu_ps(o + 2 * vstride, o2);
          _mm256_storeu_ps(o + 3 * vstride, o3);
        } else {
          _mm256_maskstore_ps(o, mask, o0);
          _mm256_maskstore_ps(o + vstride, mask, o1);
          _mm256_maskstore_ps(o + 2 * vstride, mask, o2);
          _mm256_maskstore_ps(o + 3 * vstride, mask, o3);
        }
      }
    }
  }
}

// out tile = A^T M A + bias (+ residual), clamped; output channels [k0, k0 + kc) of the block's tiles.
// M[xi][t][j] holds channel k0 + j (row stride ldm).
void output_transform(const WinoCtx& x, size_t t0, size_t tcount, size_t k0, size_t kc, const float* Mx,
                      size_t ldm) {
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  const size_t mstride = x.tb * ldm;
  for (size_t ti = 0; ti < tcount; ++ti) {
    const size_t t = t0 + ti, n = t / (x.TH * x.TW), ty = t / x.TW % x.TH, tx = t % x.TW;
    const size_t oy = 2 * ty, ox = 2 * tx;
    const bool row1 = oy + 1 < x.OH, col1 = ox + 1 < x.OW;
    const size_t base = ((n * x.OH + oy) * x.OW + ox) * x.K + k0;
    const size_t pix[4] = {base, base + x.K, base + x.OW * x.K, base + (x.OW + 1) * x.K};
    const bool live[4] = {true, col1, row1, row1 && col1};
    const float* m = Mx + ti * ldm;
    for (size_t j = 0; j < kc; j += 8) {
      const __m256i mask = lane_mask(kc - j);
      const bool full = j + 8 <= kc;
      __m256 s[8];
      for (size_t col = 0; col < 4; ++col) {  // rows: s = A^T M
        const float* q = m + col * mstride + j;
        const __m256 m0 = _mm256_loadu_ps(q), m1 = _mm256_loadu_ps(q + 4 * mstride);
        const __m256 m2 = _mm256_loadu_ps(q + 8 * mstride), m3 = _mm256_loadu_ps(q + 12 * mstride);
        s[col] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
        s[4 + col] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
      }
      const __m256 b = full ? _mm256_loadu_ps(x.bias + k0 + j) : _mm256_maskload_ps(x.bias + k0 + j, mask);
      __m256 y[4];
      for (size_t i = 0; i < 2; ++i) {  // columns: y = s A
        const __m256* q = s + 4 * i;
        y[2 * i] = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(q[0], q[1]), q[2]), b);
        y[2 * i + 1] = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(q[1], q[2]), q[3]), b);
      }
      for (size_t e = 0; e < 4; ++e) {
        if (!live[e]) continue;
        float* o = x.out + pix[e] + j;
        __m256 v = y[e];
        if (x.residual) {
          const float* r = x.residual + pix[e] + j;
          v = _mm256_add_ps(v, full ? _mm256_loadu_ps(r) : _mm256_maskload_ps(r, mask));
        }
        v = _mm256_min_ps(vmax, _mm256_max_ps(vmin, v));
        if (full) {
          _mm256_storeu_ps(o, v);
        } else {
          _mm256_maskstore_ps(o, mask, v);
        }
      }
    }
  }
}

// One task per (tile block, output-channel group).
void wino_task(const void* vctx, size_t task) {
  const WinoCtx& x = *static_cast<const WinoCtx*>(vctx);
  const size_t ldm = round_up(x.panels_per_group * kNR, 8);
  float* V = static_cast<float*>(internal::aligned_alloc64(kXi * x.tb * (x.ldv + ldm) * sizeof(float)));
  float* M = V + kXi * x.tb * x.ldv;
  {
    const size_t blk = task / x.kgroups, kg = task % x.kgroups;
    const size_t t0 = blk * x.tb, tcount = min_sz(x.tb, x.tiles - t0);
    input_transform(x, t0, tcount, V);
    const size_t p0 = kg * x.panels_per_group, p1 = min_sz(x.panels, p0 + x.panels_per_group);
    const size_t k0 = p0 * kNR, kc = min_sz(x.K, p1 * kNR) - k0;
    const size_t panel_floats = kNR + x.C * kNR;
    for (size_t xi = 0; xi < kXi; ++xi) {
      const float* u = reinterpret_cast<const float*>(x.packed + xi * x.u_bytes) + p0 * panel_floats;
      gemm_serial(tcount, kc, x.C, V + xi * x.tb * x.ldv, x.ldv, u, M + xi * x.tb * ldm, ldm);
    }
    output_transform(x, t0, tcount, k0, kc, M, ldm);
  }
  internal::aligned_free(V);
}

void run(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
         const void* packed, const float* residual, float* out, Parallel& par) {
  WinoCtx x;
  x.N = N;
  x.H = H;
  x.W = W;
  x.OH = OH;
  x.OW = OW;
  x.C = p.group_input_channels;
  x.K = p.group_output_channels;
  x.TH = div_up(OH, 2);
  x.TW = div_up(OW, 2);
  x.tiles = N * x.TH * x.TW;
  x.pad_top = p.pad_top;
  x.pad_left = p.pad_left;
  x.in = in;
  x.packed = static_cast<const char*>(packed);
  x.u_bytes = panel_bytes(p);
  x.bias = reinterpret_cast<const float*>(x.packed + kXi * x.u_bytes);
  x.residual = residual;
  x.out = out;
  x.vmin = p.act.min;
  x.vmax = p.act.max;
  x.ldv = round_up(x.C, 8);
  x.panels = div_up(x.K, kNR);
  const size_t ldk = round_up(x.K, 8);
  // Tiles per block: V and M of a block within the scratch budget, whole row tiles, then evened out.
  const size_t fit = kScratchBytes / (kXi * (x.ldv + ldk) * sizeof(float));
  const size_t tb_max = max_sz(kMR, min_sz(kMaxTiles, fit / kMR * kMR));
  x.tblocks = div_up(x.tiles, tb_max);
  x.tb = round_up(div_up(x.tiles, x.tblocks), kMR);
  x.tblocks = div_up(x.tiles, x.tb);
  const size_t threads = internal::parallel_threads(par);
  // Fewer blocks than twice the threads: split the output channels too (each split redoes the block's cheap
  // input transform but reads only its share of U).
  x.kgroups = x.tblocks >= 2 * threads ? 1 : min_sz(x.panels, div_up(2 * threads, x.tblocks));
  x.panels_per_group = div_up(x.panels, x.kgroups);
  x.kgroups = div_up(x.panels, x.panels_per_group);
  const size_t units = x.tblocks * x.kgroups;
  if (threads > 1 && units > 1) return internal::parallel_run(par, units, wino_task, &x);
  for (size_t u = 0; u < units; ++u) wino_task(&x, u);
}

}  // namespace

// 3x3, stride 1, no dilation, one group, and enough channels on both sides that the 16 GEMMs dominate
// the transforms (measured here: narrower convs are faster as an IGEMM).
bool winograd_applies(const ConvParams& p) {
  return p.kernel_h == 3 && p.kernel_w == 3 && p.stride_h == 1 && p.stride_w == 1 && p.dilation_h == 1 &&
         p.dilation_w == 1 && p.groups == 1 && p.group_input_channels >= 16 && p.group_output_channels >= 16;
}

size_t winograd_packed_size(const ConvParams& p) {
  return kXi * panel_bytes(p) + round_up(p.group_output_channels, kNR) * sizeof(float);
}

void winograd_pack(const ConvParams& p, const float* filter_ohwi, const float* bias, void* packed) {
  const size_t C = p.group_input_channels, K = p.group_output_channels;
  float* U = static_cast<float*>(internal::aligned_alloc64(kXi * C * K * sizeof(float)));
  // U[xi][c][k] = (G g G^T)[xi] with g = filter[k][:, :][c]; computed in double, rounded once.
  for (size_t k = 0; k < K; ++k) {
    for (size_t c = 0; c < C; ++c) {
      double g[3][3], gg[4][3];
      for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 3; ++j) g[i][j] = filter_ohwi[((k * 3 + i) * 3 + j) * C + c];
      for (size_t j = 0; j < 3; ++j) {
        gg[0][j] = g[0][j];
        gg[1][j] = 0.5 * (g[0][j] + g[1][j] + g[2][j]);
        gg[2][j] = 0.5 * (g[0][j] - g[1][j] + g[2][j]);
        gg[3][j] = g[2][j];
      }
      for (size_t i = 0; i < 4; ++i) {
        const double u[4] = {gg[i][0], 0.5 * (gg[i][0] + gg[i][1] + gg[i][2]), 0.5 * (gg[i][0] - gg[i][1] + gg[i][2]),
                             gg[i][2]};
        for (size_t j = 0; j < 4; ++j) U[((i * 4 + j) * C + c) * K + k] = static_cast<float>(u[j]);
      }
    }
  }
  char* out = static_cast<char*>(packed);
  const size_t u_bytes = panel_bytes(p);
  for (size_t xi = 0; xi < kXi; ++xi) gemm_pack(C, K, U + xi * C * K, false, nullptr, out + xi * u_bytes);
  internal::aligned_free(U);
  float* b = reinterpret_cast<float*>(out + kXi * u_bytes);
  for (size_t k = 0; k < round_up(K, kNR); ++k) b[k] = bias && k < K ? bias[k] : 0.f;
}

void winograd_conv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                     const void* packed, const float* residual, float* out, Parallel& par) {
  if (N == 0 || OH == 0 || OW == 0) return;
  run(p, N, H, W, in, OH, OW, packed, residual, out, par);
}

}  // namespace avx2
}  // namespace webxnn
