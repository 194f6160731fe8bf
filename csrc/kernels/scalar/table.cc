// The scalar KernelTable.
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace internal {

const KernelTable& scalar_table() {
  // Filled by name so that an entry added to KernelTable cannot silently shift the others.
  static const KernelTable table = [] {
    KernelTable t{};
    t.name = "scalar";
    t.gemm_packed_size = scalar::gemm_packed_size;
    t.gemm_pack = scalar::gemm_pack;
    t.gemm = scalar::gemm;
    t.batch_matmul = scalar::batch_matmul;
    t.conv2d_packed_size = scalar::conv2d_packed_size;
    t.conv2d_pack = scalar::conv2d_pack;
    t.conv2d = scalar::conv2d;
    t.conv2d_reads_nchw = scalar::conv2d_reads_nchw;
    t.conv2d_residual = scalar::conv2d_residual;
    t.dwconv2d_fused = scalar::dwconv2d_fused;
    t.gemm_residual = scalar::gemm_residual;
    t.dwconv2d_packed_size = scalar::dwconv2d_packed_size;
    t.dwconv2d_pack = scalar::dwconv2d_pack;
    t.dwconv2d = scalar::dwconv2d;
    t.deconv2d_packed_size = scalar::deconv2d_packed_size;
    t.deconv2d_pack = scalar::deconv2d_pack;
    t.deconv2d = scalar::deconv2d;
    t.max_pool2d = scalar::max_pool2d;
    t.avg_pool2d = scalar::avg_pool2d;
    t.global_avg_pool = scalar::global_avg_pool;
    t.binary = scalar::binary;
    t.unary = scalar::unary;
    t.softmax = scalar::softmax;
    t.normalize = scalar::normalize;
    t.quantize_qs8 = scalar::quantize_qs8;
    t.dequantize_qs8 = scalar::dequantize_qs8;
    t.qs8_gemm_packed_size = scalar::qs8_gemm_packed_size;
    t.qs8_gemm_pack = scalar::qs8_gemm_pack;
    t.qs8_gemm = scalar::qs8_gemm;
    // No vector loop to offer: the caller's generic few-channel loop is the scalar kernel.
    t.image_layout_f32 = [](size_t, size_t, size_t, bool, const float*, float*, Parallel&) { return false; };
    return t;
  }();
  return table;
}

}  // namespace internal
}  // namespace webxnn
