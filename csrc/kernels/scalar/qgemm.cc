// Scalar int8 GEMM and IGEMM convolution (table.def's qgemm, qconv2d): the reference the AVX2 kernels are
// tested against, on the same packed panels.
#include <cstring>
#include <vector>

#include "kernels/qgemm_layout.h"
#include "kernels/scalar/common.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace scalar {

void qgemm(size_t M, size_t N, size_t K, const void* A, size_t lda, const void* packed, void* C, size_t ldc,
           int32_t out_min, int32_t out_max, Parallel& par) {
  if (M == 0 || N == 0) return;
  const QGemmRun run = qgemm_run_params(packed, K, out_min, out_max);
  const QGemmHeader& h = run.h;
  const size_t pb = run.panel_bytes;
  const bool a_u8 = h.a_type == QType::kU8;
  const float flo = run.lo, fhi = run.hi;
  const uint8_t* a_base = static_cast<const uint8_t*>(A);
  uint8_t* c_base = static_cast<uint8_t*>(C);
  const size_t tasks = pick_tasks(par, M, static_cast<double>(N) * (K + 1));
  par.run(tasks, [&](size_t task) {
    size_t m0, m1;
    chunk_range(M, tasks, task, &m0, &m1);
    for (size_t m = m0; m < m1; ++m) {
      const uint8_t* a = a_base + m * lda;
      for (size_t n = 0; n < N; ++n) {
        float scale;
        const uint32_t acc = qgemm_column_sum(packed, pb, n, a, K, a_u8, h.a_shift, &scale);
        const int32_t y = requantize(static_cast<int32_t>(acc), scale, flo, fhi, h.out_zero_point);
        c_base[m * ldc + n] = static_cast<uint8_t>(y);  // in range: lo <= y <= hi (or hi when lo > hi)
      }
    }
  });
}

// The residual entries, as their contract says: the product, then qadd of each output row with the residual's
// (out == a: qadd's aliasing contract allows it) -- the pair run apart, on the same rows.
void qgemm_residual(size_t M, size_t N, size_t K, const void* A, size_t lda, const void* packed,
                    const int8_t* R, size_t ldr, void* C, size_t ldc, int32_t out_min, int32_t out_max,
                    const QElemParams& add, Parallel& par) {
  qgemm(M, N, K, A, lda, packed, C, ldc, out_min, out_max, par);
  const BinaryShape row = flat_binary_shape(N);
  int8_t* c = static_cast<int8_t*>(C);
  for (size_t m = 0; m < M && N; ++m) qadd(row, c + m * ldc, R + m * ldr, c + m * ldc, add, par);
}

void qconv2d_residual(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
                      const void* packed, const int8_t* residual, void* out, int32_t out_min, int32_t out_max,
                      const QElemParams& add, Parallel& par) {
  qconv2d(p, N, H, W, in, OH, OW, packed, out, out_min, out_max, par);
  const size_t n = N * OH * OW * p.groups * p.group_output_channels;
  int8_t* y = static_cast<int8_t*>(out);
  if (n) qadd(flat_binary_shape(n), y, residual, y, add, par);
}

// The reference reads NHWC only: the runtime transposes an NCHW image first.
bool qconv2d_reads_nchw(const ConvParams&) { return false; }

// The reference IGEMM, per group: each output pixel's taps gathered into one row (im2col, padding taps as the
// zero-point row the packing stored), then qgemm over those rows into the group's output columns.
void qconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
             const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par) {
  const size_t K = qconv2d_packed_k(p), OC = p.group_output_channels, C = p.group_input_channels;
  const size_t G = p.groups, in_stride = G * C;
  const size_t kh = p.kernel_h, kw = p.kernel_w, M = N * OH * OW;
  const size_t row_bytes = kh ? K / kh : 0, tap_c = qconv2d_taps(p).tap_c;  // qgemm_layout.h's (ky, kx) place
  if (M == 0 || OC == 0) return;
  const uint8_t* x = static_cast<const uint8_t*>(in);
  std::vector<uint8_t> rows(M * K, 0);
  for (size_t g = 0; g < G; ++g) {
    const uint8_t* gpacked = static_cast<const uint8_t*>(packed) + g * qconv2d_group_bytes(p);
    const uint8_t* zero_row = gpacked + qgemm_layout_bytes(K, OC);
    for (size_t m = 0; m < M; ++m) {
      const size_t n = m / (OH * OW), oy = m % (OH * OW) / OW, ox = m % OW;
      for (size_t t = 0; t < kh * kw; ++t) {
        const size_t ky = t / kw, kx = t % kw;
        const long iy = static_cast<long>(oy * p.stride_h + ky * p.dilation_h) - static_cast<long>(p.pad_top);
        const long ix =
            static_cast<long>(ox * p.stride_w + kx * p.dilation_w) - static_cast<long>(p.pad_left);
        const bool inside = iy >= 0 && ix >= 0 && iy < static_cast<long>(H) && ix < static_cast<long>(W);
        const uint8_t* src =
            inside ? x + ((n * H + static_cast<size_t>(iy)) * W + static_cast<size_t>(ix)) * in_stride + g * C
                   : zero_row;
        std::memcpy(&rows[m * K + ky * row_bytes + kx * tap_c], src, C);
      }
    }
    qgemm(M, OC, K, rows.data(), K, gpacked, static_cast<uint8_t*>(out) + g * OC, G * OC, out_min, out_max,
          par);
  }
}

}  // namespace scalar
}  // namespace webxnn
