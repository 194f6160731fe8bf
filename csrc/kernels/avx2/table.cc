// The AVX2+FMA KernelTable (compiled with -mavx2 -mfma -mf16c; only called after dispatch.cc checked the CPU):
// the scalar table with the entries of WEBXNN_AVX2_KERNELS replaced, by name.
#include "kernels/avx2/avx2.h"
#include "kernels/internal.h"

namespace webxnn {
namespace internal {

const KernelTable* avx2_table() {
  static const KernelTable table = [] {
    KernelTable t =
        scalar_table();  // the entries AVX2 does not implement (their packed layouts then match too)
    t.name = "avx2";
#define WEBXNN_AVX2_FILL(fn) t.fn = avx2::fn;
    WEBXNN_AVX2_KERNELS(WEBXNN_AVX2_FILL)
#undef WEBXNN_AVX2_FILL
    return t;
  }();
  return &table;
}

}  // namespace internal
}  // namespace webxnn
