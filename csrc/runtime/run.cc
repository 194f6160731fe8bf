// Execution: one run of a plan in an arena (reused between runs), each step one call through the node table.
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "runtime/node_table.h"
#include "runtime/nodes/common.h"
#include "runtime/program.h"
#include "runtime/status.h"

namespace webxnn {

AlignedBuffer Program::acquire_arena(size_t bytes) const {
  {
    std::lock_guard<std::mutex> lk(arena_mutex_);
    for (size_t k = 0; k < free_arenas_.size(); ++k) {
      if (free_arenas_[k].size() >= bytes) {
        AlignedBuffer b = std::move(free_arenas_[k]);
        free_arenas_.erase(free_arenas_.begin() + static_cast<std::ptrdiff_t>(k));
        return b;
      }
    }
  }
  return AlignedBuffer(bytes, false, /*huge_pages=*/true);
}

void Program::release_arena(AlignedBuffer buf) const {
  constexpr size_t kMaxFreeArenas = 4;
  std::lock_guard<std::mutex> lk(arena_mutex_);
  if (free_arenas_.size() < kMaxFreeArenas) free_arenas_.push_back(std::move(buf));
}

namespace {

// The first index outside [0, bound) and its value, or index -1.
template <typename I>
std::pair<int64_t, int64_t> first_out_of_range(const void* data, size_t n, int64_t bound) {
  const I* p = static_cast<const I*>(data);
  for (size_t i = 0; i < n; ++i) {
    const auto v = static_cast<int64_t>(p[i]);
    if (v < 0 || v >= bound) return {static_cast<int64_t>(i), v};
  }
  return {-1, 0};
}

}  // namespace

void Program::check_gather_indices(const Plan& plan, const void* const* inputs) const {
  for (const auto& [node, k] : checked_gathers_) {
    const Node& nd = model_.nodes[node];
    const uint32_t idx = nd.inputs[1];
    const Shape& table = plan.shapes[nd.inputs[0]];
    const int64_t bound = nd.axis < table.size() ? static_cast<int64_t>(table[nd.axis]) : 0;
    const size_t n = numel(plan.shapes[idx]);
    std::pair<int64_t, int64_t> bad{-1, 0};
    switch (model_.values[idx].dtype) {
      case DType::kWxInt64: bad = first_out_of_range<int64_t>(inputs[k], n, bound); break;
      case DType::kInt32: bad = first_out_of_range<int32_t>(inputs[k], n, bound); break;
      case DType::kWxUint32: bad = first_out_of_range<uint32_t>(inputs[k], n, bound); break;
      default: break;
    }
    if (bad.first >= 0)
      input_error("input '" + inputs_[k].name + "': element " + str(bad.first) + " is " +
                  std::to_string(bad.second) + ", outside 0.." + str(bound - 1) +
                  " (the rows of the table it indexes)");
  }
}

void Program::run(const Plan& plan, const void* const* inputs, void* const* outputs, uint64_t* step_ns,
                  uint64_t* step_wait_ns) const {
  check_gather_indices(plan, inputs);
  // Workers or not (runtime/run_mode.h; profiled runs always use them: they show what the workers cost).
  const bool adaptive = !step_ns && pool_->size() > 1 && RunMode::enabled();
  const bool solo = adaptive && plan.run_mode.pick_solo();
  // First: another run on this pool finishes before ours starts, and sleeping workers wake up while we
  // prepare.
  ThreadPool::Session session(*pool_, solo);
  const auto t_run = std::chrono::steady_clock::now();  // after our turn came: waiting for it is not our cost
  const size_t nv = model_.values.size();
  // The arena comes from (and goes back to) a small cache: a fresh multi-megabyte allocation per run would
  // be mapped and page-faulted anew every time.
  struct ArenaLease {
    const Program& p;
    AlignedBuffer buf;
    ~ArenaLease() { p.release_arena(std::move(buf)); }
  } lease{*this, acquire_arena(plan.arena_bytes)};
  uint8_t* arena = lease.buf.data();
  std::vector<void*> ptrs(nv, nullptr);
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = model_.values[v];
    if (val.is_constant)
      ptrs[v] = const_cast<uint8_t*>(val.data);  // kernels only read constants
    else if (plan.offsets[v] != Plan::kNotInArena)
      ptrs[v] = arena + plan.offsets[v];
  }
  for (size_t k = 0; k < model_.outputs.size(); ++k) ptrs[model_.outputs[k]] = outputs[k];
  for (size_t k = 0; k < model_.inputs.size(); ++k) ptrs[model_.inputs[k]] = const_cast<void*>(inputs[k]);
  for (size_t v = 0; v < nv; ++v) {
    if (plan.alias[v] != kNoValue) ptrs[v] = ptrs[plan.alias[v]];
  }
  SerialParallel serial;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& st = plan.steps[s];
    Parallel& par = st.serial ? static_cast<Parallel&>(serial) : *pool_;
    if (!step_ns) {
      exec_node(st.node, plan, ptrs.data(), par, &st);
      continue;
    }
    const uint64_t w0 = ThreadPool::barrier_wait_ns();
    const auto t0 = std::chrono::steady_clock::now();
    exec_node(st.node, plan, ptrs.data(), par, &st);
    const auto t1 = std::chrono::steady_clock::now();
    step_ns[s] +=
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    if (step_wait_ns) step_wait_ns[s] += ThreadPool::barrier_wait_ns() - w0;
  }
  // An input that is also an output (flags 3) is copied through.
  for (size_t k = 0; k < model_.outputs.size(); ++k) {
    const uint32_t v = model_.outputs[k];
    if (model_.values[v].flags & kFlagExternalInput) {
      const size_t bytes = output_bytes(plan, k);
      if (bytes && outputs[k] != ptrs[v]) std::memcpy(outputs[k], ptrs[v], bytes);
    }
  }
  if (adaptive) {  // (a run that failed is no figure)
    const auto ns = std::chrono::steady_clock::now() - t_run;
    plan.run_mode.record(
        solo, static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(ns).count()));
  }
}

void Program::exec_node(size_t i, const Plan& plan, void* const* ptrs, Parallel& par,
                        const Step* step) const {
  const Node& nd = model_.nodes[i];
  const NodeDef& d = node_def(nd.type);
  if (!d.exec) fail(StatusCode::kInternal, model_.node_label(i) + ": no executor for this node type");
  d.exec(ExecArgs{model_, *kernels_, plan, ptrs, packed_ptr_.data(), par}, i, step);
}

}  // namespace webxnn
