// The scalar KernelTable: every entry of table.def, by name.
#include "kernels/internal.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace internal {

const KernelTable& scalar_table() {
  static const KernelTable table = [] {
    KernelTable t{};
    t.name = "scalar";
#define WEBXNN_KERNEL(fn, ret, params) t.fn = scalar::fn;
#include "kernels/table.def"
#undef WEBXNN_KERNEL
    return t;
  }();
  return table;
}

}  // namespace internal
}  // namespace webxnn
