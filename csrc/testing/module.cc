// webxnn._testing: entry points for tests and bench/ that the product module webxnn._runtime does not carry
// (CMake option WEBXNN_TESTING, off by default). Each piece is bound in its own file (bindings.h).
#include <pybind11/pybind11.h>

#include "python/errors.h"
#include "testing/bindings.h"

namespace py = pybind11;

PYBIND11_MODULE(_testing, m) {
  m.doc() =
      "webxnn test and benchmark entry points: kernels, the arena placement and the thread pool, one by one";
  webxnn::register_error_translator();  // for this module's own copy of the core's Error type
  py::module_ kernels = m.def_submodule("kernels", "Direct access to the kernel tables (tests, benchmarks)");
  webxnn::bind_kernels(kernels);
  webxnn::bind_conv(kernels);
  webxnn::bind_qs8(kernels);
  webxnn::bind_q8elem(kernels);
  webxnn::bind_qd8(kernels);
  // the product's cpu_info, under the name the kernel tests have always used
  kernels.attr("cpu_info") = py::module_::import("webxnn._runtime").attr("cpu_info");
  webxnn::bind_arena_layout(m);
  webxnn::bind_pool(m);
}
