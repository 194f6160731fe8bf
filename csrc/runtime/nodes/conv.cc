// Convolutions (NHWC, weights packed at load): Conv2d, DepthwiseConv2d, ConvTranspose2d. fp32: a step of one
// may carry fusions (plan_fusion.cc): the residual Add or activation after it, a MobileNet block's expand and
// depthwise before a pointwise project, the image transpose before a stem, weights it fetches ahead.
// int8 (Conv2d, DepthwiseConv2d: qint8 x qcint8 [+ qcint32] -> qint8, INT8_CONTRACT.md): the clamp is applied
// in the int8 domain by the kernel (qconv2d, qdwconv2d); a Conv2d on qconv2d may carry the image transpose
// before it or the qint8 residual Add after it (qconv2d_residual), a depthwise one nothing.
#include <algorithm>
#include <vector>

#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

void decode_conv(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::_XNNNodeConv*>(table);
  ConvParams& c = nd.conv;
  c.pad_top = t->padding_top();
  c.pad_right = t->padding_right();
  c.pad_bottom = t->padding_bottom();
  c.pad_left = t->padding_left();
  c.kernel_h = t->kernel_height();
  c.kernel_w = t->kernel_width();
  c.stride_h = t->subsampling_height();
  c.stride_w = t->subsampling_width();
  c.dilation_h = t->dilation_height();
  c.dilation_w = t->dilation_width();
  c.group_input_channels = t->group_input_channels();
  c.group_output_channels = t->group_output_channels();
  c.groups = t->groups();
  c.adjustment_h = t->adjustment_height();
  c.adjustment_w = t->adjustment_width();
  c.act = nd.act;
  nd.inputs = {d.ref("input1_id", t->input1_id()), d.ref("filter_id", t->filter_id()),
               d.ref("bias_id", t->bias_id(), true)};
  d.out_flags(t, nd);
}

// Conv2d also records its declared input size: its kernel table picks an algorithm by it at pack time.
void decode_conv2d(const NodeDecoder& d, const void* table, Node& nd) {
  decode_conv(d, table, nd);
  const Shape& in = d.dims(nd.inputs[0]);
  if (in.size() != 4) return;  // the shape pass says what is wrong
  nd.conv.input_h = static_cast<uint32_t>(std::min<size_t>(in[1], UINT32_MAX));
  nd.conv.input_w = static_cast<uint32_t>(std::min<size_t>(in[2], UINT32_MAX));
}

void conv_shapes(ShapeInference& s, bool depthwise, bool transposed) {
  const Node& nd = s.node();
  const ConvParams& c = nd.conv;
  auto hw = [](uint32_t h, uint32_t w) { return str(h) + "x" + str(w); };
  if (c.kernel_h == 0 || c.kernel_w == 0)
    s.fail("kernel size " + hw(c.kernel_h, c.kernel_w) + " must be > 0");
  if (c.stride_h == 0 || c.stride_w == 0) {
    s.fail("stride (subsampling) " + hw(c.stride_h, c.stride_w) + " must be > 0");
  }
  if (c.dilation_h == 0 || c.dilation_w == 0)
    s.fail("dilation " + hw(c.dilation_h, c.dilation_w) + " must be > 0");
  if (c.groups == 0 || c.group_input_channels == 0 || c.group_output_channels == 0) {
    s.fail("groups (" + str(c.groups) + "), group_input_channels (" + str(c.group_input_channels) +
           ") and group_output_channels (" + str(c.group_output_channels) + ") must be > 0");
  }
  if (nd.flags & kFlagTensorflowSamePadding) {
    unsupported(s.model().node_label(s.index()) + ": TensorFlow SAME padding (flag 0x4) is not supported");
  }
  s.need_rank(0, 4, 4);
  s.need_rank(1, 4, 4);
  s.need_nonempty(0);
  const Shape& x = s.in(0);
  const Shape& w = s.in(1);
  const uint64_t groups = c.groups, gic = c.group_input_channels, goc = c.group_output_channels;
  const uint64_t out_c = groups * goc;
  uint64_t in_c = groups * gic;
  Shape want_w;
  if (depthwise) {
    if (gic != 1) s.fail("depthwise convolution needs group_input_channels 1, got " + str(gic));
    in_c = groups;
    want_w = {1, c.kernel_h, c.kernel_w, static_cast<size_t>(out_c)};
  } else {
    want_w = {static_cast<size_t>(out_c), c.kernel_h, c.kernel_w, static_cast<size_t>(gic)};
  }
  if (x[3] != in_c) {
    s.fail(s.in_label(0) + " has " + str(x[3]) +
           " channels but groups x group_input_channels = " + str(in_c));
  }
  if (w != want_w) s.fail("filter " + s.in_label(1) + " should be " + shape_str(want_w));
  if (s.has_in(2) && numel(s.in(2)) != out_c) {
    s.fail("bias " + s.in_label(2) + " must have " + str(out_c) + " elements");
  }
  uint64_t oh = 0, ow = 0;
  if (transposed) {
    if (c.adjustment_h >= c.stride_h || c.adjustment_w >= c.stride_w) {
      s.fail("adjustment " + str(c.adjustment_h) + "x" + str(c.adjustment_w) +
             " must be smaller than the stride");
    }
    const uint64_t fh =
        uint64_t(c.stride_h) * (x[1] - 1) + c.adjustment_h + uint64_t(c.dilation_h) * (c.kernel_h - 1) + 1;
    const uint64_t fw =
        uint64_t(c.stride_w) * (x[2] - 1) + c.adjustment_w + uint64_t(c.dilation_w) * (c.kernel_w - 1) + 1;
    const uint64_t ph = uint64_t(c.pad_top) + c.pad_bottom, pw = uint64_t(c.pad_left) + c.pad_right;
    if (ph >= fh || pw >= fw) s.fail("padding crops the whole output of " + s.in_label(0));
    oh = fh - ph;
    ow = fw - pw;
  } else {
    if (!window_out(x[1], c.pad_top, c.pad_bottom, c.kernel_h, c.dilation_h, c.stride_h, oh) ||
        !window_out(x[2], c.pad_left, c.pad_right, c.kernel_w, c.dilation_w, c.stride_w, ow)) {
      s.fail(s.in_label(0) + " is smaller than the " + str(c.kernel_h) + "x" + str(c.kernel_w) +
             " (dilated) kernel plus padding");
    }
  }
  if (oh > kMaxTensorBytes || ow > kMaxTensorBytes) s.fail("output is too large");
  s.set_out(0, {x[0], static_cast<size_t>(oh), static_cast<size_t>(ow), static_cast<size_t>(out_c)});
}

void conv2d_shapes(ShapeInference& s) { conv_shapes(s, false, false); }
void dwconv2d_shapes(ShapeInference& s) { conv_shapes(s, true, false); }
void deconv2d_shapes(ShapeInference& s) { conv_shapes(s, false, true); }

const float* f32(const void* p) { return static_cast<const float*>(p); }

// ---- int8 ----

bool is_q8(const PackArgs& a) { return a.m.values[a.m.nodes[a.node].inputs[1]].dtype != DType::kFp32; }

// An int8 Conv2d with one input channel per group is a depthwise convolution (depth multiplier
// group_output_channels, the same ConvParams): it runs on qdwconv2d, its filter transposed to 1HWO at pack
// time. Other grouped convs run one IGEMM per group (qconv2d packs each group's panels apart).
bool q8_conv_is_depthwise(const ConvParams& c) { return c.groups > 1 && c.group_input_channels == 1; }

void conv2d_check(const SupportCheck& c) {
  check_q8_weights(c, 0, "fp32, or qint8 x qcint8 [+ qcint32 bias] -> qint8");
}
void dwconv2d_check(const SupportCheck& c) {
  check_q8_weights(c, 3, "fp32, or qint8 x qcint8 [1, H, W, C*m] [+ qcint32 bias] -> qint8");
}

size_t q8_conv2d_size(const PackArgs& a) {
  const ConvParams& c = a.m.nodes[a.node].conv;
  return q8_conv_is_depthwise(c) ? a.k.qdwconv2d_packed_size(c) : a.k.qconv2d_packed_size(c);
}

void q8_conv2d_pack(const PackArgs& a, void* dst) {
  const Node& nd = a.m.nodes[a.node];
  const ConvParams& c = nd.conv;
  const size_t oc = size_t{c.groups} * c.group_output_channels, taps = size_t{c.kernel_h} * c.kernel_w;
  const QGemmQuant q = q8_quant(a.m, nd, oc);
  const int8_t* f = static_cast<const int8_t*>(a.filter);
  const int32_t* bias = static_cast<const int32_t*>(a.bias);
  if (!q8_conv_is_depthwise(c)) return a.k.qconv2d_pack(c, f, bias, q, dst);
  std::vector<int8_t> hwo(oc * taps);  // [oc, kh, kw, 1] -> [1, kh, kw, oc]
  for (size_t o = 0; o < oc; ++o)
    for (size_t t = 0; t < taps; ++t) hwo[t * oc + o] = f[o * taps + t];
  a.k.qdwconv2d_pack(c, hwo.data(), bias, q, dst);
}

using QConvFn = decltype(KernelTable::qconv2d);  // qconv2d and qdwconv2d share it

// The conv's input as [N, H, W] and its data: its own NHWC input, or (step->transpose: the image transpose
// fused into it) the transpose's input planes, read in place (p->input_nchw set).
struct ConvInput {
  const void* data;
  size_t N, H, W;
};
ConvInput conv_input(const ExecArgs& a, const NodeIo& io, const Step* step, ConvParams* p) {
  if (step && step->transpose != kNoValue) {
    const uint32_t planes = a.m.nodes[step->transpose].inputs[0];
    const Shape& s = a.plan.shapes[planes];
    p->input_nchw = true;
    return {a.ptrs[planes], s[0], s[2], s[3]};
  }
  const Shape& x = io.in_shape(0);
  return {io.in(0), x[0], x[1], x[2]};
}

void exec_q8(const ExecArgs& a, size_t i, const Step* step, QConvFn fn) {
  const NodeIo io(a, i);
  AlignedBuffer run_packed;
  const void* packed = packed_weights(io, i, run_packed);
  ConvParams p = io.nd.conv;
  const ConvInput x = conv_input(a, io, step, &p);
  const Shape& y = io.out_shape();
  const QuantParams& yq = io.out_val().quant;
  const int32_t lo = quantize_bound(io.nd.act.min, yq), hi = quantize_bound(io.nd.act.max, yq);
  const Q8Output o = q8_output(a, io.nd, step);
  if (o.residual) {  // (fn is qconv2d: q8_residual)
    a.k.qconv2d_residual(p, x.N, x.H, x.W, x.data, y[1], y[2], packed, o.residual, o.out, lo, hi, o.add,
                         a.par);
    return;
  }
  fn(p, x.N, x.H, x.W, x.data, y[1], y[2], packed, o.out, lo, hi, a.par);
}

// An int8 Conv2d on qconv2d (not one on qdwconv2d) has a residual epilogue.
bool conv2d_q8_residual(const Model& m, const Node& nd) {
  return m.values[nd.inputs[0]].dtype == DType::kQint8 && m.values[nd.outputs[0]].dtype == DType::kQint8 &&
         !q8_conv_is_depthwise(nd.conv);
}

// ---- fp32 (and the rows' dispatch on the filter's datatype) ----

size_t conv2d_size(const PackArgs& a) {
  if (is_q8(a)) return q8_conv2d_size(a);
  return a.k.conv2d_packed_size(a.m.nodes[a.node].conv);
}
void conv2d_pack(const PackArgs& a, void* dst) {
  if (is_q8(a)) return q8_conv2d_pack(a, dst);
  a.k.conv2d_pack(a.m.nodes[a.node].conv, f32(a.filter), f32(a.bias), dst);
}
size_t dwconv2d_size(const PackArgs& a) {
  if (is_q8(a)) return a.k.qdwconv2d_packed_size(a.m.nodes[a.node].conv);
  return a.k.dwconv2d_packed_size(a.m.nodes[a.node].conv);
}
void dwconv2d_pack(const PackArgs& a, void* dst) {
  const Node& nd = a.m.nodes[a.node];
  if (is_q8(a)) {
    const QGemmQuant q = q8_quant(a.m, nd, size_t{nd.conv.groups} * nd.conv.group_output_channels);
    return a.k.qdwconv2d_pack(nd.conv, static_cast<const int8_t*>(a.filter),
                              static_cast<const int32_t*>(a.bias), q, dst);
  }
  a.k.dwconv2d_pack(nd.conv, f32(a.filter), f32(a.bias), dst);
}
size_t deconv2d_size(const PackArgs& a) { return a.k.deconv2d_packed_size(a.m.nodes[a.node].conv); }
void deconv2d_pack(const PackArgs& a, void* dst) {
  a.k.deconv2d_pack(a.m.nodes[a.node].conv, f32(a.filter), f32(a.bias), dst);
}

double conv_macs(const Model&, const Plan& plan, const Node& nd) {
  const ConvParams& c = nd.conv;
  return static_cast<double>(numel(plan.shapes[nd.outputs[0]])) * c.kernel_h * c.kernel_w *
         c.group_input_channels;
}

double dwconv_macs(const Model&, const Plan& plan, const Node& nd) {
  return static_cast<double>(numel(plan.shapes[nd.outputs[0]])) * nd.conv.kernel_h * nd.conv.kernel_w;
}

// A fused block (see plan_fusion.cc): [expand ->] depthwise [-> the project conv this step runs, + residual].
void exec_block(const NodeIo& io, const Step& step, const ConvParams& p, const void* packed,
                const FusedOutput& f) {
  const ExecArgs& a = io.a;
  const bool project_step = step.dw != kNoValue;  // else this node is the depthwise
  const Node& dn = project_step ? a.m.nodes[step.dw] : io.nd;
  PointwiseConv expand, project;
  const float* src = static_cast<const float*>(a.ptrs[dn.inputs[0]]);
  if (step.pre != kNoValue) {
    const Node& pw = a.m.nodes[step.pre];
    expand.channels = a.plan.shapes[pw.inputs[0]][3];
    expand.packed = a.packed[step.pre];
    expand.act = pw.act;
    if (step.pre_act != kNoValue) expand.act.post = node_def(a.m.nodes[step.pre_act].type).post_op;
    src = static_cast<const float*>(a.ptrs[pw.inputs[0]]);
  }
  ConvParams dp = p;
  const void* dw_packed = packed;
  if (project_step) {
    dp = dn.conv;
    dp.act = dn.act;
    if (step.dw_act != kNoValue) dp.act.post = node_def(a.m.nodes[step.dw_act].type).post_op;
    dw_packed = a.packed[step.dw];
    project.channels = io.out_shape()[3];
    project.packed = packed;
    project.act = f.act;
  }
  const Shape& dx = a.plan.shapes[dn.inputs[0]];
  const Shape& dy = a.plan.shapes[dn.outputs[0]];
  a.k.dwconv2d_fused(step.pre != kNoValue ? &expand : nullptr, dp, dx[0], dx[1], dx[2], src, dy[1], dy[2],
                     dw_packed, project_step ? &project : nullptr, project_step ? f.residual : nullptr, f.out,
                     a.par);
}

using ConvFn = decltype(KernelTable::conv2d);  // conv2d, dwconv2d and deconv2d share it

void exec_conv(const ExecArgs& a, size_t i, const Step* step, ConvFn fn) {
  const NodeIo io(a, i);
  AlignedBuffer run_packed;
  const void* packed = packed_weights(io, i, run_packed);
  const FusedOutput f = fused_output(a, io.nd, step);
  const Shape& out_shape = io.out_shape();
  ConvParams p = io.nd.conv;
  p.act = f.act;
  if (step && step->ahead != kNoValue) {
    p.ahead = {static_cast<const char*>(a.packed[step->ahead]) + step->ahead_offset, step->ahead_bytes};
  }
  if (step && (step->pre != kNoValue || step->dw != kNoValue)) {
    exec_block(io, *step, p, packed, f);
    return;
  }
  const ConvInput x = conv_input(a, io, step, &p);
  const float* src = static_cast<const float*>(x.data);
  if (f.residual) {
    a.k.conv2d_residual(p, x.N, x.H, x.W, src, out_shape[1], out_shape[2], packed, f.residual, f.out, a.par);
    return;
  }
  fn(p, x.N, x.H, x.W, src, out_shape[1], out_shape[2], packed, f.out, a.par);
}

bool out_q8(const ExecArgs& a, size_t i) { return a.m.values[a.m.nodes[i].outputs[0]].dtype != DType::kFp32; }

void exec_conv2d(const ExecArgs& a, size_t i, const Step* step) {
  if (!out_q8(a, i)) return exec_conv(a, i, step, a.k.conv2d);
  // (a step with a fused image transpose is always a qconv2d one: the fusion planner checks groups 1)
  exec_q8(a, i, step, q8_conv_is_depthwise(a.m.nodes[i].conv) ? a.k.qdwconv2d : a.k.qconv2d);
}
void exec_dwconv2d(const ExecArgs& a, size_t i, const Step* step) {
  if (!out_q8(a, i)) return exec_conv(a, i, step, a.k.dwconv2d);
  exec_q8(a, i, step, a.k.qdwconv2d);
}
void exec_deconv2d(const ExecArgs& a, size_t i, const Step* step) { exec_conv(a, i, step, a.k.deconv2d); }

}  // namespace

// A non-constant filter or bias is packed by the step itself, every run (fp32; int8 ones need constants).
// ConvTranspose2d is fp32 only.
void register_conv(NodeTable& table) {
  NodeDef& conv = define_node(table, T::XNNConv2d, decode_conv2d, conv2d_shapes, conv2d_check, exec_conv2d);
  conv.pack_size = conv2d_size;
  conv.pack = conv2d_pack;
  conv.macs = conv_macs;
  conv.traits = kPacksWeights | kTakesActivation | kTakesResidual | kBlockConv;
  conv.q8_residual = conv2d_q8_residual;

  NodeDef& dw =
      define_node(table, T::XNNDepthwiseConv2d, decode_conv, dwconv2d_shapes, dwconv2d_check, exec_dwconv2d);
  dw.pack_size = dwconv2d_size;
  dw.pack = dwconv2d_pack;
  dw.macs = dwconv_macs;
  dw.traits = kPacksWeights | kTakesActivation | kBlockDepthwise;

  NodeDef& deconv =
      define_node(table, T::XNNConvTranspose2d, decode_conv, deconv2d_shapes, check_fp32, exec_deconv2d);
  deconv.pack_size = deconv2d_size;
  deconv.pack = deconv2d_pack;
  deconv.macs = conv_macs;
  deconv.traits = kPacksWeights;
}

}  // namespace webxnn
