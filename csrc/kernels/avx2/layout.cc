// AVX2 image layout change at a graph's boundary: NCHW <-> NHWC of a 3-channel (RGB) float image, 8 pixels
// per step (compiled with -mavx2 -mfma). Other channel counts are left to the portable few-channel loop.
//
// Interleaving planes a, b, c (8 pixels each) into a0 b0 c0 a1 ... c7 (3 vectors): each plane is permuted so
// that its lane i holds the element that output vector j needs at lane i, for every j at once
// (a -> a0 a3 a6 a1 a4 a7 a2 a5, b -> b5 b0 b3 b6 b1 b4 b7 b2, c -> c2 c5 c0 c3 c6 c1 c4 c7), then each output
// is two blends of the three. The reverse blends first and permutes after. The scalar loop it replaces moved
// one float per load/store pair: ~60 us for a 224x224 input, 3x this.
#include <immintrin.h>

#include "kernels/avx2/avx2.h"
#include "kernels/avx2/simd.h"
#include "kernels/internal.h"

namespace webxnn {
namespace avx2 {
namespace {

struct LayoutCtx {
  size_t pixels, chunk, chunks;
  bool to_planar;
  const float* x;
  float* y;
};

// An output vector of interleave3: lanes from ta, except those in kFromB (from tb) and kFromC (from tc).
// Template arguments, not array lookups: the blend's mask must be an immediate even in unoptimized builds.
template <int kFromB, int kFromC>
inline __m256 pick(__m256 ta, __m256 tb, __m256 tc) {
  return _mm256_blend_ps(_mm256_blend_ps(ta, tb, kFromB), tc, kFromC);
}

void interleave3(const float* a, const float* b, const float* c, float* out, size_t n) {
  const __m256i pa = _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5);
  const __m256i pb = _mm256_setr_epi32(5, 0, 3, 6, 1, 4, 7, 2);
  const __m256i pc = _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7);
  size_t i = 0;
  for (; i + 8 <= n; i += 8, out += 24) {
    const __m256 ta = _mm256_permutevar8x32_ps(_mm256_loadu_ps(a + i), pa);
    const __m256 tb = _mm256_permutevar8x32_ps(_mm256_loadu_ps(b + i), pb);
    const __m256 tc = _mm256_permutevar8x32_ps(_mm256_loadu_ps(c + i), pc);
    _mm256_storeu_ps(out, pick<0x92, 0x24>(ta, tb, tc));  // b: lanes 1 4 7, c: 2 5
    _mm256_storeu_ps(out + 8, pick<0x24, 0x49>(ta, tb, tc));  // b: 2 5, c: 0 3 6
    _mm256_storeu_ps(out + 16, pick<0x49, 0x92>(ta, tb, tc));  // b: 0 3 6, c: 1 4 7
  }
  for (; i < n; ++i, out += 3) {
    out[0] = a[i];
    out[1] = b[i];
    out[2] = c[i];
  }
}

void deinterleave3(const float* in, float* a, float* b, float* c, size_t n) {
  // The inverse permutations of interleave3's.
  const __m256i ia = _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5);
  const __m256i ib = _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6);
  const __m256i ic = _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7);
  size_t i = 0;
  for (; i + 8 <= n; i += 8, in += 24) {
    const __m256 v0 = _mm256_loadu_ps(in), v1 = _mm256_loadu_ps(in + 8), v2 = _mm256_loadu_ps(in + 16);
    // Lane l of plane p's permuted vector comes from output vector j where p's lanes of j include l.
    const __m256 ta =
        _mm256_blend_ps(_mm256_blend_ps(v0, v1, 0x92), v2, 0x24);  // a: v0 0 3 6, v1 1 4 7, v2 2 5
    const __m256 tb =
        _mm256_blend_ps(_mm256_blend_ps(v0, v1, 0x24), v2, 0x49);  // b: v0 1 4 7, v1 2 5, v2 0 3 6
    const __m256 tc =
        _mm256_blend_ps(_mm256_blend_ps(v0, v1, 0x49), v2, 0x92);  // c: v0 2 5, v1 0 3 6, v2 1 4 7
    _mm256_storeu_ps(a + i, _mm256_permutevar8x32_ps(ta, ia));
    _mm256_storeu_ps(b + i, _mm256_permutevar8x32_ps(tb, ib));
    _mm256_storeu_ps(c + i, _mm256_permutevar8x32_ps(tc, ic));
  }
  for (; i < n; ++i, in += 3) {
    a[i] = in[0];
    b[i] = in[1];
    c[i] = in[2];
  }
}

void layout_task(const void* vctx, size_t task) {
  const LayoutCtx& x = *static_cast<const LayoutCtx*>(vctx);
  const size_t n = task / x.chunks, j0 = task % x.chunks * x.chunk, j1 = min_sz(x.pixels, j0 + x.chunk);
  const size_t plane = x.pixels;
  if (x.to_planar) {
    const float* in = x.x + n * 3 * plane + j0 * 3;
    float* out = x.y + n * 3 * plane + j0;
    return deinterleave3(in, out, out + plane, out + 2 * plane, j1 - j0);
  }
  const float* in = x.x + n * 3 * plane + j0;
  interleave3(in, in + plane, in + 2 * plane, x.y + n * 3 * plane + j0 * 3, j1 - j0);
}

}  // namespace

bool image_layout_f32(size_t batch, size_t channels, size_t pixels, bool to_planar, const float* x, float* y,
                      Parallel& par) {
  if (channels != 3) return false;
  if (batch == 0 || pixels == 0) return true;
  LayoutCtx c;
  c.pixels = pixels;
  // Four tasks per thread of whole 8-pixel steps, at least 2048 pixels (24 KB each way) each.
  const size_t threads = internal::parallel_threads(par);
  c.chunk = threads > 1 ? max_sz(2048, round_up(div_up(pixels, 4 * threads), 8)) : pixels;
  c.chunks = div_up(pixels, c.chunk);
  c.to_planar = to_planar;
  c.x = x;
  c.y = y;
  internal::parallel_run(par, batch * c.chunks, layout_task, &c);
  return true;
}

}  // namespace avx2
}  // namespace webxnn
