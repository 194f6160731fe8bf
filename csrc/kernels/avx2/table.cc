// The AVX2+FMA KernelTable (compiled with -mavx2 -mfma -mf16c; only called after dispatch.cc checked the CPU).
// Entries without an AVX2 implementation point at the scalar ones (their packed layouts then match too).
#include "kernels/avx2/avx2.h"
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace internal {

const KernelTable* avx2_table() {
  // Filled by name so that an entry added to KernelTable cannot silently shift the others.
  static const KernelTable table = [] {
    KernelTable t = scalar_table();
    t.name = "avx2";
    t.gemm_packed_size = avx2::gemm_packed_size;
    t.gemm_pack = avx2::gemm_pack;
    t.gemm = avx2::gemm;
    t.batch_matmul = avx2::batch_matmul;
    t.conv2d_packed_size = avx2::conv2d_packed_size;
    t.conv2d_pack = avx2::conv2d_pack;
    t.conv2d = avx2::conv2d;
    t.conv2d_reads_nchw = avx2::conv2d_reads_nchw;
    t.conv2d_residual = avx2::conv2d_residual;
    t.dwconv2d_fused = avx2::dwconv2d_fused;
    t.gemm_residual = avx2::gemm_residual;
    t.dwconv2d = avx2::dwconv2d;
    t.deconv2d_packed_size = avx2::deconv2d_packed_size;
    t.deconv2d_pack = avx2::deconv2d_pack;
    t.deconv2d = avx2::deconv2d;
    t.max_pool2d = avx2::max_pool2d;
    t.avg_pool2d = avx2::avg_pool2d;
    t.global_avg_pool = avx2::global_avg_pool;
    t.binary = avx2::binary;
    t.unary = avx2::unary;
    t.softmax = avx2::softmax;
    t.normalize = avx2::normalize;
    t.image_layout_f32 = avx2::image_layout_f32;
    return t;
  }();
  return &table;
}

}  // namespace internal
}  // namespace webxnn
