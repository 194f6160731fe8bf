// The AVX2+FMA KernelTable entries (declarations only: no inline code may be shared with generic TUs).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace webxnn {
namespace avx2 {

size_t gemm_packed_size(size_t K, size_t N);
void gemm_pack(size_t K, size_t N, const float* B, bool b_is_nk, const float* bias, void* packed);
void gemm(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, float* C, size_t ldc,
          Activation act, Parallel& par);
void gemm_residual(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, const float* R,
                   size_t ldr, float* C, size_t ldc, Activation act, Parallel& par);
// gemm (R null) or gemm_residual that also pulls `ahead` toward L2 while it computes: conv2d's 1x1 path.
void gemm_ahead(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, const float* R,
                size_t ldr, float* C, size_t ldc, Activation act, const Prefetch& ahead, Parallel& par);
void batch_matmul(size_t batch, size_t M, size_t N, size_t K, const float* A, size_t a_batch_stride,
                  const float* B, size_t b_batch_stride, bool b_is_nk, float* C, Parallel& par);

// gemm.cc: C = act(A * packed + the panels' bias [+ R]) on the calling thread (the building block of other
// kernels' own task splits); R (null: none) has row stride ldr. next_packed (null: none): the packed B the
// caller multiplies next; its first panel block is prefetched during the last panel (Winograd's 36 GEMMs
// read their weights from DRAM one after the other).
void gemm_serial(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, float* C, size_t ldc,
                 Activation act = Activation(), const float* R = nullptr, size_t ldr = 0,
                 const void* next_packed = nullptr);

// winograd.cc: 3x3 stride-1 convolution by Winograd F(4x4, 3x3) when winograd_applies(p); igemm.cc's conv2d
// entries route there, so its packed layout is the conv2d one for those params.
bool winograd_applies(const ConvParams& p);
size_t winograd_packed_size(const ConvParams& p);
void winograd_pack(const ConvParams& p, const float* filter_ohwi, const float* bias, void* packed);
void winograd_conv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                     const void* packed, const float* residual, float* out, Parallel& par);

size_t conv2d_packed_size(const ConvParams& p);
void conv2d_pack(const ConvParams& p, const float* filter_ohwi, const float* bias, void* packed);
void conv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
            const void* packed, float* out, Parallel& par);
bool conv2d_reads_nchw(const ConvParams& p);
void conv2d_residual(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                     const void* packed, const float* residual, float* out, Parallel& par);

// deconv.cc: transposed convolution as one GEMM per image and group plus a gather (own packed layout).
size_t deconv2d_packed_size(const ConvParams& p);
void deconv2d_pack(const ConvParams& p, const float* filter_ohwi, const float* bias, void* packed);
void deconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par);

// Same packed layout as the scalar dwconv (so pack/packed_size are the scalar ones).
void dwconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par);
void dwconv2d_fused(const PointwiseConv* expand, const ConvParams& p, size_t N, size_t H, size_t W, const float* in,
                    size_t OH, size_t OW, const void* dw_packed, const PointwiseConv* project, const float* residual,
                    float* out, Parallel& par);

void global_avg_pool(size_t N, size_t HW, size_t C, const float* in, float* out, Activation act, Parallel& par);
void max_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in, size_t OH,
                size_t OW, float* out, Parallel& par);
void avg_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in, size_t OH,
                size_t OW, float* out, Parallel& par);

void binary(BinaryOp op, const BinaryShape& s, const float* a, const float* b, float* out, Activation act,
            Parallel& par);
void unary(UnaryOp op, size_t n, const float* in, float* out, const UnaryParams& p, Parallel& par);

// math.cc: exp, sigmoid, tanh, erf, gelu (returns false for other ops), softmax, layer norm.
bool unary_transcendental(UnaryOp op, size_t n, const float* in, float* out, const UnaryParams& p, Parallel& par);
void softmax(size_t rows, size_t cols, const float* in, float* out, Parallel& par);
void normalize(size_t rows, size_t cols, const float* in, const float* scale, const float* bias, float epsilon,
               float* out, Parallel& par);

// layout.cc: NCHW <-> NHWC of 3-channel images (false for other channel counts).
bool image_layout_f32(size_t batch, size_t channels, size_t pixels, bool to_planar, const float* x, float* y,
                      Parallel& par);

}  // namespace avx2
}  // namespace webxnn
