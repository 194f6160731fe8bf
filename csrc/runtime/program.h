// A loaded, verified and planned program. Immutable after load: run() may be called from several threads
// at once (each call allocates its own arena).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/thread_pool.h"
#include "runtime/memory.h"
#include "runtime/model.h"
#include "runtime/plan.h"

namespace webxnn {

struct Fusions;        // plan_fusion.h
struct StorageGroups;  // plan.cc

// Element types of graph inputs and outputs, numbered like wx_dtype (include/webxnn/runtime.h).
enum class PublicDType : int {
  kFloat32 = 1,
  kFloat16 = 2,
  kInt8 = 3,
  kUint8 = 4,
  kInt32 = 5,
  kUint32 = 6,
  kInt64 = 7,
  kUint64 = 8,
};
const char* public_dtype_name(PublicDType t);  // WebNN names: "float32", "int8", ...
size_t public_dtype_size(PublicDType t);

struct TensorInfo {
  std::string name;
  PublicDType dtype;
  Shape shape;  // as declared in the blob (a dynamic dim holds its maximum)
  std::vector<std::string> dynamic;  // inputs: per dim, the dynamic dim's name, or "" when fixed
  std::vector<bool> is_dynamic;      // inputs: per dim, whether it may vary (1..shape[d])
};

struct LoadOptions {
  size_t threads = 0;  // 0 = std::thread::hardware_concurrency(); ignored with shared_pool
  int64_t spin_us = -1;  // how long the pool's threads poll before sleeping (-1 = ThreadPool's default)
  bool shared_pool =
      false;  // run on the process's shared pool (runtime/shared_pool.h), not a pool of its own
};

// Per-step wall time of one run (Program::run with a profile).
struct StepTime {
  uint32_t step = 0;
  uint64_t ns = 0;
};

class Program {
 public:
  static std::shared_ptr<Program> load_bytes(const void* data, size_t size, const LoadOptions& opts);
  // Like load_bytes without the copy: `data` must stay unchanged while `owner` is alive (the Program keeps it).
  static std::shared_ptr<Program> load_borrowed(const void* data, size_t size, std::shared_ptr<void> owner,
                                                const LoadOptions& opts);
  static std::shared_ptr<Program> load_file(const std::string& path, const LoadOptions& opts);
  ~Program();

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  size_t peak_arena_bytes() const { return base_plan_->arena_bytes; }
  size_t packed_weight_bytes() const { return packed_all_.size(); }
  // The plan for the declared input shapes.
  const Plan& base_plan() const { return *base_plan_; }
  size_t threads() const { return pool_->size(); }
  uint32_t spin_us() const { return pool_->spin_us(); }
  bool shared_pool() const { return shared_pool_; }
  const char* kernels_name() const { return kernels_->name; }
  const Model& model() const { return model_; }

  // The plan for these input shapes (the load-time plan when they equal the declared shapes). Throws
  // Error(kInput) naming the input when the graph cannot take them.
  std::shared_ptr<const Plan> plan_for(const std::vector<Shape>& input_shapes) const;
  std::vector<Shape> output_shapes(const Plan& plan) const;
  // Bytes of output k under `plan`.
  size_t output_bytes(const Plan& plan, size_t k) const;

  // Runs with dense row-major inputs of plan's shapes; outputs[i] must hold numel(plan output i) elements.
  // With `step_ns` (plan.steps.size() entries), each step's wall time in nanoseconds is added to it; with
  // `step_wait_ns` too, the time the calling thread waited at the step's barriers for the pool's workers.
  // Runs of Programs on one pool share its threads (ThreadPool::Session: one holds the workers, others run
  // inline beside it); single-threaded ones need nothing shared.
  void run(const Plan& plan, const void* const* inputs, void* const* outputs, uint64_t* step_ns = nullptr,
           uint64_t* step_wait_ns = nullptr) const;

 private:
  Program() = default;
  // program.cc: loading
  void init(std::shared_ptr<BlobStorage> blob, const LoadOptions& opts);
  void check_supported(size_t node) const;
  void check_input_shapes(const std::vector<Shape>& input_shapes) const;
  // fold.cc, pack.cc: constants evaluated and weights packed at load
  void fold_constants(const std::vector<Shape>& shapes);
  bool needs_run_packing(size_t node) const;
  void pack_weights();
  // plan.cc: steps, storage, prefetch; plan_fusion.cc: fusion
  friend class FusionPlanner;
  std::shared_ptr<Plan> make_plan(std::vector<Shape> shapes) const;
  Fusions plan_fusions(const std::vector<Shape>& shapes, std::vector<int64_t>& last_use) const;
  StorageGroups plan_storage(Plan& plan, const Fusions& f, const std::vector<int64_t>& last_use) const;
  void place_values(Plan& plan, StorageGroups& g, const std::vector<bool>& elided) const;
  bool small_step(const Plan& plan, const Step& s) const;
  void plan_ahead(Plan& plan) const;
  // A value computed by a node, neither a constant nor a graph input / output: it needs storage of its own.
  bool computed(uint32_t v) const;
  // run.cc: execution and arenas
  void check_gather_indices(const Plan& plan, const void* const* inputs) const;
  void exec_node(size_t i, const Plan& plan, void* const* ptrs, Parallel& par,
                 const Step* step = nullptr) const;
  AlignedBuffer acquire_arena(size_t bytes) const;
  void release_arena(AlignedBuffer buf) const;

  std::shared_ptr<BlobStorage> blob_;
  Model model_;
  const KernelTable* kernels_ = nullptr;
  std::vector<TensorInfo> inputs_, outputs_;
  AlignedBuffer packed_all_;  // every node's packed weights
  std::vector<const void*> packed_ptr_;  // per node: its slice of packed_all_, or null
  std::vector<size_t> packed_size_;  // per node: bytes of that slice (0 when null)
  std::vector<int64_t> producer_;  // per value: producing node, or -1
  std::vector<int64_t> last_use_;  // per value: last node reading it, or -1
  std::vector<uint32_t> consumers_;  // per value: how many input slots of non-folded nodes read it
  // Gathers (WXGather, WXGatherElements, WXGatherND) whose indices, a graph input or a reshape of one, are
  // checked before each run: (node, graph input slot). Found at load, so a run does not scan the nodes.
  std::vector<std::pair<size_t, size_t>> checked_gathers_;
  std::shared_ptr<const Plan> base_plan_;
  std::shared_ptr<ThreadPool> pool_;
  bool shared_pool_ = false;

  // Arenas of finished runs, reused by the next run (one per concurrent run at most).
  mutable std::mutex arena_mutex_;
  mutable std::vector<AlignedBuffer> free_arenas_;

  // Plans for other input shapes, a small cache (oldest evicted first).
  mutable std::mutex cache_mutex_;
  mutable std::map<std::vector<Shape>, std::shared_ptr<const Plan>> cache_;
  mutable std::vector<std::vector<Shape>> cache_order_;
};

}  // namespace webxnn
