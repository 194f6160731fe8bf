// webxnn::Error -> the webxnn.errors class for its StatusCode, for every pybind11 module of webxnn (each
// module links its own copy of the core, so each registers this translator for its own Error type).
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

#include "runtime/status.h"

namespace webxnn {

inline pybind11::object error_class(StatusCode code) {
  namespace py = pybind11;
  py::module_ errors = py::module_::import("webxnn.errors");
  switch (code) {
    case StatusCode::kFormat: return errors.attr("FormatError");
    case StatusCode::kInput: return errors.attr("InputError");
    case StatusCode::kUnsupported: return errors.attr("UnsupportedError");
    case StatusCode::kInvalidArgument: return errors.attr("InputError");
    case StatusCode::kIO: return py::module_::import("builtins").attr("OSError");
    default: return py::module_::import("builtins").attr("RuntimeError");
  }
}

// Call once from a module's init.
inline void register_error_translator() {
  pybind11::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      pybind11::object cls = error_class(e.code());
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
}

}  // namespace webxnn
