// Kernel interface: what the runtime's executor calls. Kernels know tensors and parameters, never graphs.
//
// Conventions
//  * Activations are NHWC; shapes are size_t; strides are in elements unless named *_bytes.
//  * Weights are packed once at load by pack_* into a buffer the caller allocates with *_packed_size bytes
//    (64-byte aligned). The packed layout is private to the kernel table that packed it.
//  * `Activation` is the fused output activation: the clamp (output_min_max; {-inf, +inf} means none), then
//    an optional post-op (hardswish, sigmoid or gelu) applied to the clamped value. Only gemm, gemm_residual,
//    conv2d, conv2d_residual, dwconv2d and every activation of dwconv2d_fused apply `post` (the runtime
//    fuses a conv / FC into the activation that is its only consumer); every other entry takes the clamp
//    alone and must be given post = kNone.
//  * Every entry may split its work with `Parallel`; results must not depend on the thread count.
//  * The table is filled once from CPU features (dispatch.cc): the scalar table is the portable baseline
//    and the reference the faster tables are tested against.
//  * The entries, their signatures and their contracts: table.def (one list, read by every table).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/parallel.h"

namespace webxnn {

// The element-wise ops a conv / FC can apply to its output tile while it is still in cache. Each gives the same
// bits as the table's own `unary` op of that name, so fusing never changes results.
enum class PostOp : uint8_t { kNone, kHardswish, kSigmoid, kGelu };

struct Activation {
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  PostOp post = PostOp::kNone;  // after the clamp
};

// A read-only byte range a kernel may pull toward its core's cache while it computes, for a later step: the
// weights of a bandwidth-bound fully connected layer (MobileNetV2's classifier reads 5 MB once per run, from
// DRAM unless something fetched it ahead). A hint only: never read for results, and a kernel may ignore it.
struct Prefetch {
  const void* data = nullptr;
  size_t bytes = 0;
};

// Where batch_matmul finds one operand's matrices, in elements: matrix b starts b * batch after the base
// pointer and its rows are `row` apart, columns adjacent. A dense [batch, rows, cols] tensor is
// {rows * cols, cols}; batch 0 shares one matrix among all products; a [rows, batch, cols] tensor read per
// batch (attention heads inside a token's row) is {cols, batch * cols}, so no transpose has to run first.
struct MatStrides {
  size_t batch = 0, row = 0;
};

// Convolution geometry (XNNPACK's _XNNNodeConv). Filter as stored in the blob:
//   conv:       [groups*goc, kh, kw, gic]   (OHWI)
//   depthwise:  [1, kh, kw, channels*depth_multiplier]   (1HWO; groups = channels, gic = 1)
//   deconv:     [groups*goc, kh, kw, gic]   (OHWI), stride = upsampling, padding crops the output
struct ConvParams {
  uint32_t pad_top = 0, pad_right = 0, pad_bottom = 0, pad_left = 0;
  uint32_t kernel_h = 1, kernel_w = 1;
  uint32_t stride_h = 1, stride_w = 1;
  uint32_t dilation_h = 1, dilation_w = 1;
  uint32_t groups = 1;
  uint32_t group_input_channels = 1;  // gic
  uint32_t group_output_channels = 1;  // goc
  uint32_t adjustment_h = 0, adjustment_w = 0;  // deconv only
  Activation act;
  // The input's declared height and width (0: unknown), a hint for choosing the algorithm at pack time: a
  // table may pack and run differently for small images (e.g. no Winograd on 7x7 maps, where its tiles
  // would be mostly padding and its bigger weights would dominate). Changes results only within rounding.
  uint32_t input_h = 0, input_w = 0;
  // conv2d / conv2d_residual only: the input is [N, C, H, W] (planes, e.g. a graph's image input read in
  // place) instead of NHWC. Every table takes it for any geometry (packed with the same params); wherever
  // conv2d_reads_nchw(p), the packing is the one without it, the results are those of the conv of the
  // transposed input, bit for bit, and the speed is NHWC's. qconv2d takes it only where qconv2d_reads_nchw(p)
  // (table.def), with the same meaning.
  bool input_nchw = false;
  // Set by the runtime per run, not part of the packing: what conv2d / conv2d_residual may prefetch (AVX2: the
  // 1x1 stride-1 path, a share per GEMM tile, spread over its k loop).
  Prefetch ahead;
};

// A pointwise convolution fused into another kernel: its channels (input channels of an expand, output
// channels of a project), its filter as conv2d_pack packed it, and its activation.
struct PointwiseConv {
  size_t channels = 0;
  const void* packed = nullptr;
  Activation act;
};

struct PoolParams {
  uint32_t pad_top = 0, pad_right = 0, pad_bottom = 0, pad_left = 0;
  uint32_t pool_h = 1, pool_w = 1;
  uint32_t stride_h = 1, stride_w = 1;
  uint32_t dilation_h = 1, dilation_w = 1;
  Activation act;
};

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kMin, kMax, kPow, kPrelu, kSquaredDiff };

enum class UnaryOp : uint8_t {
  kClamp,
  kAbs,
  kNeg,
  kFloor,
  kCeil,
  kSqrt,
  kRsqrt,
  kSquare,
  kSigmoid,
  kTanh,
  kExp,
  kLog,
  kSin,
  kCos,
  kHardswish,
  kLeakyRelu,
  kElu,
  kGelu,
  kErf,
  kRelu,
  kSign,
  kRoundEven,
  kReciprocal,
  kSoftplus,
  kSoftsign,
  kTan,
  kHardSigmoid,
  kCopy
};

// Parameters of a unary op: alpha = leaky slope / elu alpha / hard_sigmoid alpha; beta = hard_sigmoid beta.
struct UnaryParams {
  float alpha = 0.f, beta = 0.f;
  Activation act;  // clamp bounds for kClamp; applied after every other op too
};

// Broadcasting binary op over up to kMaxBinaryRank dims. The runtime collapses shapes first; strides are in
// elements and 0 along broadcast dims. out is dense with dims `out_dims`.
constexpr size_t kMaxBinaryRank = 6;
struct BinaryShape {
  size_t rank = 0;
  size_t out_dims[kMaxBinaryRank] = {};
  size_t a_strides[kMaxBinaryRank] = {};
  size_t b_strides[kMaxBinaryRank] = {};
};

// Element offsets into a and b of the start of output row `row` (a row: the innermost dim). Out of line in
// layout.cc, which is built for the baseline ISA (an inline function here would be compiled per ISA and one
// copy picked by the linker for all).
void binary_row_offsets(const BinaryShape& s, size_t row, size_t* oa, size_t* ob);
// n elements of two same-shape dense operands, as one row (an element-wise pass over a whole buffer, e.g. the
// residual entries' qadd after their product). Out of line in layout.cc for the same reason.
BinaryShape flat_binary_shape(size_t n);

// The int8 types of the qgemm / qconv2d entries: quint8 and qint8.
enum class QType : uint8_t { kU8, kS8 };

// The quantization of one int8 GEMM or convolution, fixed at pack time (qgemm_pack, qconv2d_pack).
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

// (additive) The quantization of one qint8 element-wise or pooling op (qadd, qmul, qavg_pool2d,
// qglobal_avg_pool in table.def): per-tensor scale and zero point of each operand (b: the binary ops' second
// one) and of the output, and the output clamp out_min <= out_max within [-128, 127] (a fused relu / clamp,
// quantized by the caller).
struct QElemParams {
  float a_scale = 1.f, b_scale = 1.f, out_scale = 1.f;
  int32_t a_zero_point = 0, b_zero_point = 0, out_zero_point = 0;  // in [-128, 127]
  int32_t out_min = -128, out_max = 127;
};

// The quantization of one row of a dynamically quantized int8 tensor (qdint8, table.def's quantize_qd8 /
// qd8_gemm): real = (q - zero_point) * scale. The layout of XNNPACK's xnn_quantization_params (8 bytes).
struct RowQuant {
  int32_t zero_point;
  float scale;
};

// Each entry's function type, by name: kernel_fn::gemm is `void(size_t M, ..., Parallel& par)`. An ISA declares
// its implementation of an entry with it (`kernel_fn::gemm gemm;` in its namespace), so no signature is
// written twice.
namespace kernel_fn {
#define WEBXNN_KERNEL(fn, ret, params) using fn = ret params;
#include "kernels/table.def"
#undef WEBXNN_KERNEL
}  // namespace kernel_fn

// The kernels of one ISA: a pointer per entry of table.def (which holds every entry's signature and contract),
// under the entry's name (table.gemm(...)). Every pointer is set: an ISA without its own implementation of an
// entry has the scalar one there.
struct KernelTable {
  const char* name;  // "scalar", "avx2"
#define WEBXNN_KERNEL(fn, ret, params) kernel_fn::fn* fn;
#include "kernels/table.def"
#undef WEBXNN_KERNEL
};

// The scalar baseline (always available) and the table chosen for this CPU.
const KernelTable& scalar_kernels();
const KernelTable& best_kernels();

// (additive) What the CPU offers and what best_kernels() chose. Detected once (cpuid + xgetbv: AVX2 and FMA
// count only when the OS saves YMM state). The environment variable WEBXNN_ISA=scalar forces the scalar
// table; WEBXNN_ISA=avx2 asks for AVX2 (falls back to scalar when unsupported).
struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, avx512f = false;
  // (additive) The int8 dot-product extensions (each only with the OS saving its register state): AVX512-VNNI
  // and the AVX-512 subsets its ymm form needs (VL, BW), and AVX-VNNI (its VEX form).
  bool avx512vl = false, avx512bw = false, avx512vnni = false, avxvnni = false;
  size_t cores = 1;  // std::thread::hardware_concurrency()
};
const CpuFeatures& cpu_features();
// (additive) A table by name: "scalar", "avx2", "avx512vnni", "avxvnni" or "best" (and in testing builds
// "vnni-emu", which every x86-64 CPU with AVX2 runs); nullptr when unknown or unsupported on this CPU.
const KernelTable* kernels_by_name(const char* name);
// (additive) What runs the int8 entries (qgemm, qconv2d, qdwconv2d) of table t, in a few words: "scalar",
// "avx2 (exact: ...)" naming how the AVX2 kernels stay exact, or the VNNI table's name and instruction.
const char* int8_kernels(const KernelTable& t);

// (additive) Numpy-style broadcasting of two shapes into a BinaryShape: dims are right-aligned, a dim of 1
// broadcasts (stride 0), size-1 dims are dropped and adjacent dims with the same broadcast pattern are merged,
// so any rank collapses to the few dims the kernels need. Returns false when the shapes are incompatible or
// more than kMaxBinaryRank dims remain after collapsing. out_dims of the full broadcast shape (uncollapsed)
// can be obtained by the caller separately; the element count is the product of s.out_dims.
bool make_binary_shape(size_t a_rank, const size_t* a_dims, size_t b_rank, const size_t* b_dims,
                       BinaryShape* s);

// Layout helpers shared by the executor (byte copies, any element size).
// transpose: out dim i = in dim perm[i]
void transpose_bytes(size_t elem_size, size_t rank, const size_t* in_dims, const size_t* perm, const void* in,
                     void* out, Parallel& par);
// out = in[offsets : offsets + out_dims]
void slice_bytes(size_t elem_size, size_t rank, const size_t* in_dims, const size_t* offsets,
                 const size_t* out_dims, const void* in, void* out);
// out = pad(in, pre, post) filled with the elem_size bytes at `fill`
void pad_bytes(size_t elem_size, size_t rank, const size_t* in_dims, const size_t* pre, const size_t* post,
               const void* fill, const void* in, void* out);
// Concatenate along `axis`: outer = prod(dims before axis); each input contributes inner_bytes[i] per outer.
void concat_bytes(size_t n_inputs, const void* const* inputs, const size_t* inner_bytes, size_t outer,
                  void* out);

}  // namespace webxnn
