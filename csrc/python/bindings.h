// Pieces of the webxnn._runtime module, each bound in its own file; module.cc assembles them.
#pragma once

#include <pybind11/pybind11.h>

namespace webxnn {
// webxnn._runtime.kernels: direct access to the kernel tables, for kernel tests and bench/ (kernels_binding.cc)
void bind_kernels(pybind11::module_& m);
// webxnn._runtime.qs8: the int8 GEMM kernels, for their tests and bench/ (qs8_binding.cc)
void bind_qs8(pybind11::module_& m);
}  // namespace webxnn
