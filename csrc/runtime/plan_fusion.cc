// Fusion: a node runs inside the step of the node reading its output, whose kernel computes it tile by tile
// while in cache; the tensor between them never materializes. Each rule below is one function of
// FusionPlanner; run() tries them per node, in node order, so a step can grow from one rule to the next
// (a conv that read an image transpose fuses into its activation; an expand fused into its depthwise goes
// with the depthwise into the project). A fused node runs at its consumer's position: its inputs live until
// then (last_use).
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "runtime/node_table.h"
#include "runtime/plan_fusion.h"
#include "runtime/program.h"
#include "runtime/strided_matrices.h"

namespace webxnn {
namespace {

// The fusion rules are fp32-only (the fused kernels' epilogues, the block kernel and the planes reader take
// fp32): a node with an operand of another datatype (an int8 conv, a Convert) neither fuses nor is fused --
// but for two int8 ones, exact like the steps they join: an int8 stem reading its image's planes, and the
// qint8 residual Add run in an int8 conv's / FC's epilogue.
bool all_fp32(const Model& m, const Node& nd) {
  for (const std::vector<uint32_t>* vs : {&nd.inputs, &nd.outputs}) {
    for (uint32_t v : *vs) {
      if (v != kNoValue && m.values[v].dtype != DType::kFp32) return false;
    }
  }
  return true;
}

bool act_is_none(const Activation& a) {
  return std::isinf(a.min) && a.min < 0 && std::isinf(a.max) && a.max > 0;
}

// An expand fuses into its depthwise only where the tensor between them would not stay in L2 (~1 MB per core
// here) from one step to the next: the fused depthwise computes each expanded row per task, the rows two tasks
// share twice, and on small maps that loses more than the memory traffic saves (MobileNetV2: 112x112x96 and
// 56x56x144 fuse, 28x28x192 and smaller maps run faster apart).
constexpr size_t kMinFusedBytes = size_t{1} << 20;
// A depthwise fuses into its project there too, or from 14 rows (images x output rows): the project runs on
// batches of rows (kernels/avx2/dwconv.cc, project_rows_for), as fast as apart, and the step between them goes
// (MobileNetV2, 2 threads: its 14x14 and 28x28 blocks 1.0-1.5 % of the run faster, 1 thread 0.9 %). On 7 rows
// a 2-thread split is 4 : 3, the project's rows with the depthwise's (apart, the GEMM splits its 49 pixels 25 :
// 24): its 7x7 blocks ran 20-35 us slower fused.
constexpr size_t kMinFusedRows = 14;

}  // namespace

bool is_pointwise(const ConvParams& c) {
  return c.kernel_h == 1 && c.kernel_w == 1 && c.stride_h == 1 && c.stride_w == 1 && c.groups == 1 &&
         !c.pad_top && !c.pad_right && !c.pad_bottom && !c.pad_left;
}

class FusionPlanner {
 public:
  FusionPlanner(const Program& p, const std::vector<Shape>& shapes, std::vector<int64_t>& last_use)
      : p_(p), m_(p.model_), shapes_(shapes), last_use_(last_use) {
    const size_t nn = m_.nodes.size();
    f_.at.resize(nn);
    for (size_t i = 0; i < nn; ++i) f_.at[i].node = static_cast<uint32_t>(i);
    f_.fused_into.assign(nn, kNoValue);
    f_.elided.assign(m_.values.size(), false);
  }

  Fusions run() {
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      const Node& nd = m_.nodes[i];
      if (nd.folded || nd.outputs.size() != 1) continue;
      const uint32_t out = nd.outputs[0];
      if (numel(shapes_[out]) == 0) continue;
      const NodeDef& d = node_def(nd);
      // int8 steps stay alone, but an int8 RGB stem may read its image's planes, and an int8 conv / FC may
      // write the residual Add after it (both bit for bit the steps apart).
      if (!all_fp32(m_, nd)) {
        if (d.has(kBlockConv)) {
          fuse_image_transpose(i);
        } else if (d.has(kResidualAdd) && nd.inputs.size() == 2) {
          fuse_into_q8_residual_add(i);
        }
        continue;
      }
      if (d.has(kBlockConv)) {
        if (!fuse_image_transpose(i)) fuse_depthwise_into_project(i);
      } else if (d.has(kBlockDepthwise)) {
        fuse_expand_into_depthwise(i);
      } else if (d.has(kStridedMatmul)) {
        fuse_operand_transposes(i);
      } else if (d.has(kTranspose)) {
        fuse_transpose_of_product(i);
      } else if (d.post_op != PostOp::kNone && nd.inputs.size() == 1) {
        fuse_into_activation(i);
      } else if (d.has(kResidualAdd) && nd.inputs.size() == 2) {
        fuse_into_residual_add(i);
      }
    }
    return std::move(f_);
  }

 private:
  // ---- the rules ----

  // NCHW image -> Conv2d: a StaticTranspose (0, 2, 3, 1) read only by a Conv2d whose kernel table reads planes
  // as fast (an ONNX model's RGB stem, fp32 or int8); the conv reads the transpose's input in place, the
  // transpose never runs.
  bool fuse_image_transpose(size_t i) {
    const int64_t t = p_.needs_run_packing(i) ? -1 : planes_producer(i);
    if (t < 0) return false;
    f_.fused_into[static_cast<size_t>(t)] = static_cast<uint32_t>(i);
    f_.at[i].transpose = static_cast<uint32_t>(t);
    f_.elided[m_.nodes[i].inputs[0]] = true;
    keep_inputs_live(static_cast<uint32_t>(t), i);
    return true;
  }

  // MobileNet block, depthwise -> project: pointwise Conv2d i computes the rows of its depthwise producer it
  // needs (and, through it, those of the block's expand, with the activations between).
  void fuse_depthwise_into_project(size_t i) {
    uint32_t act = kNoValue;
    const int64_t d = depthwise_producer(i, &act);
    if (d < 0) return;
    const size_t dn = static_cast<size_t>(d);
    f_.fused_into[dn] = static_cast<uint32_t>(i);
    absorb_act(act, i);
    Step& st = f_.at[i];
    st.dw = static_cast<uint32_t>(dn);
    st.dw_act = act;
    st.pre = f_.at[dn].pre;
    st.pre_act = f_.at[dn].pre_act;
    f_.elided[m_.nodes[i].inputs[0]] = true;
    keep_inputs_live(st.dw, i);
    keep_inputs_live(st.pre, i);
  }

  // MobileNet block, expand -> depthwise: a pointwise Conv2d (1x1, stride 1, unpadded, one group) read only by
  // a DepthwiseConv2d with depth multiplier 1; the depthwise step computes the expanded rows it needs (`pre`),
  // and may itself fuse into its activation.
  void fuse_expand_into_depthwise(size_t i) {
    uint32_t act = kNoValue;
    const int64_t j = p_.needs_run_packing(i) ? -1 : pointwise_producer(m_.nodes[i], &act);
    if (j < 0) return;
    f_.fused_into[static_cast<size_t>(j)] = static_cast<uint32_t>(i);
    absorb_act(act, i);
    f_.at[i].pre = static_cast<uint32_t>(j);
    f_.at[i].pre_act = act;
    f_.elided[m_.nodes[i].inputs[0]] = true;
    keep_inputs_live(static_cast<uint32_t>(j), i);
  }

  // Activation: HardSwish / Sigmoid / Gelu of a Conv2d / DepthwiseConv2d / FullyConnected output (its clamp, if
  // any, comes first, as unfused), applied by the kernel to each output tile while in cache.
  void fuse_into_activation(size_t i) {
    const uint32_t pv = m_.nodes[i].inputs[0];
    const int64_t j = fusable(pv, false);
    if (j >= 0) fuse(i, static_cast<size_t>(j), pv, kNoValue);
  }

  // Residual: Add(p, r) where p is a Conv2d / FullyConnected output with no activation of its own, and p, r
  // and the sum all of one shape; the kernel adds r to its output tiles.
  void fuse_into_residual_add(size_t i) {
    const Node& nd = m_.nodes[i];
    const Shape& out = shapes_[nd.outputs[0]];
    for (size_t k = 0; k < 2; ++k) {
      const uint32_t pv = nd.inputs[k], rv = nd.inputs[1 - k];
      if (pv == rv || shapes_[pv] != out || shapes_[rv] != out) continue;
      const int64_t j = fusable(pv, true);
      if (j < 0) continue;
      fuse(i, static_cast<size_t>(j), pv, rv);
      return;
    }
  }

  // int8 residual: a qint8 Add(p, r) where p is the qint8 output of a Conv2d / FullyConnected whose int8 kernel
  // has a residual epilogue (NodeDef::q8_residual), read by nothing else, and p, r and the sum all of one shape;
  // the kernel runs the Add on its requantized output tiles (qgemm_residual / qconv2d_residual: the same bits
  // as the two steps). The conv keeps its own clamp, the Add's (a Relu after it) applies to the sum.
  void fuse_into_q8_residual_add(size_t i) {
    const Node& nd = m_.nodes[i];
    if (m_.values[nd.outputs[0]].dtype != DType::kQint8) return;
    const Shape& out = shapes_[nd.outputs[0]];
    for (size_t k = 0; k < 2; ++k) {
      const uint32_t pv = nd.inputs[k], rv = nd.inputs[1 - k];
      if (pv == rv || shapes_[pv] != out || shapes_[rv] != out || m_.values[rv].dtype != DType::kQint8)
        continue;
      const int64_t j = sole_producer(pv, true);
      if (j < 0) continue;
      const size_t jn = static_cast<size_t>(j);
      const NodeDef& pd = node_def(m_.nodes[jn]);
      if (f_.fused_into[jn] != kNoValue || f_.at[jn].transpose != kNoValue || !pd.has(kTakesResidual) ||
          !pd.q8_residual || !pd.q8_residual(m_, m_.nodes[jn]) || m_.values[pv].dtype != DType::kQint8)
        continue;
      fuse(i, jn, pv, rv);
      return;
    }
  }

  // ---- who may fuse ----

  // The node producing pv if pv can stay inside a fused step (a computed fp32 value with one reader, made by
  // a node that runs, with weights packed at load, from an fp32 input; q8: an int8 value instead, from any
  // input), else -1.
  int64_t sole_producer(uint32_t pv, bool q8 = false) const {
    if (!p_.computed(pv) || p_.consumers_[pv] != 1 || (m_.values[pv].dtype != DType::kFp32) != q8) return -1;
    const size_t j = static_cast<size_t>(p_.producer_[pv]);
    const Node& cv = m_.nodes[j];
    if (cv.folded || p_.needs_run_packing(j) || (!q8 && !all_fp32(m_, cv))) return -1;
    return static_cast<int64_t>(j);
  }

  // The producer of pv if it can write a residual sum / an activation's output in its epilogue, else -1.
  int64_t fusable(uint32_t pv, bool residual) const {
    const int64_t j = sole_producer(pv);
    if (j < 0 || f_.fused_into[static_cast<size_t>(j)] != kNoValue) return -1;
    const Node& cv = m_.nodes[static_cast<size_t>(j)];
    const bool kind = node_def(cv).has(residual ? kTakesResidual : kTakesActivation);
    if (!kind || (residual && !act_is_none(cv.act))) return -1;
    return j;
  }

  // The node of `role` making pv for a fused block step (see dwconv2d_fused): pv's only producer, directly or
  // through an activation it already fused into (*act: that activation node, else kNoValue); else -1.
  int64_t block_producer(uint32_t pv, NodeTrait role, uint32_t* act) const {
    if (!p_.kernels_->dwconv2d_fused || shapes_[pv].size() != 4) return -1;
    const Shape& s = shapes_[pv];
    const bool fits = value_bytes(m_.values[pv], s) >= kMinFusedBytes ||
                      (role == kBlockDepthwise && s[0] * s[1] >= kMinFusedRows);
    if (!fits) return -1;
    const int64_t p = sole_producer(pv);
    if (p < 0) return -1;
    size_t j = static_cast<size_t>(p);
    *act = kNoValue;
    if (node_def(m_.nodes[j]).post_op != PostOp::kNone && f_.at[j].into == j) {
      *act = static_cast<uint32_t>(j);  // the node it runs (at[j].node) passed sole_producer when it fused
      j = f_.at[j].node;
    }
    if (!node_def(m_.nodes[j]).has(role) || f_.fused_into[j] != *act || f_.at[j].transpose != kNoValue)
      return -1;
    return static_cast<int64_t>(j);
  }

  // The block's expand: the pointwise conv making a depthwise node's input, if the two can run as one step.
  int64_t pointwise_producer(const Node& dw, uint32_t* act) const {
    if (dw.conv.group_output_channels != 1) return -1;
    const int64_t j = block_producer(dw.inputs[0], kBlockConv, act);
    return j >= 0 && is_pointwise(m_.nodes[static_cast<size_t>(j)].conv) ? j : -1;
  }

  // The block's depthwise: the depthwise node making pointwise conv i's input (its project), if the two can
  // run as one step.
  int64_t depthwise_producer(size_t i, uint32_t* act) const {
    const Node& cv = m_.nodes[i];
    if (!is_pointwise(cv.conv) || p_.needs_run_packing(i)) return -1;
    const int64_t d = block_producer(cv.inputs[0], kBlockDepthwise, act);
    return d >= 0 && m_.nodes[static_cast<size_t>(d)].conv.group_output_channels == 1 ? d : -1;
  }

  // The image transpose (NCHW -> NHWC) making Conv2d node i's input, if the conv can read its planes instead.
  // int8 (qconv2d): groups 1, since int8 convs of one channel per group run on qdwconv2d, which reads NHWC.
  int64_t planes_producer(size_t i) const {
    static const uint32_t kToNhwc[4] = {0, 2, 3, 1};
    const Node& cv = m_.nodes[i];
    const bool q8 = !all_fp32(m_, cv);
    if (q8 && (cv.conv.groups != 1 || m_.values[cv.outputs[0]].dtype == DType::kFp32)) return -1;
    const int64_t t = sole_producer(cv.inputs[0], q8);
    const KernelTable& k = *p_.kernels_;
    const auto reads = q8 ? k.qconv2d_reads_nchw : k.conv2d_reads_nchw;
    if (t < 0 || !reads || !reads(cv.conv)) return -1;
    const Node& tn = m_.nodes[static_cast<size_t>(t)];
    const bool nhwc = node_def(tn).has(kTranspose) && tn.ints_a.size() == 4 &&
                      std::equal(kToNhwc, kToNhwc + 4, tn.ints_a.begin());
    return nhwc && shapes_[tn.inputs[0]].size() == 4 ? t : -1;
  }

  // Attention's head split: a StaticTranspose read only by BatchMatrixMultiply i, whose output is a batch of
  // matrices in the transpose's input (strided_matrices.h); the product reads them there, and the transpose
  // never runs. MiniLM-L6 at 2 threads: 24 transposes of 12-14 us each.
  void fuse_operand_transposes(size_t i) {
    const Node& bm = m_.nodes[i];
    // x @ x: one transpose cannot be elided for one operand only
    if (bm.inputs[0] == bm.inputs[1] || !plain_batches(i)) return;
    for (size_t k = 0; k < 2; ++k) {
      const uint32_t pv = bm.inputs[k];
      const int64_t t = sole_producer(pv);
      if (t < 0) continue;
      const Node& tn = m_.nodes[static_cast<size_t>(t)];
      if (!node_def(tn).has(kTranspose) || f_.fused_into[static_cast<size_t>(t)] != kNoValue) continue;
      MatStrides ms;
      bool swapped;
      if (!as_matrices(shapes_[pv], strides_through_transpose(shapes_[tn.inputs[0]], tn.ints_a), &ms,
                       k == 1 ? &swapped : nullptr)) {
        continue;
      }
      f_.fused_into[static_cast<size_t>(t)] = static_cast<uint32_t>(i);
      f_.at[i].operand_transpose[k] = static_cast<uint32_t>(t);
      f_.elided[pv] = true;
      keep_inputs_live(static_cast<uint32_t>(t), i);
    }
  }

  // Attention's head merge: StaticTranspose i of a BatchMatrixMultiply's output (its only reader); the product
  // writes each matrix where the transpose would put it (strided_matrices.h) and the transpose never runs.
  void fuse_transpose_of_product(size_t i) {
    const Node& tn = m_.nodes[i];
    const uint32_t pv = tn.inputs[0];
    const int64_t j = sole_producer(pv);
    if (j < 0 || f_.fused_into[static_cast<size_t>(j)] != kNoValue) return;
    const size_t jn = static_cast<size_t>(j);
    if (!node_def(m_.nodes[jn]).has(kStridedMatmul) || !plain_batches(jn)) return;
    MatStrides ms;
    if (!as_matrices(shapes_[pv], strides_into_transpose(shapes_[tn.outputs[0]], tn.ints_a), &ms)) return;
    fuse(i, jn, pv, kNoValue);
  }

  // Whether each operand of BatchMatrixMultiply i has its product's batch dims or is a single matrix: only then
  // is every product's matrix one stride from the last (a partial broadcast, [2, 1, M, K] against 6 products,
  // is not).
  bool plain_batches(size_t i) const {
    const Node& bm = m_.nodes[i];
    const Shape& out = shapes_[bm.outputs[0]];
    for (size_t k = 0; k < 2; ++k) {
      const Shape& in = shapes_[bm.inputs[k]];
      size_t matrices = 1;
      for (size_t d = 0; d + 2 < in.size(); ++d) matrices *= in[d];
      const bool same = in.size() == out.size() && std::equal(in.begin(), in.end() - 2, out.begin());
      if (!same && matrices != 1) return false;
    }
    return true;
  }

  // ---- recording a fusion ----

  // Node j (when there is one) runs at node i's position: its inputs live until then.
  void keep_inputs_live(uint32_t j, size_t i) {
    if (j == kNoValue) return;
    for (uint32_t in : m_.nodes[j].inputs) {
      if (in != kNoValue) last_use_[in] = std::max<int64_t>(last_use_[in], static_cast<int64_t>(i));
    }
  }

  // Producer j's step (with whatever it already fused) writes consumer i's output; pv, between them, is elided.
  void fuse(size_t i, size_t j, uint32_t pv, uint32_t residual) {
    f_.fused_into[j] = static_cast<uint32_t>(i);
    Step& st = f_.at[i];
    st = f_.at[j];
    st.into = static_cast<uint32_t>(i);
    st.residual = residual;
    f_.elided[pv] = true;
    for (uint32_t n :
         {st.node, st.pre, st.dw, st.transpose, st.operand_transpose[0], st.operand_transpose[1]})
      keep_inputs_live(n, i);
  }

  // Node i's step absorbs the step of the activation node act (if any) that a producer had fused into.
  void absorb_act(uint32_t act, size_t i) {
    if (act == kNoValue) return;
    f_.at[act] = Step();
    f_.at[act].node = act;
    f_.fused_into[act] = static_cast<uint32_t>(i);
  }

  const Program& p_;
  const Model& m_;
  const std::vector<Shape>& shapes_;
  std::vector<int64_t>& last_use_;
  Fusions f_;
};

Fusions Program::plan_fusions(const std::vector<Shape>& shapes, std::vector<int64_t>& last_use) const {
  return FusionPlanner(*this, shapes, last_use).run();
}

}  // namespace webxnn
