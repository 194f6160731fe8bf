// The AVX-VNNI int8 table (qgemm_vnni.h): compiled with -mavxvnni (and AVX2's flags); dispatch.cc chooses it on
// a CPU with AVX-VNNI (CPUID 7.1 EAX bit 4) and AVX2 + FMA + F16C but without AVX512-VNNI.
#include "kernels/vnni/qgemm_vnni.h"

namespace webxnn {
namespace {

struct DpbusdVex {
  __attribute__((always_inline)) static __m256i dot(__m256i acc, __m256i a, __m256i w) {
    return _mm256_dpbusd_avx_epi32(acc, a, w);
  }
};

// 16 ymm registers (VEX): AVX2's tile shapes, 2 x 32 (8 accumulators + 4 weight vectors + the broadcast) and
// 4 x 16. Not measured (no VNNI machine here).
using Policy = vnni::DotPolicy<DpbusdVex, 2, 4>;

}  // namespace

namespace internal {

const KernelTable* avxvnni_table() {
  static const KernelTable table = vnni::make_table<Policy>("avxvnni");
  return &table;
}

}  // namespace internal
}  // namespace webxnn
