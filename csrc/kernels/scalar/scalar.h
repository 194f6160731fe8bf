// The scalar KernelTable entries (portable C++; the reference every other table is tested against).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace webxnn {
namespace scalar {

size_t gemm_packed_size(size_t K, size_t N);
void gemm_pack(size_t K, size_t N, const float* B, bool b_is_nk, const float* bias, void* packed);
void gemm(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, float* C, size_t ldc,
          Activation act, Parallel& par);
void gemm_residual(size_t M, size_t N, size_t K, const float* A, size_t lda, const void* packed, const float* R,
                   size_t ldr, float* C, size_t ldc, Activation act, Parallel& par);
void batch_matmul(size_t batch, size_t M, size_t N, size_t K, const float* A, size_t a_batch_stride,
                  const float* B, size_t b_batch_stride, bool b_is_nk, float* C, Parallel& par);

size_t conv2d_packed_size(const ConvParams& p);
void conv2d_pack(const ConvParams& p, const float* filter_ohwi, const float* bias, void* packed);
void conv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
            const void* packed, float* out, Parallel& par);
bool conv2d_reads_nchw(const ConvParams& p);
void conv2d_residual(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
                     const void* packed, const float* residual, float* out, Parallel& par);
size_t dwconv2d_packed_size(const ConvParams& p);
void dwconv2d_pack(const ConvParams& p, const float* filter_1hwo, const float* bias, void* packed);
void dwconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par);
void dwconv2d_fused(const PointwiseConv* expand, const ConvParams& p, size_t N, size_t H, size_t W, const float* in,
                    size_t OH, size_t OW, const void* dw_packed, const PointwiseConv* project, const float* residual,
                    float* out, Parallel& par);
size_t deconv2d_packed_size(const ConvParams& p);
void deconv2d_pack(const ConvParams& p, const float* filter_ohwi, const float* bias, void* packed);
void deconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const float* in, size_t OH, size_t OW,
              const void* packed, float* out, Parallel& par);

void max_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in, size_t OH,
                size_t OW, float* out, Parallel& par);
void avg_pool2d(const PoolParams& p, size_t N, size_t H, size_t W, size_t C, const float* in, size_t OH,
                size_t OW, float* out, Parallel& par);
void global_avg_pool(size_t N, size_t HW, size_t C, const float* in, float* out, Activation act, Parallel& par);

void binary(BinaryOp op, const BinaryShape& s, const float* a, const float* b, float* out, Activation act,
            Parallel& par);
void unary(UnaryOp op, size_t n, const float* in, float* out, const UnaryParams& p, Parallel& par);
void softmax(size_t rows, size_t cols, const float* in, float* out, Parallel& par);
void normalize(size_t rows, size_t cols, const float* in, const float* scale, const float* bias, float epsilon,
               float* out, Parallel& par);

void quantize_qs8(size_t n, const float* in, int8_t* out, float scale, int32_t zero_point);
void dequantize_qs8(size_t n, const int8_t* in, float* out, float scale, int32_t zero_point);

size_t qs8_gemm_packed_size(size_t K, size_t N);
void qs8_gemm_pack(size_t K, size_t N, const int8_t* B, bool b_is_nk, const int32_t* bias, const float* w_scales,
                   float in_scale, int32_t in_zero_point, float out_scale, int32_t out_zero_point, void* packed);
void qs8_gemm(size_t M, size_t N, size_t K, const int8_t* A, size_t lda, const void* packed, int8_t* C,
              size_t ldc, int8_t out_min, int8_t out_max, Parallel& par);

}  // namespace scalar
}  // namespace webxnn
