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

// The flat index and value of the first id outside its range, or index -1. The ids are rows of `k`; position j
// of a row must lie in [lo[j], hi[j]] (k = 1 for a gather or gatherElements, the indexed dims for gatherND).
template <typename I>
std::pair<int64_t, int64_t> first_out_of_range(const void* data, size_t n, size_t k, const int64_t* lo,
                                               const int64_t* hi) {
  const I* p = static_cast<const I*>(data);
  for (size_t r = 0; r < n; r += k) {
    for (size_t j = 0; j < k; ++j) {
      const auto v = static_cast<int64_t>(p[r + j]);
      if (v < lo[j] || v > hi[j]) return {static_cast<int64_t>(r + j), v};
    }
  }
  return {-1, 0};
}

}  // namespace

void Program::check_gather_indices(const Plan& plan, const void* const* inputs) const {
  for (const auto& [node, slot] : checked_gathers_) {
    const Node& nd = model_.nodes[node];
    const uint32_t src = model_.inputs[slot];  // the ids' graph input: nd.inputs[1] or what it views
    const Shape& data = plan.shapes[nd.inputs[0]];
    const Shape& ids = plan.shapes[nd.inputs[1]];
    // the dims the ids index: one (gather, gatherElements: the axis) or the first k (gatherND)
    size_t first = nd.axis, k = 1;
    if (nd.type == NodeType::WXGatherND) first = 0, k = ids.empty() ? 0 : ids.back();
    if (k == 0 || first + k > data.size()) continue;  // shape inference refused such nodes
    const bool wrap = nd.flags & kFlagIndicesWrap;
    int64_t lo[kMaxRank], hi[kMaxRank];
    for (size_t j = 0; j < k; ++j) {
      hi[j] = static_cast<int64_t>(data[first + j]) - 1;
      lo[j] = wrap ? -hi[j] - 1 : 0;
    }
    const size_t n = numel(plan.shapes[src]);
    std::pair<int64_t, int64_t> bad{-1, 0};
    const void* p = inputs[slot];
    switch (model_.values[src].dtype) {
      case DType::kWxInt64: bad = first_out_of_range<int64_t>(p, n, k, lo, hi); break;
      case DType::kInt32: bad = first_out_of_range<int32_t>(p, n, k, lo, hi); break;
      case DType::kWxUint32: bad = first_out_of_range<uint32_t>(p, n, k, lo, hi); break;
      default: break;  // WebNN's index types are the three above; webxnn writes no flag on others
    }
    if (bad.first < 0) continue;
    const size_t j = static_cast<size_t>(bad.first) % k;
    input_error("input '" + inputs_[slot].name + "': element " + str(bad.first) + " is " +
                std::to_string(bad.second) + ", outside " + std::to_string(lo[j]) + ".." +
                std::to_string(hi[j]) + " (dim " + str(first + j) + " of the data it indexes has " +
                str(data[first + j]) + ")");
  }
}

void Program::run(const Plan& plan, const void* const* inputs, void* const* outputs, uint64_t* step_ns,
                  uint64_t* step_wait_ns) const {
  check_gather_indices(plan, inputs);
  // Workers or not (runtime/run_mode.h; profiled runs always use them: they show what the workers cost).
  const bool adaptive = !step_ns && pool_->size() > 1 && RunMode::enabled();
  const bool solo = adaptive && plan.run_mode.pick_solo();
  // First: the workers are ours (sleeping ones wake up while we prepare), or another caller holds them and
  // we run inline beside it (a guest), or, with more callers than threads, we wait for our turn.
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
  // (A run that failed is no figure, nor one made beside another caller: it ran inline whatever was asked.)
  if (adaptive && session.alone()) {
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
