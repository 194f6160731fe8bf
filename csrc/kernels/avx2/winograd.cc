// AVX2+FMA 3x3 stride-1 convolution by Winograd F(4x4, 3x3) (compiled with -mavx2 -mfma -mf16c).
//
// Why: a 3x3 conv already runs at ~96 % of the FMA peak as an IGEMM, so the only way past that is fewer
// multiplies. F(4x4, 3x3) computes each 4x4 output tile from a 6x6 input tile with 36 multiplies per
// (input channel, output channel) instead of 144: 4x fewer, and the 36 products of all tiles are 36 plain
// GEMMs [tiles x C] x [C x K] that run on gemm.cc's microkernel. Measured here (1 thread): 56x56x64->64
// 2.05 -> 0.91 ms, 28x28x128->128 2.07 -> 0.67 ms, 14x14x256->256 2.08 -> 0.87 ms.
// Costs: the packed filter is 4x the direct one (36 vs 9 values per channel pair), and the rounding error is
// ~10x the direct sum's: ~4e-5 of the output scale on 576-term sums, i.e. ~340 ULP of that scale where WPT's
// conv2d budget is 2 ULP per multiply-add (1152 here). Tests compare with numpy in float64. Small maps (fewer than 100 input pixels, e.g. 7x7) stay on the IGEMM: there the tiles would
// be mostly padding and streaming the 4x weights would cost more than the multiplies saved.
//
//   U = G g G^T (filter, at pack time)   V = B^T d B (input tile)   Y = A^T (U .* V) A (output tile)
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
//
// Packed layout: for each of the 36 transform positions xi, U_xi [C x K] in gemm.cc's panel format (zero
// bias in the panels), then the bias [K] (added by the output transform, before the residual and the clamp).
//
// Work: the (n, tile row, tile col) tiles are cut into blocks sized so a block's transformed input V
// [36][tb][C] and GEMM output M [36][tb][K] stay near L2; per block: input transform, 36 GEMMs, output
// transform. With several threads: small U, two blocks per thread; otherwise, when there are fewer than two
// blocks per thread, the output channels are split as well (each thread reading its share of U). Every
// output is computed the same way for any blocking and so for any thread count: its tile's transforms, and
// a GEMM row whose sum runs over C in order.
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/simd.h"
#include "kernels/avx2/vmath.h"
#include "kernels/internal.h"

namespace webxnn {
namespace WEBXNN_AVX2_NS {
namespace {

constexpr size_t kA = 6;  // input tile side (alpha)
constexpr size_t kOut = 4;  // output tile side
constexpr size_t kXi = kA * kA;  // transform positions
constexpr size_t kMaxTiles = 120;
constexpr size_t kScratchBytes = 1536 * 1024;

size_t panel_bytes(const ConvParams& p) {
  return gemm_packed_size(p.group_input_channels, p.group_output_channels);
}

struct WinoCtx {
  size_t N, H, W, OH, OW, C, K, TH, TW, tiles;
  size_t tb, tblocks, kgroups, panels, panels_per_group, ldv;
  size_t pad_top, pad_left;
  const float* in;
  const char* packed;  // kXi gemm-packed U matrices, then the bias
  size_t u_bytes;  // bytes of one packed U
  const float* bias;
  const float* residual;
  float* out;
  float vmin, vmax;
  PostOp post;
  uint64_t call;  // internal::unique_call_id() of this call: a thread's V from an earlier call is stale
};

// Floats between the 36 matrices of V (rows of ldv) and of M (rows of ldm): one cache line more than a block,
// so they do not all start on the same L1 sets when tb x ld is a multiple of 4 KB (14x14x256: 16 tiles x 256
// channels; measured 8 % slower without).
size_t v_stride(const WinoCtx& x) { return x.tb * x.ldv + 16; }
size_t m_stride(const WinoCtx& x, size_t ldm) { return x.tb * ldm + 16; }

// The 1-D transforms (each applied along columns, then along rows).
// d (6 inputs) -> B^T d
inline void in_1d(const __m256* d, __m256* t) {
  const __m256 four = _mm256_set1_ps(4.f), five = _mm256_set1_ps(-5.f), two = _mm256_set1_ps(2.f);
  const __m256 s12 = _mm256_add_ps(d[1], d[2]), s34 = _mm256_add_ps(d[3], d[4]);
  const __m256 d12 = _mm256_sub_ps(d[1], d[2]), d43 = _mm256_sub_ps(d[4], d[3]);
  const __m256 d31 = _mm256_sub_ps(d[3], d[1]), d42 = _mm256_sub_ps(d[4], d[2]);
  t[0] = _mm256_fmadd_ps(five, d[2], _mm256_fmadd_ps(four, d[0], d[4]));
  t[1] = _mm256_fnmadd_ps(four, s12, s34);
  t[2] = _mm256_fmadd_ps(four, d12, d43);
  t[3] = _mm256_fmadd_ps(two, d31, d42);
  t[4] = _mm256_fnmadd_ps(two, d31, d42);
  t[5] = _mm256_fmadd_ps(five, d[3], _mm256_fmadd_ps(four, d[1], d[5]));
}

// m (6 products) -> A^T m (4 outputs)
inline void out_1d(const __m256* m, __m256* y) {
  const __m256 a = _mm256_add_ps(m[1], m[2]), b = _mm256_sub_ps(m[1], m[2]);
  const __m256 c = _mm256_add_ps(m[3], m[4]), d = _mm256_sub_ps(m[3], m[4]);
  y[0] = _mm256_add_ps(_mm256_add_ps(m[0], a), c);
  y[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.f), d, b);
  y[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.f), c, a);
  y[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.f), d, b), m[5]);
}

// V[xi][t][c] = (B^T d B)[xi] for the block's tiles, 8 channels at a time (zero outside the input).
void input_transform(const WinoCtx& x, size_t t0, size_t tcount, float* V) {
  const __m256 zero = _mm256_setzero_ps();
  const size_t vstride = v_stride(x);
  for (size_t ti = 0; ti < tcount; ++ti) {
    const size_t t = t0 + ti, n = t / (x.TH * x.TW), ty = t / x.TW % x.TH, tx = t % x.TW;
    const float* src[kA * kA];
    const ptrdiff_t iy0 = static_cast<ptrdiff_t>(kOut * ty) - static_cast<ptrdiff_t>(x.pad_top);
    const ptrdiff_t ix0 = static_cast<ptrdiff_t>(kOut * tx) - static_cast<ptrdiff_t>(x.pad_left);
    for (size_t i = 0; i < kA; ++i) {
      const ptrdiff_t iy = iy0 + static_cast<ptrdiff_t>(i);
      for (size_t j = 0; j < kA; ++j) {
        const ptrdiff_t ix = ix0 + static_cast<ptrdiff_t>(j);
        const bool ok =
            iy >= 0 && iy < static_cast<ptrdiff_t>(x.H) && ix >= 0 && ix < static_cast<ptrdiff_t>(x.W);
        src[i * kA + j] =
            ok ? x.in + ((n * x.H + static_cast<size_t>(iy)) * x.W + static_cast<size_t>(ix)) * x.C : nullptr;
      }
    }
    float* v = V + ti * x.ldv;
    for (size_t c = 0; c < x.C; c += 8) {
      const __m256i mask = lane_mask(x.C - c);
      const bool full = c + 8 <= x.C;
      __m256 tmp[kA * kA];  // B^T d, row-major
      for (size_t j = 0; j < kA; ++j) {  // along each column of the tile
        __m256 d[kA], col[kA];
        for (size_t i = 0; i < kA; ++i) {
          const float* p = src[i * kA + j];
          d[i] = !p ? zero : full ? _mm256_loadu_ps(p + c) : _mm256_maskload_ps(p + c, mask);
        }
        in_1d(d, col);
        for (size_t i = 0; i < kA; ++i) tmp[i * kA + j] = col[i];
      }
      for (size_t i = 0; i < kA; ++i) {  // then along each row
        __m256 row[kA];
        in_1d(tmp + i * kA, row);
        float* o = v + i * kA * vstride + c;
        for (size_t j = 0; j < kA; ++j) {
          if (full) {
            _mm256_storeu_ps(o + j * vstride, row[j]);
          } else {
            store_lanes(o + j * vstride, mask, row[j]);
          }
        }
      }
    }
  }
}

// out tile = A^T M A + bias (+ residual), clamped; output channels [k0, k0 + kc) of the block's tiles.
// M[xi][t][j] holds channel k0 + j (row stride ldm).
template <PostOp kPost>
void output_transform(const WinoCtx& x, size_t t0, size_t tcount, size_t k0, size_t kc, const float* Mx,
                      size_t ldm) {
  const auto post = [](__m256 v) { return post8<kPost>(v); };
  const __m256 vmin = _mm256_set1_ps(x.vmin), vmax = _mm256_set1_ps(x.vmax);
  const size_t mstride = m_stride(x, ldm);
  for (size_t ti = 0; ti < tcount; ++ti) {
    const size_t t = t0 + ti, n = t / (x.TH * x.TW), ty = t / x.TW % x.TH, tx = t % x.TW;
    const size_t oy = kOut * ty, ox = kOut * tx;
    const size_t rows = min_sz(kOut, x.OH - oy), cols = min_sz(kOut, x.OW - ox);
    const size_t base = ((n * x.OH + oy) * x.OW + ox) * x.K + k0;
    const float* m = Mx + ti * ldm;
    for (size_t j = 0; j < kc; j += 8) {
      const __m256i mask = lane_mask(kc - j);
      const bool full = j + 8 <= kc;
      __m256 tmp[kOut * kA];  // A^T M, row-major
      for (size_t col = 0; col < kA; ++col) {
        __m256 mv[kA], y[kOut];
        for (size_t i = 0; i < kA; ++i) mv[i] = _mm256_loadu_ps(m + (i * kA + col) * mstride + j);
        out_1d(mv, y);
        for (size_t i = 0; i < kOut; ++i) tmp[i * kA + col] = y[i];
      }
      const __m256 b = full ? _mm256_loadu_ps(x.bias + k0 + j) : _mm256_maskload_ps(x.bias + k0 + j, mask);
      for (size_t r = 0; r < rows; ++r) {
        __m256 y[kOut];
        out_1d(tmp + r * kA, y);
        for (size_t q = 0; q < cols; ++q) {
          const size_t off = base + (r * x.OW + q) * x.K + j;
          __m256 v = _mm256_add_ps(y[q], b);
          if (x.residual)
            v = _mm256_add_ps(
                v, full ? _mm256_loadu_ps(x.residual + off) : _mm256_maskload_ps(x.residual + off, mask));
          v = _mm256_min_ps(vmax, _mm256_max_ps(vmin, v));
          v = post(v);
          if (full) {
            _mm256_storeu_ps(x.out + off, v);
          } else {
            store_lanes(x.out + off, mask, v);
          }
        }
      }
    }
  }
}

// One task per (tile block, output-channel group).
void wino_task(const void* vctx, size_t task) {
  const WinoCtx& x = *static_cast<const WinoCtx*>(vctx);
  const size_t ldm = round_up(x.panels_per_group * kNR, 8);
  float* V = static_cast<float*>(internal::scratch(internal::Scratch::kWinogradV,
                                                   kXi * (v_stride(x) + m_stride(x, ldm)) * sizeof(float)));
  float* M = V + kXi * v_stride(x);
  // Channel groups outer: a thread's consecutive units share a channel group, so it reads only its share of U
  // (and blocks of unequal size cost every group the same).
  const size_t kg = task / x.tblocks, blk = task % x.tblocks;
  const size_t t0 = blk * x.tb, tcount = min_sz(x.tb, x.tiles - t0);
  // A thread's consecutive tasks of one block (several channel groups of one block: 14x14x256 runs 4 groups
  // of its 16 tiles on 2 threads) transform the block once. Sharing one V between the threads instead was
  // slower: half of it then crosses from the other core's cache (14x14x256 at 2 threads 413 -> 499 us).
  if (!internal::scratch_holds(internal::Scratch::kWinogradKey, x.call, blk))
    input_transform(x, t0, tcount, V);
  const size_t p0 = x.panels * kg / x.kgroups, p1 = x.panels * (kg + 1) / x.kgroups;
  const size_t k0 = p0 * kNR, kc = min_sz(x.K, p1 * kNR) - k0;
  const size_t panel_floats = kNR + x.C * kNR;
  // Each GEMM prefetches the first weights of the next one: U comes from DRAM when the model's weights exceed
  // L3 (ResNet-50's 14x14x256 convs, per-step minimums: 1 thread 900 -> 855 us, 2 threads 520 -> 455 us).
  // Prefetching the thread's next task's first weights after the last GEMM as well measured no better.
  for (size_t xi = 0; xi < kXi; ++xi) {
    const float* u = reinterpret_cast<const float*>(x.packed + xi * x.u_bytes) + p0 * panel_floats;
    const float* u_next = xi + 1 < kXi ? u + x.u_bytes / sizeof(float) : nullptr;
    gemm_serial(tcount, kc, x.C, V + xi * v_stride(x), x.ldv, u, M + xi * m_stride(x, ldm), ldm, Activation(),
                nullptr, 0, u_next);
  }
  switch (x.post) {  // the post-op per vector, as each output vector is stored
    case PostOp::kHardswish: output_transform<PostOp::kHardswish>(x, t0, tcount, k0, kc, M, ldm); break;
    case PostOp::kSigmoid: output_transform<PostOp::kSigmoid>(x, t0, tcount, k0, kc, M, ldm); break;
    case PostOp::kGelu: output_transform<PostOp::kGelu>(x, t0, tcount, k0, kc, M, ldm); break;
    case PostOp::kNone: output_transform<PostOp::kNone>(x, t0, tcount, k0, kc, M, ldm); break;
  }
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
  x.TH = div_up(OH, kOut);
  x.TW = div_up(OW, kOut);
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
  x.post = p.act.post;
  x.ldv = round_up(x.C, 8);
  x.panels = div_up(x.K, kNR);
  const size_t ldk = round_up(x.K, 8);
  // Tiles per block: V and M of a block within the scratch budget.
  const size_t fit = kScratchBytes / (kXi * (x.ldv + ldk) * sizeof(float));
  const size_t tb_max = max_sz(kMR, min_sz(kMaxTiles, fit / kMR * kMR));
  x.tblocks = div_up(x.tiles, tb_max);
  const size_t threads = internal::parallel_threads(par);
  const double u_bytes = static_cast<double>(kXi) * static_cast<double>(x.C) * static_cast<double>(x.K) * 4.0;
  if (threads > 1 && u_bytes <= 1024.0 * 1024.0 && x.tiles >= 2 * threads * 2 * kMR) {
    // Two blocks per thread, of equal size, when U is small enough to be re-read per block from L2 and the
    // blocks keep two MR tiles (56x56x64: 4 blocks of 49 tiles; as 3 blocks split by channels, two blocks'
    // input transforms were done twice, and 54 + 54 + 54 + 34 tiles would leave one thread idle).
    x.tblocks = round_up(max_sz(x.tblocks, 2 * threads), threads);
    x.tb = div_up(x.tiles, x.tblocks);
  } else {
    // Whole MR tiles per block: the GEMMs' rows then run as full tiles, over which they spread the prefetch of
    // the next weight panel (28x28x128 as 25 + 24 tiles ran 5-10 % slower in ResNet-50, its U read from DRAM).
    // With U from DRAM (14x14x256: 9 MB) the threads split the channels instead, below.
    if (threads > 1 && x.tblocks >= 2 * threads) x.tblocks = round_up(x.tblocks, threads);
    x.tb = round_up(div_up(x.tiles, x.tblocks), kMR);
  }
  x.tblocks = div_up(x.tiles, x.tb);
  // Fewer blocks than twice the threads: split the output channels too (each split redoes the blocks' input
  // transforms, unless the same thread ran the block's previous group, but reads only its share of U). Not
  // more than that: at four units per thread, ResNet-50's 3x3 convs ran 15-20 % slower (the transform of
  // 64-256 channels is not that cheap next to the 36 GEMMs: 25 us for 14x14x256). One thread runs whole
  // blocks (14x14x256 split in two groups did the transform twice: 770 -> 745 us without).
  x.kgroups = threads == 1 || x.tblocks >= 2 * threads ? 1 : min_sz(x.panels, div_up(2 * threads, x.tblocks));
  x.panels_per_group = div_up(x.panels, x.kgroups);  // the widest group (groups differ by one panel at most)
  const size_t units = x.tblocks * x.kgroups;
  x.call = internal::unique_call_id();
  if (threads > 1 && units > 1) return internal::parallel_run(par, units, wino_task, &x);
  for (size_t u = 0; u < units; ++u) wino_task(&x, u);
}

}  // namespace

// 3x3, stride 1, no dilation, one group, and enough channels on both sides that the 36 GEMMs dominate
// the transforms (measured here: narrower convs are faster as an IGEMM). The transforms round, so
// python/webxnn/onnx/ops_qlinear.py's _DIRECT_CHANNELS (exact integer convs in float32) stays below the
// 16-channel threshold: change both together (tests/test_onnx_node_gaps.py pins it).
bool winograd_applies(const ConvParams& p) {
  return !p.input_nchw && p.kernel_h == 3 && p.kernel_w == 3 && p.stride_h == 1 && p.stride_w == 1 &&
         p.dilation_h == 1 && p.dilation_w == 1 && p.groups == 1 && p.group_input_channels >= 16 &&
         p.group_output_channels >= 16 && (p.input_h == 0 || size_t{p.input_h} * p.input_w >= 100);
}

size_t winograd_packed_size(const ConvParams& p) {
  return kXi * panel_bytes(p) + round_up(p.group_output_channels, kNR) * sizeof(float);
}

void winograd_pack(const ConvParams& p, const float* filter_ohwi, const float* bias, void* packed) {
  const size_t C = p.group_input_channels, K = p.group_output_channels;
  float* U = static_cast<float*>(internal::aligned_alloc64(kXi * C * K * sizeof(float)));
  // U[xi] = (G g G^T)[xi] with g = filter[k][:, :][c], 8 input channels per vector. U is laid out [xi][k][c]
  // (an [N, K] operand for gemm_pack), so the filter reads and the U writes both run along c.
  auto g_1d = [](const __m256* g, size_t stride, __m256* u) {  // G g for one column/row of 3
    const __m256 g0 = g[0], g1 = g[stride], g2 = g[2 * stride];
    const __m256 sixth = _mm256_set1_ps(1.f / 6), twelfth = _mm256_set1_ps(1.f / 12);
    const __m256 h = _mm256_mul_ps(_mm256_add_ps(g0, g2), sixth), q = _mm256_mul_ps(g1, sixth);
    const __m256 a = _mm256_fmadd_ps(g0, _mm256_set1_ps(1.f / 24), _mm256_mul_ps(g2, sixth));
    const __m256 b = _mm256_mul_ps(g1, twelfth);
    u[0] = _mm256_mul_ps(g0, _mm256_set1_ps(0.25f));
    u[1] = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_add_ps(h, q));
    u[2] = _mm256_sub_ps(q, h);
    u[3] = _mm256_add_ps(a, b);
    u[4] = _mm256_sub_ps(a, b);
    u[5] = g2;
  };
  for (size_t k = 0; k < K; ++k) {
    for (size_t c = 0; c < C; c += 8) {
      const __m256i mask = lane_mask(C - c);
      __m256 g[9], gg[kA * 3], u[kA * kA];
      for (size_t e = 0; e < 9; ++e) g[e] = _mm256_maskload_ps(filter_ohwi + (k * 9 + e) * C + c, mask);
      for (size_t j = 0; j < 3; ++j) {  // columns: gg[:, j] = G g[:, j]
        __m256 col[kA];
        g_1d(g + j, 3, col);
        for (size_t i = 0; i < kA; ++i) gg[i * 3 + j] = col[i];
      }
      for (size_t i = 0; i < kA; ++i) g_1d(gg + i * 3, 1, u + i * kA);  // rows: (G g) G^T
      for (size_t xi = 0; xi < kXi; ++xi) store_lanes(U + (xi * K + k) * C + c, mask, u[xi]);
    }
  }
  char* out = static_cast<char*>(packed);
  const size_t u_bytes = panel_bytes(p);
  for (size_t xi = 0; xi < kXi; ++xi) gemm_pack(C, K, U + xi * C * K, true, nullptr, out + xi * u_bytes);
  internal::aligned_free(U);
  float* b = reinterpret_cast<float*>(out + kXi * u_bytes);
  for (size_t k = 0; k < round_up(K, kNR); ++k) b[k] = bias && k < K ? bias[k] : 0.f;
}

void winograd_conv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                     const void* packed, const float* residual, float* out, Parallel& par) {
  if (N == 0 || OH == 0 || OW == 0) return;
  run(p, N, H, W, in, OH, OW, packed, residual, out, par);
}

}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
