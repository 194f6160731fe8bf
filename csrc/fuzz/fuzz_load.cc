// libFuzzer entry point for the loader: load + verify a blob; if it is accepted, run it once with zero
// inputs (when the inputs and the arena are small enough to be worth it). Any crash, sanitizer report or
// exception other than webxnn::Error is a bug.
//
//   cmake -S . -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DWEBXNN_FUZZ=ON -DWEBXNN_PYTHON=OFF
//   cmake --build build/fuzz --target fuzz_load && build/fuzz/fuzz_load corpus/
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/program.h"
#include "runtime/shapes.h"
#include "runtime/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMaxBytes = size_t(64) << 20;
  webxnn::LoadOptions opts;
  opts.threads = 1;
  std::shared_ptr<webxnn::Program> prog;
  try {
    prog = webxnn::Program::load_bytes(data, size, opts);
  } catch (const webxnn::Error&) {
    return 0;  // rejected with a message: the expected outcome for most inputs
  } catch (const std::bad_alloc&) {
    return 0;
  }
  if (prog->peak_arena_bytes() > kMaxBytes) return 0;
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<const void*> ins;
  std::vector<webxnn::Shape> shapes;
  size_t total = 0;
  for (const auto& info : prog->inputs()) {
    const size_t bytes = webxnn::numel(info.shape) * webxnn::public_dtype_size(info.dtype);
    total += bytes;
    if (total > kMaxBytes) return 0;
    bufs.emplace_back(bytes + 1, 0);
    shapes.push_back(info.shape);
  }
  for (auto& b : bufs) ins.push_back(b.data());
  try {
    auto plan = prog->plan_for(shapes);
    std::vector<std::vector<uint8_t>> outs;
    std::vector<void*> out_ptrs;
    for (size_t k = 0; k < prog->outputs().size(); ++k) {
      const size_t bytes = prog->output_bytes(*plan, k);
      if (bytes > kMaxBytes) return 0;
      outs.emplace_back(bytes + 1, 0);
    }
    for (auto& o : outs) out_ptrs.push_back(o.data());
    prog->run(*plan, ins.data(), out_ptrs.data());
  } catch (const webxnn::Error&) {
  } catch (const std::bad_alloc&) {
  }
  return 0;
}
