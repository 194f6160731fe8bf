// Where each tensor of a run lives in its arena: offsets from tensor sizes and lifetimes (step ranges).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace webxnn {

struct ArenaTensor {
  uint32_t value;     // the model value (not read here)
  size_t size;        // bytes, a multiple of kArenaAlignment (offsets then stay aligned too)
  size_t start, end;  // first and last step that touch it (inclusive)
  size_t offset;      // set by place_tensors
};

// Sets every tensor's offset so that no two tensors whose lifetimes intersect overlap in memory, and returns
// the arena size. `steps` bounds the lifetimes. With `centred`, tensors share memory only within slots and
// sit centred in their slot (see arena_layout.cc); else they are packed as tightly as the greedy allows.
size_t place_tensors(std::vector<ArenaTensor>& ts, size_t steps, bool centred);

}  // namespace webxnn
