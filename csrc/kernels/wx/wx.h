// Reference kernels for the webxnn (WX*) nodes: straightforward loops typed by templates over the element
// type, parallel over outer work where it pays. Kernels know tensors (element type, dims, dense row-major
// data) and parameters, never graphs. Every index they read is clamped or checked here, so a kernel never
// reads or writes outside the tensors whose dims it was given (the runtime verified dims and parameters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/parallel.h"

namespace webxnn {
namespace wx {

// Element types of WX tensors.
enum class ET : uint8_t { kF32, kF16, kI8, kU8, kI32, kU32, kI64, kU64 };

size_t et_size(ET t);
bool et_is_float(ET t);
const char* et_name(ET t);

using Dims = std::vector<size_t>;

// ---- fp16 (IEEE binary16), bit-exact: round to nearest even, subnormals, inf and nan kept ----
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

// Any element type to any other: floats to integers truncate toward zero and saturate (nan -> 0),
// integers to integers wrap (two's complement), to fp16 rounds to nearest even.
void convert(ET in, ET out, size_t n, const void* x, void* y, Parallel& par);
// Writes v as one element of type t (floats round, integers truncate and saturate, nan -> 0).
void fill_value(ET t, double v, void* out);

// ---- element-wise (op codes: the schema's WXUnaryOp / WXBinaryOp values) ----
void unary(uint16_t op, double alpha, double beta, ET in, ET out, size_t n, const void* x, void* y,
           Parallel& par);
// Numpy broadcasting of a and b (right-aligned) into o. Comparisons and logical ops write uint8 0/1.
void binary(uint16_t op, ET in, ET out, const Dims& a, const Dims& b, const Dims& o, const void* pa,
            const void* pb, void* py, Parallel& par);
// out = cond ? t : f, all three broadcast to o; cond is uint8 (non-zero = true).
void where(size_t esize, const Dims& c, const Dims& t, const Dims& f, const Dims& o, const uint8_t* pc,
           const void* pt, const void* pf, void* py, Parallel& par);
// Broadcast x to o.
void expand(size_t esize, const Dims& x, const Dims& o, const void* px, void* py, Parallel& par);

// ---- reductions (op codes: WXReduceOp). `reduced[d]` marks reduced dims of x; out is dense over the kept
// dims (keep_dims only changes the declared shape). arg_max/arg_min write `out` (an integer type). ----
void reduce(uint16_t op, ET in, ET out, const Dims& x, const std::vector<bool>& reduced, const void* px,
            void* py, Parallel& par);
// (x - mean) / sqrt(var + eps) over the reduced dims, then * scale + bias (each optional, broadcast to x).
void normalize(ET t, const Dims& x, const std::vector<bool>& reduced, float eps, const void* scale,
               const Dims& scale_dims, const void* bias, const Dims& bias_dims, const void* px, void* py,
               Parallel& par);
void cumulative_sum(ET t, const Dims& x, size_t axis, bool exclusive, bool reversed, const void* px, void* py,
                    Parallel& par);

// ---- indexing. Indices are any integer type; negative counts from the end; out of range is clamped. ----
void gather(size_t esize, const Dims& x, size_t axis, ET it, const Dims& idx, const void* px, const void* pi,
            void* py, Parallel& par);
void gather_elements(size_t esize, const Dims& x, size_t axis, ET it, const Dims& idx, const void* px,
                     const void* pi, void* py, Parallel& par);
void gather_nd(size_t esize, const Dims& x, ET it, const Dims& idx, const void* px, const void* pi, void* py,
               Parallel& par);
void scatter_elements(size_t esize, const Dims& x, size_t axis, ET it, const Dims& idx, const void* px,
                      const void* pi, const void* pu, void* py);
void scatter_nd(size_t esize, const Dims& x, ET it, const Dims& idx, const void* px, const void* pi,
                const void* pu, void* py);

// ---- layout ----
// Batched 2-D transpose where one side is a handful of channels: for each of `batch` matrices,
// y[j][i] = x[i][j] with x [rows, cols] (NCHW -> NHWC: rows = C, cols = H*W) or, when `to_rows`, the inverse
// y[i][j] = x[j][i] (NHWC -> NCHW). esize 1, 2, 4 or 8; rows <= 8. Returns false (writing nothing) otherwise.
bool transpose_few_channels(size_t esize, size_t batch, size_t rows, size_t cols, bool to_rows, const void* x,
                            void* y, Parallel& par);
void tile(size_t esize, const Dims& x, const Dims& o, const void* px, void* py, Parallel& par);
void reverse(size_t esize, const Dims& x, const std::vector<bool>& axes, const void* px, void* py,
             Parallel& par);
// Keeps the upper (j - i >= diagonal) or lower (j - i <= diagonal) triangle of the last two dims.
void triangular(size_t esize, const Dims& x, bool upper, int64_t diagonal, const void* px, void* py,
                Parallel& par);
// mode: 0 constant (fill = esize bytes), 1 edge, 2 reflection, 3 symmetric.
void pad(size_t esize, const Dims& x, const std::vector<uint32_t>& pre, const Dims& o, int mode,
         const void* fill, const void* px, void* py, Parallel& par);
void strided_slice(size_t esize, const Dims& x, const std::vector<uint32_t>& starts,
                   const std::vector<uint32_t>& strides, const Dims& o, const void* px, void* py,
                   Parallel& par);

// ---- spatial ----
// WebNN resample2d over x's dims axes[0], axes[1] (output sizes from o); x_in = (x_out + 0.5) / scale - 0.5.
void resample2d(ET t, int mode, const Dims& x, const Dims& o, const size_t axes[2], const float scales[2],
                const void* px, void* py, Parallel& par);
// XNNPACK StaticResizeBilinear2D, NHWC: half-pixel, align corners (flag 0x8) or legacy (0x4). Integer types
// truncate the interpolated value, or with round_ints (qint8 with equal in and out quantization) round it half
// to even; both saturate.
void resize_bilinear_nhwc(ET t, uint32_t flags, const Dims& x, const Dims& o, const void* px, void* py,
                          Parallel& par, bool round_ints = false);
// NHWC pooling; op 0 max, 1 average, 2 l2. Padding contributes nothing; average divides by the number of
// non-padding elements in the window. A window with no element writes 0.
void pool2d(int op, ET t, const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const void* px,
            size_t OH, size_t OW, void* py, Parallel& par);

// ---- quantization. quantize: y = saturate(round_even(x / scale) + zp); dequantize: (x - zp) * scale. Scale
// (float) and zero point (integer, optional) broadcast to x or repeat block-wise (x dim a multiple). ----
void quantize(int op, ET in, ET out, const Dims& x, ET st, const Dims& sd, const void* ps, ET zt,
              const Dims& zd, const void* pz, const void* px, void* py, Parallel& par);
// True when dims s broadcast or block-repeat to x (rank <= x rank, each dim 1, equal or dividing).
bool blockwise_compatible(const Dims& s, const Dims& x);

}  // namespace wx
}  // namespace webxnn
