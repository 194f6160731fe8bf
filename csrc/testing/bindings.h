// Pieces of the webxnn._testing module (built only with -DWEBXNN_TESTING=ON), each bound in its own file of
// this directory; module.cc assembles them. A new piece: a .cc file here defining one bind_* function
// declared below, called from module.cc. Nothing here is part of the installed product.
#pragma once

#include <pybind11/pybind11.h>

namespace webxnn {
// webxnn._testing.kernels: each kernel table entry on numpy arrays, the timed entries bench/ uses, the FMA
// peak probe (kernels_binding.cc). `kernels` is the submodule module.cc created.
void bind_kernels(pybind11::module_& kernels);
// Its fp32 convolution entries (conv2d, dwconv2d and its fused blocks, deconv2d) and their timed ones
// (conv_binding.cc).
void bind_conv(pybind11::module_& kernels);
// Its int8 GEMM and IGEMM convolution entries, their timed entries, the int8 peak probe (qs8_binding.cc).
void bind_qs8(pybind11::module_& kernels);
// (q8elem) Its qint8 element-wise, pooling and lookup entries and their timed ones (q8elem_binding.cc).
void bind_q8elem(pybind11::module_& kernels);
// webxnn._testing.arena_layout: the arena placement on its own (arena_binding.cc).
void bind_arena_layout(pybind11::module_& m);

// qd8_binding.cc: quantize_qd8, qd8_gemm (dynamic int8) in webxnn._testing.kernels
void bind_qd8(pybind11::module_& kernels);
// webxnn._testing.ThreadPool: the thread pool on its own (pool_binding.cc).
void bind_pool(pybind11::module_& m);
}  // namespace webxnn
