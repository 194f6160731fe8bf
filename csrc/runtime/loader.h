// Blob → Model: header parsing, flatbuffers verification and structural checks (ids, def-before-use,
// constants in range and of the right size, externals). Shapes and node parameters are checked by
// shapes.h afterwards. Everything that fails throws Error(kFormat) (or kUnsupported for valid features this
// runtime does not implement) with a message naming the byte offset, value or node.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/model.h"
#include "runtime/pte.h"

namespace webxnn {

// `data` must stay alive (and unchanged) as long as the returned Model: constants point into it. `named`
// resolves constants that carry a `named_key` (a .pte's named data, which must stay alive as well).
Model decode_blob(const uint8_t* data, size_t size, const NamedData* named = nullptr);

}  // namespace webxnn
