// The AVX2+FMA KernelTable entries and the helpers its translation units share (declarations only: no inline
// code may be shared with generic TUs).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/avx2/isa_ns.h"
#include "kernels/kernels.h"

// The entries of table.def that the AVX2 table implements, X(name) each; its other entries are the scalar ones
// (table.cc starts from the scalar table): dwconv2d_packed_size / dwconv2d_pack (dwconv2d reads the scalar
// packed layout), the int8 packers qgemm_packed_size / qgemm_pack / qconv2d_packed_size / qconv2d_pack
// (qgemm / qconv2d read the scalar packed layout, kernels/qgemm_layout.h). Where they are defined:
//   gemm.cc     gemm_packed_size gemm_pack gemm gemm_residual batch_matmul
//   igemm.cc    conv2d_packed_size conv2d_pack conv2d conv2d_reads_nchw conv2d_residual (Winograd: winograd.cc)
//   dwconv.cc   dwconv2d dwconv2d_fused; pool.cc max_pool2d avg_pool2d global_avg_pool
//   deconv.cc   deconv2d_packed_size deconv2d_pack deconv2d
//   elementwise.cc binary unary (math.cc: its transcendentals); rows.cc softmax normalize; layout.cc
//               image_layout_f32 (3-channel images)
//   qgemm.cc    qgemm qconv2d qd8_gemm qgemm_residual qconv2d_residual; qd8.cc quantize_qd8 (the int8
//               packers are the scalar ones)
//   qconv_fp32acc.cc qconv2d_reads_nchw (qconv2d's few-channel path, which reads planes)
//   q8elem.cc   qadd qmul qmax_pool2d qglobal_avg_pool qlut quantize_qs8 dequantize_qs8 (qavg_pool2d is
//               the scalar one)
//   qdwconv.cc  qdwconv2d (reads the scalar packer's layout, kernels/qdw_layout.h)
// WEBXNN_F32_GEMM_KERNELS (gemm.cc, igemm.cc with winograd.cc, dwconv.cc, deconv.cc, rows.cc) are also
// compiled on 512-bit GEMM tiles, in namespace avx512f (isa_ns.h), for the AVX512-VNNI table
// (kernels/avx512f/); rows.cc's softmax rows run on zmm there. Pooling (pool.cc) is not: it has no GEMM,
// and the AVX512-VNNI table takes AVX2's.
// clang-format off
#define WEBXNN_F32_GEMM_KERNELS(X) \
  X(gemm_packed_size) X(gemm_pack) X(gemm) X(gemm_residual) X(batch_matmul) \
  X(conv2d_packed_size) X(conv2d_pack) X(conv2d) X(conv2d_reads_nchw) X(conv2d_residual) \
  X(dwconv2d) X(dwconv2d_fused) \
  X(deconv2d_packed_size) X(deconv2d_pack) X(deconv2d) X(softmax) X(normalize)
#define WEBXNN_AVX2_KERNELS(X) \
  WEBXNN_F32_GEMM_KERNELS(X) \
  X(max_pool2d) X(avg_pool2d) X(global_avg_pool) \
  X(binary) X(unary) X(image_layout_f32) \
  X(qgemm) X(qconv2d) X(qconv2d_reads_nchw) X(qdwconv2d) X(quantize_qd8) X(qd8_gemm) \
  X(qgemm_residual) X(qconv2d_residual) \
  X(qadd) X(qmul) X(qmax_pool2d) X(qglobal_avg_pool) X(qlut) X(quantize_qs8) X(dequantize_qs8)
// clang-format on

namespace webxnn {
namespace WEBXNN_AVX2_NS {

// The entries, with table.def's signatures.
#define WEBXNN_AVX2_DECLARE(fn) kernel_fn::fn fn;
WEBXNN_AVX2_KERNELS(WEBXNN_AVX2_DECLARE)
#undef WEBXNN_AVX2_DECLARE

// gemm.cc: gemm (R null) or gemm_residual that also pulls `ahead` toward L2 while it computes: conv2d's 1x1
// path.
void gemm_ahead(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, const float* R,
                size_t ldr, float* C, size_t ldc, Activation act, const Prefetch& ahead, Parallel& par);

// gemm.cc: C = act(A * packed + the panels' bias [+ R]) on the calling thread (the building block of other
// kernels' own task splits); R (null: none) has row stride ldr. next_packed (null: none): the packed B the
// caller multiplies next; its first panel block is prefetched during the last panel (Winograd's 36 GEMMs
// read their weights from DRAM one after the other).
void gemm_serial(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, float* C,
                 size_t ldc, Activation act = Activation(), const float* R = nullptr, size_t ldr = 0,
                 const void* next_packed = nullptr);

// winograd.cc: 3x3 stride-1 convolution by Winograd F(4x4, 3x3) when winograd_applies(p); igemm.cc's conv2d
// entries route there, so its packed layout is the conv2d one for those params.
bool winograd_applies(const ConvParams& p);
size_t winograd_packed_size(const ConvParams& p);
void winograd_pack(const ConvParams& p, const float* filter_ohwi, const float* bias, void* packed);
void winograd_conv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                     const void* packed, const float* residual, float* out, Parallel& par);

// qconv_fp32acc.cc: qconv2d for few input channels (image stems) on fp32 FMAs, exact within a K bound;
// qgemm.cc's qconv2d routes there when qconv2d_fp32acc_applies(p). Same packed layout, same results.
bool qconv2d_fp32acc_applies(const ConvParams& p);
void qconv2d_fp32acc(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
                     const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par);
// qgemm.cc: qconv2d_residual on that path, which has no residual epilogue: the conv, then qadd over its output
// in place -- the pair run apart, in one call (the VNNI tables route their stems here too).
void qconv2d_fp32acc_residual(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH,
                              size_t OW, const void* packed, const int8_t* residual, void* out,
                              int32_t out_min, int32_t out_max, const QElemParams& add, Parallel& par);

// math.cc (AVX2 table only): exp, sigmoid, tanh, erf, gelu (returns false for other ops; elementwise.cc's
// unary routes there).
bool unary_transcendental(UnaryOp op, size_t n, const float* in, float* out, const UnaryParams& p,
                          Parallel& par);

}  // namespace WEBXNN_AVX2_NS
}  // namespace webxnn
