// Planning: which nodes run as which steps (fusions), which values share storage, where each value lives in
// the arena, which steps run serially and which prefetch weights for a later one. How a node takes part is
// its node table row's traits (node_table.h); the rules here are about steps, not node types.
#include <algorithm>
#include <cmath>

#include "runtime/arena_layout.h"
#include "runtime/node_table.h"
#include "runtime/program.h"

namespace webxnn {
namespace {

bool act_is_none(const Activation& a) { return std::isinf(a.min) && a.min < 0 && std::isinf(a.max) && a.max > 0; }

const NodeDef& def(const Node& nd) { return node_def(nd.type); }

// Storage groups: a union-find over values whose root owns the storage every member shares.
struct Groups {
  std::vector<uint32_t> parent;
  uint32_t find(uint32_t v) {
    while (parent[v] != v) {
      parent[v] = parent[parent[v]];
      v = parent[v];
    }
    return v;
  }
};

// A 1x1, stride-1, unpadded convolution of one group (a GEMM over pixels).
bool is_pointwise(const ConvParams& c) {
  return c.kernel_h == 1 && c.kernel_w == 1 && c.stride_h == 1 && c.stride_w == 1 && c.groups == 1 &&
         !c.pad_top && !c.pad_right && !c.pad_bottom && !c.pad_left;
}

}  // namespace

// Decides what runs (steps), which Adds fuse into the Conv2d / FullyConnected before them, which values share
// storage, and where every value lives. `shapes` are the plan's value shapes.
std::shared_ptr<Plan> Program::make_plan(std::vector<Shape> shapes) const {
  auto plan = std::make_shared<Plan>();
  plan->shapes = std::move(shapes);
  std::vector<int64_t> last_use = last_use_;
  plan_steps(*plan, last_use);
  return plan;
}

void Program::plan_steps(Plan& plan, std::vector<int64_t>& last_use) const {
  const size_t nv = model_.values.size();
  const size_t nn = model_.nodes.size();
  const std::vector<Shape>& shapes = plan.shapes;
  auto bytes_of = [&](uint32_t v) { return value_bytes(model_.values[v], shapes[v]); };
  // Values that need arena memory of their own: computed, not graph inputs/outputs, not constants.
  auto computed = [&](uint32_t v) {
    const Value& val = model_.values[v];
    return !val.is_constant && val.flags == 0 && producer_[v] >= 0;
  };
  // A value with its own fixed memory: a constant or a graph input/output.
  auto fixed = [&](uint32_t v) {
    const Value& val = model_.values[v];
    return val.is_constant || val.flags != 0;
  };

  // 1. Fusion of a conv / FC into its only consumer, which then runs as one step at the consumer's position
  // (so the conv's inputs must live until then); the conv's output never materializes.
  //  * Residual: Add(p, r) where p is a Conv2d / FullyConnected output with no activation of its own, and p,
  //    r and the sum all of one shape.
  //  * Activation: HardSwish / Sigmoid / Gelu of a Conv2d / DepthwiseConv2d / FullyConnected output (its
  //    clamp, if any, comes first, as unfused), applied by the kernel to each output tile while in cache.
  //  * Expand -> depthwise (MobileNet blocks): a pointwise Conv2d (1x1, stride 1, unpadded, one group) read
  //    only by a DepthwiseConv2d with depth multiplier 1; the depthwise step computes the expanded rows it
  //    needs (`pre`), and may itself fuse into its activation.
  //  * NCHW image -> Conv2d: a StaticTranspose (0, 2, 3, 1) read only by a Conv2d whose kernel table reads
  //    planes as fast (an ONNX model's RGB stem); the conv reads the transpose's input in place.
  std::vector<uint32_t> fused_into(nn, kNoValue);  // conv/FC node -> the consumer node
  std::vector<Step> fused(nn);                     // consumer node -> its fused step
  std::vector<uint32_t> pre_of(nn, kNoValue);      // depthwise node -> its fused pointwise producer
  std::vector<uint32_t> pre_act_of(nn, kNoValue);  // depthwise node -> the activation after that producer
  std::vector<uint32_t> dw_of(nn, kNoValue);       // pointwise conv node -> its fused depthwise producer
  std::vector<uint32_t> dw_act_of(nn, kNoValue);   // pointwise conv node -> the activation after that producer
  std::vector<uint32_t> transpose_of(nn, kNoValue);  // Conv2d node -> the NCHW -> NHWC transpose it reads through
  std::vector<bool> elided(nv, false);             // the values that never materialize
  // The node producing pv if pv can stay inside a fused step (a computed fp32 value with one reader, made by a
  // node that runs, with weights packed at load, from an fp32 input), else -1.
  auto sole_producer = [&](uint32_t pv) -> int64_t {
    if (!computed(pv) || consumers_[pv] != 1 || model_.values[pv].dtype != DType::kFp32) return -1;
    const size_t j = static_cast<size_t>(producer_[pv]);
    const Node& cv = model_.nodes[j];
    if (cv.folded || needs_run_packing(j) || model_.values[cv.inputs[0]].dtype != DType::kFp32) return -1;
    return static_cast<int64_t>(j);
  };
  auto fusable = [&](uint32_t pv, bool residual) -> int64_t {  // the producer of pv if it can fuse, else -1
    const int64_t j = sole_producer(pv);
    if (j < 0 || fused_into[static_cast<size_t>(j)] != kNoValue) return -1;
    const Node& cv = model_.nodes[static_cast<size_t>(j)];
    const bool kind = def(cv).has(residual ? kTakesResidual : kTakesActivation);
    if (!kind || (residual && !act_is_none(cv.act))) return -1;
    return j;
  };
  auto inputs_live_until = [&](size_t j, size_t i) {  // node j runs at node i's position
    for (uint32_t in : model_.nodes[j].inputs) {
      if (in != kNoValue) last_use[in] = std::max<int64_t>(last_use[in], static_cast<int64_t>(i));
    }
  };
  auto fuse = [&](size_t i, size_t j, uint32_t pv, uint32_t residual) {
    fused_into[j] = static_cast<uint32_t>(i);
    fused[i].node = static_cast<uint32_t>(j);
    fused[i].into = static_cast<uint32_t>(i);
    fused[i].residual = residual;
    fused[i].pre = pre_of[j];
    fused[i].pre_act = pre_act_of[j];
    fused[i].dw = dw_of[j];
    fused[i].dw_act = dw_act_of[j];
    fused[i].transpose = transpose_of[j];
    elided[pv] = true;
    inputs_live_until(j, i);
    if (pre_of[j] != kNoValue) inputs_live_until(pre_of[j], i);
    if (dw_of[j] != kNoValue) inputs_live_until(dw_of[j], i);
    if (transpose_of[j] != kNoValue) inputs_live_until(transpose_of[j], i);
  };
  // Only where the tensor between two fused steps would not stay in L2 (~1 MB per core here) from one step to
  // the next: on small maps the row-by-row pointwise GEMM (M = one row of pixels) re-reads its weights for
  // every row and loses more than the memory traffic saves (MobileNetV2: 112x112x96 and 56x56x144 fuse;
  // 28x28x192 and smaller maps run faster apart).
  constexpr size_t kMinFusedBytes = size_t{1} << 20;
  // The node of `type` making pv for a fused block step (see dwconv2d_fused): pv's only producer, directly or
  // through an activation it already fused into (*act: that activation node, else kNoValue); else -1.
  auto block_producer = [&](uint32_t pv, NodeTrait role, uint32_t* act) -> int64_t {
    if (!kernels_->dwconv2d_fused || shapes[pv].size() != 4 || bytes_of(pv) < kMinFusedBytes) return -1;
    const int64_t p = sole_producer(pv);
    if (p < 0) return -1;
    size_t j = static_cast<size_t>(p);
    *act = kNoValue;
    if (def(model_.nodes[j]).post_op != PostOp::kNone && fused[j].into == j) {
      *act = static_cast<uint32_t>(j);  // the node it runs (fused[j].node) passed sole_producer when it fused
      j = fused[j].node;
    }
    if (!def(model_.nodes[j]).has(role) || fused_into[j] != *act || transpose_of[j] != kNoValue) return -1;
    return static_cast<int64_t>(j);
  };
  // The block's expand: the pointwise conv making a depthwise node's input, if the two can run as one step.
  auto pointwise_producer = [&](const Node& dw, uint32_t* act) -> int64_t {
    if (dw.conv.group_output_channels != 1) return -1;
    const int64_t j = block_producer(dw.inputs[0], kBlockConv, act);
    return j >= 0 && is_pointwise(model_.nodes[static_cast<size_t>(j)].conv) ? j : -1;
  };
  // The block's depthwise: the depthwise node making pointwise conv i's input (its project), if the two can
  // run as one step.
  auto depthwise_producer = [&](size_t i, uint32_t* act) -> int64_t {
    const Node& cv = model_.nodes[i];
    if (!is_pointwise(cv.conv) || needs_run_packing(i)) return -1;
    const int64_t d = block_producer(cv.inputs[0], kBlockDepthwise, act);
    return d >= 0 && model_.nodes[static_cast<size_t>(d)].conv.group_output_channels == 1 ? d : -1;
  };
  // The image transpose (NCHW -> NHWC) making Conv2d node i's input, if the conv can read its planes instead.
  auto planes_producer = [&](size_t i) -> int64_t {
    static const uint32_t kToNhwc[4] = {0, 2, 3, 1};
    const Node& cv = model_.nodes[i];
    const int64_t t = sole_producer(cv.inputs[0]);
    if (t < 0 || !kernels_->conv2d_reads_nchw || !kernels_->conv2d_reads_nchw(cv.conv)) return -1;
    const Node& tn = model_.nodes[static_cast<size_t>(t)];
    const bool nhwc = def(tn).has(kImageTranspose) && tn.ints_a.size() == 4 &&
                      std::equal(kToNhwc, kToNhwc + 4, tn.ints_a.begin());
    return nhwc && shapes[tn.inputs[0]].size() == 4 ? t : -1;
  };
  // Node i's step absorbs the step of the activation node act (if any) that a producer had fused into.
  auto absorb_act = [&](uint32_t act, size_t i) {
    if (act == kNoValue) return;
    fused[act] = Step();
    fused_into[act] = static_cast<uint32_t>(i);
  };
  for (size_t i = 0; i < nn; ++i) {
    const Node& nd = model_.nodes[i];
    if (nd.folded || nd.outputs.size() != 1) continue;
    const uint32_t out = nd.outputs[0];
    if (model_.values[out].dtype != DType::kFp32 || numel(shapes[out]) == 0) continue;
    const NodeDef& d = def(nd);
    if (d.has(kBlockConv)) {
      const int64_t t = needs_run_packing(i) ? -1 : planes_producer(i);
      if (t >= 0) {  // the transpose becomes part of this step (or of the step this conv fuses into)
        fused_into[static_cast<size_t>(t)] = static_cast<uint32_t>(i);
        transpose_of[i] = static_cast<uint32_t>(t);
        elided[nd.inputs[0]] = true;
        inputs_live_until(static_cast<size_t>(t), i);
        continue;
      }
      uint32_t act = kNoValue;
      const int64_t d = depthwise_producer(i, &act);
      if (d >= 0) {  // the depthwise step (its expand and activations too) becomes part of this one
        const size_t dn = static_cast<size_t>(d);
        fused_into[dn] = static_cast<uint32_t>(i);
        absorb_act(act, i);
        dw_of[i] = static_cast<uint32_t>(dn);
        dw_act_of[i] = act;
        pre_of[i] = pre_of[dn];
        pre_act_of[i] = pre_act_of[dn];
        elided[nd.inputs[0]] = true;
        inputs_live_until(dn, i);
        if (pre_of[dn] != kNoValue) inputs_live_until(pre_of[dn], i);
      }
      continue;
    }
    if (d.has(kBlockDepthwise)) {
      uint32_t act = kNoValue;
      const int64_t j = needs_run_packing(i) ? -1 : pointwise_producer(nd, &act);
      if (j >= 0) {  // the expand step (and its activation) becomes part of this one
        fused_into[static_cast<size_t>(j)] = static_cast<uint32_t>(i);
        absorb_act(act, i);
        pre_of[i] = static_cast<uint32_t>(j);
        pre_act_of[i] = act;
        elided[nd.inputs[0]] = true;
        inputs_live_until(static_cast<size_t>(j), i);
      }
      continue;
    }
    if (d.post_op != PostOp::kNone && nd.inputs.size() == 1) {
      const int64_t j = fusable(nd.inputs[0], false);
      if (j >= 0) fuse(i, static_cast<size_t>(j), nd.inputs[0], kNoValue);
      continue;
    }
    if (!d.has(kResidualAdd) || nd.inputs.size() != 2) continue;
    for (size_t k = 0; k < 2; ++k) {
      const uint32_t pv = nd.inputs[k], rv = nd.inputs[1 - k];
      if (pv == rv || shapes[pv] != shapes[out] || shapes[rv] != shapes[out]) continue;
      const int64_t j = fusable(pv, true);
      if (j < 0) continue;
      fuse(i, static_cast<size_t>(j), pv, rv);
      break;
    }
  }

  // 2. Steps and storage groups, in node order. glast[root]: the last node reading any member of the group.
  Groups g;
  g.parent.resize(nv);
  std::vector<int64_t> glast(nv, -1);
  for (uint32_t v = 0; v < nv; ++v) {
    g.parent[v] = v;
    glast[v] = std::max<int64_t>(last_use[v], producer_[v]);
  }
  auto join = [&](uint32_t member, uint32_t root) {  // member is a fresh output (its own root so far)
    g.parent[member] = root;
    glast[root] = std::max(glast[root], glast[member]);
  };
  for (size_t i = 0; i < nn; ++i) {
    const Node& nd = model_.nodes[i];
    if (nd.folded || fused_into[i] != kNoValue) continue;
    bool empty = false;
    for (uint32_t out : nd.outputs) empty = empty || numel(shapes[out]) == 0;
    if (empty) continue;
    if (fused[i].into != kNoValue) {
      plan.steps.push_back(fused[i]);
      continue;
    }
    const uint32_t out = nd.outputs[0];
    const NodeDef& d = def(nd);
    const bool view = d.has(kView);
    if (view && nd.outputs.size() == 1 && bytes_of(nd.inputs[0]) == bytes_of(out)) {
      const uint32_t rx = g.find(nd.inputs[0]);
      const Value& ov = model_.values[out];
      if (computed(out) && (computed(rx) || fixed(rx)) && !elided[rx]) {
        // The output shares the input's storage (an arena slot, or a constant / graph input / output).
        join(out, rx);
        plan.aliased_nodes.push_back(static_cast<uint32_t>(i));
        continue;
      }
      if (ov.flags == kFlagExternalOutput && computed(rx)) {
        // Graph output = reshape(x): the whole group of x is computed straight into the output buffer.
        g.parent[rx] = out;
        glast[out] = std::max(glast[out], glast[rx]);
        plan.aliased_nodes.push_back(static_cast<uint32_t>(i));
        continue;
      }
    }
    Step st;
    st.node = static_cast<uint32_t>(i);
    st.pre = pre_of[i];
    st.pre_act = pre_act_of[i];
    st.dw = dw_of[i];
    st.dw_act = dw_act_of[i];
    st.transpose = transpose_of[i];
    plan.steps.push_back(st);
    // In place: an element-wise fp32 node may write over an input of its size that no later node reads.
    if (!d.in_place || !d.in_place(model_, nd) || !computed(out)) continue;
    for (size_t k = 0; k < nd.inputs.size(); ++k) {
      const uint32_t x = nd.inputs[k];
      const uint32_t rx = g.find(x);
      if (!computed(rx) || glast[rx] != static_cast<int64_t>(i) || bytes_of(x) != bytes_of(out)) continue;
      bool shared = false;  // another operand lives there too
      for (size_t j = 0; j < nd.inputs.size(); ++j) shared = shared || (j != k && g.find(nd.inputs[j]) == rx);
      if (shared) continue;
      join(out, rx);
      break;
    }
  }

  // 3. Memory: one arena slot per computed group root, placed by size and lifetime (arena_layout.cc); centred
  // in slots when several threads split each op's rows.
  plan.offsets.assign(nv, Plan::kNotInArena);
  plan.alias.assign(nv, kNoValue);
  std::vector<ArenaTensor> ts;
  for (uint32_t v = 0; v < nv; ++v) {
    if (g.find(v) != v || !computed(v) || elided[v]) continue;
    const size_t start = static_cast<size_t>(producer_[v]);
    const size_t end = std::max<size_t>(start, static_cast<size_t>(std::max<int64_t>(glast[v], 0)));
    ts.push_back({v, align_up(bytes_of(v) + kTensorSlack, kArenaAlignment), start, end, 0});
  }
  const size_t arena = place_tensors(ts, nn, threads() > 1);
  for (const ArenaTensor& t : ts) plan.offsets[t.value] = t.offset;
  for (uint32_t v = 0; v < nv; ++v) {
    const uint32_t r = g.find(v);
    if (r == v) continue;
    if (plan.offsets[r] != Plan::kNotInArena) plan.offsets[v] = plan.offsets[r];
    else plan.alias[v] = r;
  }
  plan.arena_bytes = arena;
  for (Step& st : plan.steps) st.serial = small_step(plan, st);
  plan_ahead(plan);
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
  constexpr size_t kAheadMaxRows = 8;                 // rows of the FC: each weight used at most this often
  constexpr size_t kAheadMinBytes = size_t(1) << 20;  // smaller weights stay in L2 / L3 between runs
  for (size_t f = 1; f < plan.steps.size(); ++f) {
    const uint32_t fc = plan.steps[f].node;
    const Node& fn = model_.nodes[fc];
    if (!def(fn).has(kPrefetched) || !packed_ptr_[fc] ||
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
      if (!def(cn).has(kBlockConv)) continue;
      if (!is_pointwise(cn.conv) || st.dw != kNoValue || st.transpose != kNoValue || st.ahead != kNoValue ||
          st.serial) {
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
  constexpr double kMinParallelMacs = 1e5;                // multiply-adds of GEMM / convolution steps
  const Node& nd = model_.nodes[st.node];
  const NodeDef& d = def(nd);
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
