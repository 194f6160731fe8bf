// webxnn::Error -> the webxnn.errors class for its StatusCode, for every pybind11 module of webxnn (each
// module links its own copy of the core, so each registers this translator for its own Error type).
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <string>

#include "runtime/status.h"

namespace webxnn {

// A string from a blob (a value name, a node source) as a Python str: blobs are untrusted, and bytes that are
// not UTF-8 come out escaped (\xff) instead of raising UnicodeDecodeError where the name is only shown.
inline pybind11::str escaped_str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "backslashreplace");
  if (!o) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::str>(o);
}

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
      // messages quote names and node sources from the blob: escaped, never a UnicodeDecodeError instead
      PyErr_SetObject(cls.ptr(), escaped_str(e.what()).ptr());
    }
  });
}

}  // namespace webxnn
