// ExecuTorch programs (.pte): find the XnnpackBackend payload and the program's named data, so a .pte loads
// like the .xnn blob it carries. Only programs that are one method making (at most) one call into one
// XnnpackBackend delegate are accepted; anything else is kUnsupported naming what the program holds. The
// bytes are untrusted: the program flatbuffer is verified (schema/program.fbs, webxnn's own description of
// the format) and every segment range is checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace webxnn {

struct NamedBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
};
// named_key → bytes, for payload constants kept in the program's named data (ExecuTorch >= 0.6)
using NamedData = std::unordered_map<std::string, NamedBytes>;

struct PtePayload {
  const uint8_t* data = nullptr;  // the delegate payload: inside the .pte, or in `keepalive`
  size_t size = 0;
  NamedData named;
  std::vector<std::shared_ptr<void>> keepalive;  // aligned copies the pointers above may point into
};

// Whether `data` starts like an ExecuTorch program (file identifier "ET12" at byte 4).
bool is_pte(const uint8_t* data, size_t size);

// The payload and named data of the .pte in `data` (which must outlive the result). Throws Error.
PtePayload open_pte(const uint8_t* data, size_t size);

}  // namespace webxnn
