// The AVX512-VNNI int8 table (qgemm_vnni.h): compiled with -mavx512f -mavx512vl -mavx512bw -mavx512vnni (and
// AVX2's flags); dispatch.cc chooses it only on a CPU with all of them and the OS saving the ZMM state.
#include "kernels/vnni/qgemm_vnni.h"

namespace webxnn {
namespace {

struct Dpbusd512 {
  __attribute__((always_inline)) static __m256i dot(__m256i acc, __m256i a, __m256i w) {
    return _mm256_dpbusd_epi32(acc, a, w);
  }
};

// EVEX has 32 ymm registers: 4 x 32 tiles (16 accumulators + 4 weight vectors + the broadcast row group) and
// 8 x 16 for a lone last panel. Not measured (no VNNI machine here).
using Policy = vnni::DotPolicy<Dpbusd512, 4, 8>;

}  // namespace

namespace internal {

const KernelTable* avx512vnni_table() {
  static const KernelTable table = vnni::make_table<Policy>("avx512vnni");
  return &table;
}

}  // namespace internal
}  // namespace webxnn
