#include "runtime/nodes/common.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace webxnn {

// ---- decode ----

uint32_t NodeDecoder::ref(const char* field, uint32_t id, bool optional) const {
  if (id == kNoValue) {
    if (optional) return kNoValue;
    fail(std::string("required ") + field + " is not set (0xFFFFFFFF)");
  }
  auto it = ids_.find(id);
  if (it == ids_.end()) fail(std::string(field) + " " + str(id) + " is not a value id");
  return it->second;
}

void NodeDecoder::fail(const std::string& what) const {
  format_error("node " + str(node_) + " (" + tname_ + "): " + what);
}

void decode_1x1(const NodeDecoder& d, const void* table, Node& nd) {
  d.io(static_cast<const fb::_XNNNode1x1*>(table), nd);
}

void decode_2x1(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::_XNNNode2x1*>(table);
  nd.inputs = {d.ref("input1_id", t->input1_id()), d.ref("input2_id", t->input2_id())};
  d.out_flags(t, nd);
}

// ---- shapes ----

void ShapeInference::fail(const std::string& msg) const { format_error(m_.node_label(i_) + ": " + msg); }

std::string ShapeInference::in_label(size_t k) const {
  return "input " + m_.value_label(nd_.inputs[k]) + " " + shape_str(in(k));
}

void ShapeInference::set_out(size_t k, Shape s) {
  // Bound every inferred shape like a declared one, so later products cannot overflow.
  uint64_t n = 1;
  for (size_t d : s) {
    if (d != 0 && n > kMaxTensorBytes / d) fail("output shape " + shape_str(s) + " is too large");
    n *= d;
  }
  if (n > kMaxTensorBytes / 8) fail("output shape " + shape_str(s) + " is too large");
  if (s.size() > kMaxRank) fail("output rank " + str(s.size()) + " exceeds " + str(kMaxRank));
  shapes_[nd_.outputs[k]] = std::move(s);
}

void ShapeInference::need_rank(size_t k, size_t lo, size_t hi) const {
  const size_t r = in(k).size();
  if (r < lo || r > hi) {
    if (lo == hi) fail(in_label(k) + " must have rank " + str(lo));
    fail(in_label(k) + " must have rank " + str(lo) + ".." + str(hi));
  }
}

void ShapeInference::need_nonempty(size_t k) const {
  for (size_t d : in(k)) {
    if (d == 0) fail(in_label(k) + " has a zero-size dimension, which this node cannot take");
  }
}

Shape ShapeInference::follow_input(const Shape& declared) const {
  Shape o = declared;
  const Shape& di = declared_in(0);
  const Shape& x = in(0);
  if (di.size() != x.size() || di.size() > o.size()) return o;
  const size_t off = o.size() - di.size();
  for (size_t d = 0; d < di.size(); ++d) {
    if (x[d] != di[d] && o[off + d] == di[d]) o[off + d] = x[d];
  }
  return o;
}

std::vector<bool> ShapeInference::axes_mask(size_t rank) const {
  std::vector<bool> m(rank, false);
  for (uint32_t a : nd_.ints_a) {
    if (a >= rank || m[a]) fail("axes must be distinct dims of " + in_label(0));
    m[a] = true;
  }
  return m;
}

void same_shape(ShapeInference& s) { s.set_out(0, s.in(0)); }

void broadcast_shape(ShapeInference& s) {
  Shape o;
  if (!broadcast_shapes(s.in(0), s.in(1), o))
    s.fail(s.in_label(0) + " and " + s.in_label(1) + " do not broadcast");
  s.set_out(0, o);
}

bool window_out(uint64_t in, uint64_t pad_a, uint64_t pad_b, uint64_t kernel, uint64_t dilation,
                uint64_t stride, uint64_t& out) {
  const uint64_t eff = dilation * (kernel - 1) + 1;  // < 2^64: both factors < 2^32
  const uint64_t padded = in + pad_a + pad_b;        // in <= 2^40
  if (padded < eff || stride == 0) return false;
  out = (padded - eff) / stride + 1;
  return true;
}

// ---- support checks ----

namespace {

bool same_quant(const Value& a, const Value& b) {
  if (a.dtype != b.dtype) return false;
  if (a.quant.kind != QuantParams::Kind::kPerTensor) return true;
  return a.quant.scale == b.quant.scale && a.quant.zero_point == b.quant.zero_point;
}

}  // namespace

std::string SupportCheck::describe() const {
  std::string s = "(";
  for (size_t k = 0; k < nd_.inputs.size(); ++k) {
    if (nd_.inputs[k] == kNoValue) continue;
    if (s.size() > 1) s += ", ";
    s += dtype_name(dt(nd_.inputs[k]));
  }
  s += ") -> ";
  for (size_t k = 0; k < nd_.outputs.size(); ++k)
    s += std::string(k ? ", " : "") + dtype_name(dt(nd_.outputs[k]));
  return s;
}

bool SupportCheck::all_fp32() const {
  for (uint32_t v : nd_.inputs) {
    if (v != kNoValue && dt(v) != DType::kFp32) return false;
  }
  for (uint32_t v : nd_.outputs) {
    if (dt(v) != DType::kFp32) return false;
  }
  return true;
}

void SupportCheck::need_fp32() const {
  if (!all_fp32()) unsupported(label() + ": datatypes " + describe() + " are not supported (fp32 only)");
}

void SupportCheck::need_const(size_t k, const char* what) const {
  if (k < nd_.inputs.size() && nd_.inputs[k] != kNoValue && !m_.values[nd_.inputs[k]].is_constant) {
    unsupported(label() + ": a non-constant " + what + " (" + m_.value_label(nd_.inputs[k]) +
                ") is not supported yet");
  }
}

void SupportCheck::need_bytes() const {
  const Value& out = m_.values[nd_.outputs[0]];
  if (element_size(out.dtype) == 0) {
    unsupported(label() + ": datatype " + dtype_name(out.dtype) + " is not supported here");
  }
  // A qdint8 value's per-row parameters sit after its data (plan.h: qd8_params), in rows that moving bytes
  // would not keep: only Convert makes one and only FullyConnected reads it.
  if (out.dtype == DType::kQdint8) unsupported(label() + ": qdint8 values are only read by FullyConnected");
  for (uint32_t v : nd_.inputs) {
    if (!same_quant(m_.values[v], out)) {
      if (dt(v) == DType::kQint8 && out.dtype == DType::kQint8) need_q8(*this, true);  // names the params
      unsupported(label() + ": datatypes or quantization differ between input and output " + describe());
    }
  }
}

void check_fp32(const SupportCheck& c) { c.need_fp32(); }
void check_bytes(const SupportCheck& c) { c.need_bytes(); }

bool wx_et(DType t, wx::ET& out) {
  switch (t) {
    case DType::kFp32: out = wx::ET::kF32; return true;
    case DType::kFp16: out = wx::ET::kF16; return true;
    case DType::kInt32: out = wx::ET::kI32; return true;
    case DType::kWxInt8: out = wx::ET::kI8; return true;
    case DType::kWxUint8: out = wx::ET::kU8; return true;
    case DType::kWxUint32: out = wx::ET::kU32; return true;
    case DType::kWxInt64: out = wx::ET::kI64; return true;
    case DType::kWxUint64: out = wx::ET::kU64; return true;
    default: return false;
  }
}

WxTypes::WxTypes(const SupportCheck& check) : c(check) {
  const Node& nd = c.node();
  in.assign(nd.inputs.size(), wx::ET::kF32);
  has.assign(nd.inputs.size(), false);
  for (size_t k = 0; k < nd.inputs.size(); ++k) {
    if (nd.inputs[k] == kNoValue) continue;
    if (!wx_et(c.dt(nd.inputs[k]), in[k])) bad("webxnn nodes take fp32, fp16 and plain integers");
    has[k] = true;
  }
  if (!wx_et(c.dt(nd.outputs[0]), out)) bad("webxnn nodes take fp32, fp16 and plain integers");
}

void WxTypes::bad(const std::string& why) const {
  unsupported(c.label() + ": datatypes " + c.describe() + " are not supported: " + why);
}

void WxTypes::need_same(const char* why) const {
  if (out != in[0]) bad(why);
}

void check_wx_same(const SupportCheck& c) { WxTypes(c).need_same(); }

void check_wx_float(const SupportCheck& c) {
  const WxTypes t(c);
  if (!t.in_float()) t.bad("a float datatype is needed");
  t.need_same();
}

// ---- qint8 ----

int8_t quantize_bound(float real, const QuantParams& q) {
  if (std::isinf(real)) return (real < 0) ? -128 : 127;
  double x = std::nearbyint(double(real) / q.scale) + q.zero_point;
  x = std::min(127.0, std::max(-128.0, x));
  return static_cast<int8_t>(x);
}

bool all_q8(const SupportCheck& c) {
  const Node& nd = c.node();
  auto q8 = [&](uint32_t v) {
    const Value& x = c.model().values[v];
    return x.dtype == DType::kQint8 && x.quant.kind == QuantParams::Kind::kPerTensor;
  };
  for (uint32_t v : nd.inputs) {
    if (v != kNoValue && !q8(v)) return false;
  }
  for (uint32_t v : nd.outputs) {
    if (!q8(v)) return false;
  }
  return true;
}

namespace {

// The int8 kernels take zero points in the int8 range (table.def); a blob may hold any int32. named: the
// message names the value (the element-wise nodes have several inputs; a conv's is its input or output).
void need_q8_zero_point(const SupportCheck& c, uint32_t v, bool named = true) {
  const int32_t zp = c.model().values[v].quant.zero_point;
  if (zp < -128 || zp > 127) {
    unsupported(c.label() + ": qint8 zero point " + std::to_string(zp) +
                (named ? " of " + c.model().value_label(v) : std::string()) + " is outside [-128, 127]");
  }
}

}  // namespace

void need_q8(const SupportCheck& c, bool same_params) {
  const Node& nd = c.node();
  const Model& m = c.model();
  const Value& out = m.values[nd.outputs[0]];
  for (uint32_t v : nd.inputs) {
    if (v == kNoValue) continue;
    const QuantParams& q = m.values[v].quant;
    need_q8_zero_point(c, v);
    if (same_params && (q.scale != out.quant.scale || q.zero_point != out.quant.zero_point)) {
      unsupported(c.label() + ": qint8 input " + m.value_label(v) + " (scale " + std::to_string(q.scale) +
                  ", zero point " + std::to_string(q.zero_point) + ") and output (scale " +
                  std::to_string(out.quant.scale) + ", zero point " + std::to_string(out.quant.zero_point) +
                  ") must have the same quantization (a Convert qint8 -> qint8 requantizes)");
    }
  }
  need_q8_zero_point(c, nd.outputs[0]);
}

QElemParams q8_params(const Model& m, const Node& nd) {
  QElemParams q;
  const QuantParams& a = m.values[nd.inputs[0]].quant;
  const QuantParams& y = m.values[nd.outputs[0]].quant;
  q.a_scale = a.scale;
  q.a_zero_point = a.zero_point;
  if (nd.inputs.size() > 1 && nd.inputs[1] != kNoValue) {
    const QuantParams& b = m.values[nd.inputs[1]].quant;
    q.b_scale = b.scale;
    q.b_zero_point = b.zero_point;
  }
  q.out_scale = y.scale;
  q.out_zero_point = y.zero_point;
  q.out_min = quantize_bound(nd.act.min, y);
  q.out_max = quantize_bound(nd.act.max, y);
  return q;
}

const int8_t* packed_table(const ExecArgs& a, size_t i, int8_t (&buf)[256]) {
  if (a.packed && a.packed[i]) return static_cast<const int8_t*>(a.packed[i]);
  static const Shape kNoFilter;
  node_def(a.m.nodes[i]).pack(PackArgs{a.m, a.k, i, kNoFilter, nullptr, nullptr}, buf);
  return buf;
}

// ---- execution ----

double gemm_macs(const Model&, const Plan& plan, const Node& nd) {
  const Shape& x = plan.shapes[nd.inputs[0]];
  const double k = x.empty() ? 1.0 : static_cast<double>(x.back());
  return static_cast<double>(numel(plan.shapes[nd.outputs[0]])) * k;
}

FusedOutput fused_output(const ExecArgs& a, const Node& nd, const Step* step) {
  FusedOutput f;
  const Node* into = step && step->into != kNoValue ? &a.m.nodes[step->into] : nullptr;
  f.residual =
      into && step->residual != kNoValue ? static_cast<const float*>(a.ptrs[step->residual]) : nullptr;
  f.out = static_cast<float*>(a.ptrs[into ? into->outputs[0] : nd.outputs[0]]);
  f.act = f.residual ? into->act : nd.act;
  if (into && !f.residual) f.act.post = node_def(into->type).post_op;
  return f;
}

void view_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  std::memcpy(io.out(), io.in(0), numel(io.out_shape()) * io.esize());
}

const void* packed_weights(const NodeIo& io, size_t i, AlignedBuffer& buf) {
  if (io.a.packed && io.a.packed[i]) return io.a.packed[i];
  const NodeDef& d = node_def(io.nd.type);
  const PackArgs p{io.a.m, io.a.k, i, io.in_shape(1), io.in(1), io.in(2)};
  buf = AlignedBuffer(d.pack_size(p));
  d.pack(p, buf.data());
  return buf.data();
}

// ---- int8 nodes with weights ----

void check_q8_filter(const SupportCheck& c, size_t channel_dim) {
  c.need_const(1, "filter");
  c.need_const(2, "bias");
  const Value& w = c.model().values[c.node().inputs[1]];
  if (w.dtype == DType::kQint8 && w.quant.zero_point != 0) {
    unsupported(c.label() + ": filter zero point " + std::to_string(w.quant.zero_point) +
                " is not supported (int8 filters are symmetric: zero point 0)");
  }
  if (w.dtype != DType::kQcint8 && w.dtype != DType::kQint8) {
    unsupported(c.label() + ": datatypes " + c.describe() +
                " are not supported (int8 filters: qcint8 or qint8)");
  }
  if (w.quant.kind == QuantParams::Kind::kPerChannel && size_t(w.quant.channel_dim) != channel_dim) {
    unsupported(c.label() + ": per-channel filter scales must be along the output dim " + str(channel_dim) +
                ", not " + std::to_string(w.quant.channel_dim));
  }
}

bool check_q8_weights(const SupportCheck& c, size_t channel_dim, const char* supported) {
  if (c.all_fp32()) return false;
  const Node& nd = c.node();
  const Model& m = c.model();
  const Value& x = m.values[nd.inputs[0]];
  const Value& y = m.values[nd.outputs[0]];
  const bool has_bias = nd.inputs.size() > 2 && nd.inputs[2] != kNoValue;
  const bool b_ok =
      !has_bias || c.dt(nd.inputs[2]) == DType::kQcint32 || c.dt(nd.inputs[2]) == DType::kQint32;
  if (x.dtype != DType::kQint8 || y.dtype != DType::kQint8 || !b_ok) {
    unsupported(c.label() + ": datatypes " + c.describe() + " are not supported (" + supported + ")");
  }
  check_q8_filter(c, channel_dim);
  need_q8_zero_point(c, nd.inputs[0], false);
  need_q8_zero_point(c, nd.outputs[0], false);
  return true;
}

Q8Output q8_output(const ExecArgs& a, const Node& nd, const Step* step) {
  Q8Output o;
  o.out = a.ptrs[nd.outputs[0]];
  if (!step || step->into == kNoValue || step->residual == kNoValue) return o;
  const Node& add = a.m.nodes[step->into];
  o.residual = static_cast<const int8_t*>(a.ptrs[step->residual]);
  o.out = a.ptrs[add.outputs[0]];
  o.add = q8_params(a.m, add);
  if (add.inputs[0] == step->residual) {  // the node's output is the Add's second operand
    std::swap(o.add.a_scale, o.add.b_scale);
    std::swap(o.add.a_zero_point, o.add.b_zero_point);
  }
  return o;
}

QGemmQuant q8_quant(const Model& m, const Node& nd, size_t channels) {
  const Value& x = m.values[nd.inputs[0]];
  const Value& w = m.values[nd.inputs[1]];
  const Value& y = m.values[nd.outputs[0]];
  QGemmQuant q;  // s8 activations and output: the defaults
  q.a_zero_point = x.quant.zero_point;
  q.a_scale = x.quant.scale;
  const bool per_channel = w.quant.kind == QuantParams::Kind::kPerChannel;
  q.w_scales = per_channel ? w.quant.scales.data() : &w.quant.scale;
  q.w_scale_count = per_channel ? channels : 1;
  q.out_zero_point = y.quant.zero_point;
  q.out_scale = y.quant.scale;
  return q;
}

}  // namespace webxnn
