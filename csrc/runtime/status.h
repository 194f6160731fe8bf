// Errors inside the runtime core: a status code plus a message that names the place (byte offset, value id,
// node index and type, input name). The core throws `Error`; the C API and the pybind module catch it at
// their boundary and turn it into a wx_status / a webxnn.errors exception.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace webxnn {

// Same numbering as wx_status in include/webxnn/runtime.h.
enum class StatusCode : int {
  kOk = 0,
  kFormat = 1,           // malformed, truncated or hostile blob
  kInput = 2,            // wrong inputs to run()
  kUnsupported = 3,      // valid blob, but something this runtime cannot run
  kIO = 4,               // file could not be opened or mapped
  kInvalidArgument = 5,  // API misuse: null pointer, index out of range
  kInternal = 6,         // a bug
};

const char* status_code_name(StatusCode code);

class Error : public std::runtime_error {
 public:
  Error(StatusCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

struct Status {
  StatusCode code = StatusCode::kOk;
  std::string message;
  bool ok() const { return code == StatusCode::kOk; }
  static Status Ok() { return {}; }
};

[[noreturn]] inline void fail(StatusCode code, const std::string& message) { throw Error(code, message); }
[[noreturn]] inline void format_error(const std::string& message) { fail(StatusCode::kFormat, message); }
[[noreturn]] inline void unsupported(const std::string& message) { fail(StatusCode::kUnsupported, message); }
[[noreturn]] inline void input_error(const std::string& message) { fail(StatusCode::kInput, message); }

// Runs fn() and converts whatever it throws into a Status (std::bad_alloc becomes kUnsupported: the blob
// asks for more memory than this machine can give).
template <typename Fn>
Status capture_status(Fn&& fn) {
  try {
    std::forward<Fn>(fn)();
    return Status::Ok();
  } catch (const Error& e) {
    return Status{e.code(), e.what()};
  } catch (const std::bad_alloc&) {
    return Status{StatusCode::kUnsupported, "out of memory"};
  } catch (const std::exception& e) {
    return Status{StatusCode::kInternal, std::string("internal error: ") + e.what()};
  } catch (...) {
    return Status{StatusCode::kInternal, "internal error: unknown exception"};
  }
}

}  // namespace webxnn
