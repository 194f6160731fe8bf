// webxnn._testing.arena_layout: the arena placement on its own. Offsets and the arena size for tensors given
// as parallel lists, under place_tensors' contract (sizes multiples of the arena alignment, start <= end); a
// call outside it raises webxnn's InvalidArgument error (an InputError).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/arena_layout.h"
#include "runtime/memory.h"
#include "runtime/status.h"
#include "testing/bindings.h"

namespace py = pybind11;

namespace webxnn {

void bind_arena_layout(py::module_& m) {
  m.def(
      "arena_layout",
      [](const std::vector<size_t>& sizes, const std::vector<size_t>& starts, const std::vector<size_t>& ends,
         bool centred) {
        if (sizes.size() != starts.size() || sizes.size() != ends.size())
          fail(StatusCode::kInvalidArgument, "arena_layout: sizes, starts and ends differ in length");
        std::vector<ArenaTensor> ts;
        size_t steps = 0;
        for (size_t k = 0; k < sizes.size(); ++k) {
          if (sizes[k] % kArenaAlignment != 0)
            fail(StatusCode::kInvalidArgument, "arena_layout: tensor " + std::to_string(k) + "'s size " +
                                                   std::to_string(sizes[k]) + " is not a multiple of " +
                                                   std::to_string(kArenaAlignment));
          if (starts[k] > ends[k])
            fail(StatusCode::kInvalidArgument,
                 "arena_layout: tensor " + std::to_string(k) + " ends before it starts");
          ts.push_back({static_cast<uint32_t>(k), sizes[k], starts[k], ends[k], 0});
          steps = std::max(steps, ends[k] + 1);
        }
        const size_t arena = place_tensors(ts, steps, centred);
        std::vector<size_t> offsets;
        for (const auto& t : ts) offsets.push_back(t.offset);
        return py::make_tuple(offsets, arena);
      },
      py::arg("sizes"), py::arg("starts"), py::arg("ends"), py::arg("centred"));
}

}  // namespace webxnn
