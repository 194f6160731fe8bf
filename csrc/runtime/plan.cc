// Planning: which nodes run as which steps (the fusions are decided in plan_fusion.cc), which values share
// storage, where each value lives in the arena, which steps run serially and which prefetch weights for a
// later one. How a node takes part is its node table row's traits (node_table.h); the rules here are about
// steps, not node types.
#include <algorithm>

#include "runtime/arena_layout.h"
#include "runtime/node_table.h"
#include "runtime/plan_fusion.h"
#include "runtime/program.h"

namespace webxnn {
// Storage groups: a union-find over values whose root owns the storage every member shares. last[root]: the
// last node reading any member of the group (after which its storage is free).
struct StorageGroups {
  std::vector<uint32_t> parent;
  std::vector<int64_t> last;
  uint32_t find(uint32_t v) {
    while (parent[v] != v) {
      parent[v] = parent[parent[v]];
      v = parent[v];
    }
    return v;
  }
  // `member` (its own root so far) joins root's group: it now shares that storage.
  void join(uint32_t member, uint32_t root) {
    parent[member] = root;
    last[root] = std::max(last[root], last[member]);
  }
};

bool Program::computed(uint32_t v) const {
  const Value& val = model_.values[v];
  return !val.is_constant && val.flags == 0 && producer_[v] >= 0;
}

// A plan, top to bottom: what fuses (plan_fusion.cc), then the steps and what shares storage, then where every
// value lives, then which steps run serially and which prefetch. `shapes` are the plan's value shapes.
std::shared_ptr<Plan> Program::make_plan(std::vector<Shape> shapes) const {
  auto plan = std::make_shared<Plan>();
  plan->shapes = std::move(shapes);
  std::vector<int64_t> last_use =
      last_use_;  // fusions extend it: a fused node runs at its consumer's position
  const Fusions fusions = plan_fusions(plan->shapes, last_use);
  StorageGroups groups = plan_storage(*plan, fusions, last_use);
  place_values(*plan, groups, fusions.elided);
  for (Step& st : plan->steps) st.serial = small_step(*plan, st);
  plan_ahead(*plan);
  return plan;
}

// The steps in node order, and the storage groups, decided as the steps are emitted (whether a node may write
// over an input depends on who reads that input's group later):
//  * a view (StaticReshape, Copy) of a stored value shares its storage and runs no step; a view making a graph
//    output from a computed value has that value's whole group computed straight into the output buffer;
//  * an element-wise node (NodeDef::in_place) writes over an input of its size that no later node reads.
StorageGroups Program::plan_storage(Plan& plan, const Fusions& f,
                                    const std::vector<int64_t>& last_use) const {
  const size_t nv = model_.values.size();
  auto bytes_of = [&](uint32_t v) { return value_bytes(model_.values[v], plan.shapes[v]); };
  StorageGroups g;
  g.parent.resize(nv);
  g.last.resize(nv);
  for (uint32_t v = 0; v < nv; ++v) {
    g.parent[v] = v;
    g.last[v] = std::max<int64_t>(last_use[v], producer_[v]);
  }
  for (size_t i = 0; i < model_.nodes.size(); ++i) {
    const Node& nd = model_.nodes[i];
    if (nd.folded || f.fused_into[i] != kNoValue) continue;
    bool empty = false;
    for (uint32_t out : nd.outputs) empty = empty || numel(plan.shapes[out]) == 0;
    if (empty) continue;
    const Step& st = f.at[i];
    if (st.into != kNoValue) {  // a fused consumer: its producer's step writes its output
      plan.steps.push_back(st);
      continue;
    }
    const uint32_t out = nd.outputs[0];
    const NodeDef& d = node_def(nd);
    if (d.has(kView) && nd.outputs.size() == 1 && bytes_of(nd.inputs[0]) == bytes_of(out)) {
      const uint32_t rx = g.find(nd.inputs[0]);
      const Value& rv = model_.values[rx];
      if (computed(out) && (computed(rx) || rv.is_constant || rv.flags != 0) && !f.elided[rx]) {
        // The output shares the input's storage (an arena slot, or a constant / graph input / output).
        g.join(out, rx);
        plan.aliased_nodes.push_back(static_cast<uint32_t>(i));
        continue;
      }
      if (model_.values[out].flags == kFlagExternalOutput && computed(rx)) {
        g.join(rx, out);  // graph output = reshape(x): x's group is computed into the output buffer
        plan.aliased_nodes.push_back(static_cast<uint32_t>(i));
        continue;
      }
    }
    plan.steps.push_back(st);
    if (!d.in_place || !d.in_place(model_, nd) || !computed(out)) continue;
    for (size_t k = 0; k < nd.inputs.size(); ++k) {
      const uint32_t x = nd.inputs[k];
      const uint32_t rx = g.find(x);
      if (!computed(rx) || g.last[rx] != static_cast<int64_t>(i) || bytes_of(x) != bytes_of(out)) continue;
      bool shared = false;  // another operand lives there too
      for (size_t j = 0; j < nd.inputs.size(); ++j) shared = shared || (j != k && g.find(nd.inputs[j]) == rx);
      if (shared) continue;
      g.join(out, rx);
      break;
    }
  }
  return g;
}

// Memory: one arena slot per computed group root that is stored, placed by size and lifetime
// (arena_layout.cc; centred in slots when several threads split each op's rows). Other members take their
// root's slot, or, when the root is a graph input / output or constant, its pointer (Plan::alias).
void Program::place_values(Plan& plan, StorageGroups& g, const std::vector<bool>& elided) const {
  const size_t nv = model_.values.size();
  plan.offsets.assign(nv, Plan::kNotInArena);
  plan.alias.assign(nv, kNoValue);
  std::vector<ArenaTensor> ts;
  for (uint32_t v = 0; v < nv; ++v) {
    if (g.find(v) != v || !computed(v) || elided[v]) continue;
    const size_t start = static_cast<size_t>(producer_[v]);
    const size_t end = std::max<size_t>(start, static_cast<size_t>(std::max<int64_t>(g.last[v], 0)));
    const size_t bytes = value_bytes(model_.values[v], plan.shapes[v]);
    ts.push_back({v, align_up(bytes + kTensorSlack, kArenaAlignment), start, end, 0});
  }
  plan.arena_bytes = place_tensors(ts, model_.nodes.size(), threads() > 1);
  for (const ArenaTensor& t : ts) plan.offsets[t.value] = t.offset;
  for (uint32_t v = 0; v < nv; ++v) {
    const uint32_t r = g.find(v);
    if (r == v) continue;
    if (plan.offsets[r] != Plan::kNotInArena)
      plan.offsets[v] = plan.offsets[r];
    else
      plan.alias[v] = r;
  }
}

// Weights fetched ahead. A FullyConnected step on a few rows (a classifier on one image) reads each weight once
// or a few times: it runs at the speed of memory, and weights bigger than L2 come from L3 or, when the rest of
// the model pushed them out, from DRAM. The pointwise Conv2d steps just before it (up to kAheadConvs of them,
// within kAheadSteps steps, none fused with a depthwise) prefetch them while they compute, a share each, in the
// gaps of their FMA loops (ConvParams::ahead).
// MobileNetV2's 5 MB classifier after its 960 -> 320 and 320 -> 1280 convs and the global average pool; those
// four steps' per-step minimums on a contended machine: 802 -> 735 us at 1 thread, 482 -> 376 at 2 (the
// classifier 164 -> 87 and 135 -> 39 us). With the last conv prefetching it all, that conv ran 364 -> 409 us at
// 1 thread, the four steps 778.
void Program::plan_ahead(Plan& plan) const {
  constexpr size_t kAheadConvs = 2, kAheadSteps = 5;
  constexpr size_t kAheadMaxRows = 8;  // rows of the FC: each weight used at most this often
  constexpr size_t kAheadMinBytes = size_t(1) << 20;  // smaller weights stay in L2 / L3 between runs
  for (size_t f = 1; f < plan.steps.size(); ++f) {
    const uint32_t fc = plan.steps[f].node;
    const Node& fn = model_.nodes[fc];
    if (!node_def(fn).has(kPrefetched) || !packed_ptr_[fc] ||
        model_.values[fn.inputs[1]].dtype != DType::kFp32) {
      continue;
    }
    const Shape& x = plan.shapes[fn.inputs[0]];
    const size_t K = x.empty() ? 0 : x.back();
    if (K == 0 || numel(x) / K > kAheadMaxRows) continue;
    const size_t bytes = packed_size_[fc];
    if (bytes < kAheadMinBytes) continue;
    std::vector<Step*> convs;  // nearest first
    for (size_t s = f; s-- > 0 && s + kAheadSteps >= f && convs.size() < kAheadConvs;) {
      Step& st = plan.steps[s];
      const Node& cn = model_.nodes[st.node];
      if (!node_def(cn).has(kBlockConv)) continue;
      // int8 convs do not prefetch (qconv2d has no ConvParams::ahead): the chain of prefetchers ends there.
      if (!is_pointwise(cn.conv) || model_.values[cn.outputs[0]].dtype != DType::kFp32 || st.dw != kNoValue ||
          st.transpose != kNoValue || st.ahead != kNoValue || st.serial) {
        break;
      }
      convs.push_back(&st);
    }
    // In execution order, equal shares of the lines: the earlier conv the first share.
    const size_t lines = bytes / 64, n = convs.size();
    for (size_t j = 0; j < n; ++j) {
      Step& st = *convs[n - 1 - j];
      st.ahead = fc;
      st.ahead_offset = lines * j / n * 64;
      st.ahead_bytes = (lines * (j + 1) / n - lines * j / n) * 64;
    }
  }
}

// Steps so small that handing out tasks costs more than it saves run on the calling thread alone (a few µs
// of work: waking a worker costs about as much). Kernels size their own tiles above this.
bool Program::small_step(const Plan& plan, const Step& st) const {
  constexpr size_t kMinParallelBytes = size_t(32) << 10;  // output bytes of element-wise / layout steps
  constexpr double kMinParallelMacs = 1e5;  // multiply-adds of GEMM / convolution steps
  const Node& nd = model_.nodes[st.node];
  const NodeDef& d = node_def(nd);
  if (d.macs) return d.macs(model_, plan, nd) < kMinParallelMacs;
  // Reductions, pools and gathers read more than they write: count the biggest operand.
  const uint32_t out = nd.outputs[0];
  size_t bytes = value_bytes(model_.values[out], plan.shapes[out]);
  for (uint32_t in : nd.inputs) {
    if (in != kNoValue) bytes = std::max(bytes, value_bytes(model_.values[in], plan.shapes[in]));
  }
  return bytes < kMinParallelBytes;
}

}  // namespace webxnn
