// The scalar KernelTable entries (portable C++; the reference every other table is tested against): one
// function per entry of table.def, under the entry's name and with its signature. The scalar table is
// complete, so a table.def row without a scalar definition is a link error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace webxnn {
namespace scalar {

#define WEBXNN_KERNEL(fn, ret, params) kernel_fn::fn fn;
#include "kernels/table.def"
#undef WEBXNN_KERNEL

}  // namespace scalar
}  // namespace webxnn
