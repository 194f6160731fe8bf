// What the node family files share: decoding a node table, inferring shapes, checking datatypes, reading a
// step's operands. One family file (nodes/<family>.cc) uses these to define its node types' rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/wx/wx.h"
#include "runtime/memory.h"
#include "runtime/model.h"
#include "runtime/node_table.h"
#include "runtime/shapes.h"
#include "runtime/status.h"
#include "xnngraph_generated.h"

namespace webxnn {

namespace fb = fb_xnnpack;

inline std::string str(uint64_t v) { return std::to_string(v); }

// ---- decode (loader) ----

// One node's flatbuffer table -> Node: value references resolved to indices, errors naming the node.
class NodeDecoder {
 public:
  NodeDecoder(size_t node, const char* tname, const std::unordered_map<uint32_t, uint32_t>& ids,
              const std::vector<Value>& values)
      : node_(node), tname_(tname), ids_(ids), values_(values) {}

  // The value index of `id` (kNoValue for an absent optional one).
  uint32_t ref(const char* field, uint32_t id, bool optional = false) const;
  [[noreturn]] void fail(const std::string& what) const;  // "node 3 (XNNConv2d): <what>"
  const Shape& dims(uint32_t value) const { return values_[value].dims; }

  // An op or mode enum of the schema, checked against its generated MAX ("unknown unary op 17").
  template <typename E>
  uint16_t op(E e, const char* what) const {
    const uint16_t v = static_cast<uint16_t>(e);
    if (v > static_cast<uint16_t>(E::MAX)) fail("unknown " + std::string(what) + " " + str(v));
    return v;
  }
  // The fields most node tables share: output_id and flags; input_id too.
  template <typename Table>
  void out_flags(const Table* t, Node& nd) const {
    nd.outputs = {ref("output_id", t->output_id())};
    nd.flags = t->flags();
  }
  template <typename Table>
  void io(const Table* t, Node& nd) const {
    nd.inputs = {ref("input_id", t->input_id())};
    out_flags(t, nd);
  }

 private:
  size_t node_;
  const char* tname_;
  const std::unordered_map<uint32_t, uint32_t>& ids_;
  const std::vector<Value>& values_;
};

inline std::vector<uint32_t> uvec(const flatbuffers::Vector<uint32_t>* v) {
  return v ? std::vector<uint32_t>(v->begin(), v->end()) : std::vector<uint32_t>();
}

template <typename Table>
void decode_pool_window(const Table* t, PoolParams& p) {
  p.pad_top = t->padding_top();
  p.pad_right = t->padding_right();
  p.pad_bottom = t->padding_bottom();
  p.pad_left = t->padding_left();
  p.pool_h = t->pooling_height();
  p.pool_w = t->pooling_width();
}

// The rows' decode for tables of the two common forms: _XNNNode1x1 (input_id) and _XNNNode2x1.
void decode_1x1(const NodeDecoder& d, const void* table, Node& nd);
void decode_2x1(const NodeDecoder& d, const void* table, Node& nd);

// ---- shapes ----

// Parameter checks and output shapes of one node, for the shapes[] of one plan.
class ShapeInference {
 public:
  ShapeInference(const Model& m, size_t i, std::vector<Shape>& shapes)
      : m_(m), i_(i), nd_(m.nodes[i]), shapes_(shapes) {}

  const Node& node() const { return nd_; }
  const Model& model() const { return m_; }
  size_t index() const { return i_; }
  [[noreturn]] void fail(const std::string& msg) const;  // Error(kFormat) "node 3 (XNNConv2d): <msg>"

  const Shape& in(size_t k) const { return shapes_[nd_.inputs[k]]; }
  bool has_in(size_t k) const { return k < nd_.inputs.size() && nd_.inputs[k] != kNoValue; }
  std::string in_label(size_t k) const;  // "input value 7 [1, 2]"
  void set_out(size_t k, Shape s);       // bounded like a declared shape
  void need_rank(size_t k, size_t lo, size_t hi) const;
  void need_nonempty(size_t k) const;
  const Shape& declared_out() const { return m_.values[nd_.outputs[0]].dims; }
  const Shape& declared_in(size_t k) const { return m_.values[nd_.inputs[k]].dims; }
  // The declared output dims, except where a dim equals the declared input's and the input's actual dim
  // differs (a dynamic dim passing through): then the actual one. Ranks right-aligned.
  Shape follow_input(const Shape& declared) const;
  // ints_a as distinct axes of input 0 (a mask over its dims).
  std::vector<bool> axes_mask(size_t rank) const;

 private:
  const Model& m_;
  size_t i_;
  const Node& nd_;
  std::vector<Shape>& shapes_;
};

void same_shape(ShapeInference& s);       // output 0 = input 0
void broadcast_shape(ShapeInference& s);  // output 0 = broadcast of inputs 0 and 1

// Output size of a strided window over `in` padded by pads: floor((in + pads - eff_kernel) / stride) + 1.
bool window_out(uint64_t in, uint64_t pad_a, uint64_t pad_b, uint64_t kernel, uint64_t dilation,
                uint64_t stride, uint64_t& out);

// ---- support checks (load) ----

class SupportCheck {
 public:
  SupportCheck(const Model& m, size_t i) : m_(m), i_(i), nd_(m.nodes[i]) {}
  const Node& node() const { return nd_; }
  const Model& model() const { return m_; }
  std::string label() const { return m_.node_label(i_); }
  DType dt(uint32_t v) const { return m_.values[v].dtype; }
  std::string describe() const;  // "(fp32, fp32) -> fp32"
  bool all_fp32() const;
  void need_fp32() const;                             // "datatypes ... are not supported (fp32 only)"
  void need_const(size_t k, const char* what) const;  // input k, when present, must be a constant
  void need_bytes() const;  // layout ops: any element type of whole bytes, the same in and out

 private:
  const Model& m_;
  size_t i_;
  const Node& nd_;
};

// Rows whose only check is need_fp32 (need_bytes).
void check_fp32(const SupportCheck& c);
void check_bytes(const SupportCheck& c);

// The WX kernels' element type of a datatype; false for quantized and other types they do not take.
bool wx_et(DType t, wx::ET& out);

// The element types of a webxnn node (WX*): construction fails unless every operand has one.
struct WxTypes {
  explicit WxTypes(const SupportCheck& c);
  [[noreturn]] void bad(const std::string& why) const;  // "datatypes (...) -> ... are not supported: <why>"
  // Most WX nodes: the output has input 0's element type.
  void need_same(const char* why = "input and output must have the same datatype") const;
  const SupportCheck& c;
  std::vector<wx::ET> in;
  std::vector<bool> has;
  wx::ET out = wx::ET::kF32;
  bool in_float() const { return wx::et_is_float(in[0]); }
  static bool is_int(wx::ET t) { return !wx::et_is_float(t); }
};

// Rows of webxnn nodes whose only rule is "the output has input 0's type" (and, _float, a float one).
void check_wx_same(const SupportCheck& c);
void check_wx_float(const SupportCheck& c);

// ---- qint8 (the int8 contract: per-tensor qint8 activations, zero points in [-128, 127]) ----

// A real bound (output_min / output_max) in the int8 domain of q: round half to even, saturating (+-inf: the
// type's ends).
int8_t quantize_bound(float real, const QuantParams& q);
// The int8 nodes other than conv / FC (binary.cc, pool.cc, unary.cc, convert.cc, resize.cc): does every
// operand of c's node hold qint8 per tensor? need_q8 then refuses, naming the value, a zero point outside
// [-128, 127]; when same_params, also input and output quantization that differ.
bool all_q8(const SupportCheck& c);
void need_q8(const SupportCheck& c, bool same_params);
// The scales, zero points (a: input 0, b: input 1 when present) and the node's output clamp of a qint8 node.
QElemParams q8_params(const Model& m, const Node& nd);
// The lookup table of a kPacksTable node (256 entries for qlut): packed at load, or (a folded node, which runs
// before packing) built now into `buf` by the node's pack.
const int8_t* packed_table(const ExecArgs& a, size_t i, int8_t (&buf)[256]);

// ---- execution ----

// A node's operands in one step.
struct NodeIo {
  NodeIo(const ExecArgs& a, size_t i) : a(a), nd(a.m.nodes[i]) {}
  const void* in(size_t k) const {
    return (k < nd.inputs.size() && nd.inputs[k] != kNoValue) ? a.ptrs[nd.inputs[k]] : nullptr;
  }
  const float* inf(size_t k) const { return static_cast<const float*>(in(k)); }
  const Shape& in_shape(size_t k) const { return a.plan.shapes[nd.inputs[k]]; }
  const Shape& out_shape() const { return a.plan.shapes[nd.outputs[0]]; }
  void* out() const { return a.ptrs[nd.outputs[0]]; }
  float* outf() const { return static_cast<float*>(out()); }
  const Value& out_val() const { return a.m.values[nd.outputs[0]]; }
  const Value& in_val(size_t k) const { return a.m.values[nd.inputs[k]]; }
  size_t esize() const { return storage_size(out_val().dtype); }
  // ints_a (axes, checked by the shape pass) as a mask over the dims of a rank-`rank` input.
  std::vector<bool> axes(size_t rank) const {
    std::vector<bool> m(rank, false);
    for (uint32_t ax : nd.ints_a) m[ax] = true;
    return m;
  }
  // The WX element type of value v (fp32 for types the WX kernels do not take: checked at load).
  wx::ET et(uint32_t v) const {
    wx::ET t = wx::ET::kF32;
    wx_et(a.m.values[v].dtype, t);
    return t;
  }
  const ExecArgs& a;
  const Node& nd;
};

// Multiply-adds of a matrix product node: output elements x K (the last dim of input 0).
double gemm_macs(const Model& m, const Plan& plan, const Node& nd);

// Where a conv / FC step writes (see plan_fusion.cc): its own output, or its fused consumer's (a residual Add's,
// with the Add's clamp; or an activation's: this node's clamp, then the activation as the kernel's post-op).
struct FusedOutput {
  const float* residual = nullptr;
  float* out = nullptr;
  Activation act;
};
FusedOutput fused_output(const ExecArgs& a, const Node& nd, const Step* step);

// The step of a kView node whose output could not share its input's storage (see plan.cc): a copy of the bytes.
void view_exec(const ExecArgs& a, size_t i, const Step* step);

// The packed weights of kPacksWeights node i: packed at load, or (non-constant filter or bias) packed now
// into `buf`.
const void* packed_weights(const NodeIo& io, size_t i, AlignedBuffer& buf);

// ---- int8 nodes with weights (INT8_CONTRACT.md: FullyConnected, Conv2d, DepthwiseConv2d) ----

// The int8 check of a node (input 0, filter 1, bias 2, output 0): false when every operand is fp32; true for
// qint8 x (qcint8 per channel along channel_dim | qint8 per tensor with zero point 0) [+ qcint32 | qint32 bias]
// -> qint8 with a constant filter and bias and activation zero points in [-128, 127]; else throws
// Error(kUnsupported) naming what (`supported`: the datatypes the node takes, for the message).
bool check_q8_weights(const SupportCheck& c, size_t channel_dim, const char* supported);
// Its filter and bias part, shared with the dynamic FC: both constant, int8 filters (qcint8, or qint8 with
// zero point 0), per-channel scales along channel_dim; else throws Error(kUnsupported).
void check_q8_filter(const SupportCheck& c, size_t channel_dim);
// Where an int8 conv / FC step writes (see plan_fusion.cc): its own output, or, with the qint8 residual Add
// after it fused, the Add's output, the Add's other operand (`residual`, else null) and the Add's quantization
// with the node's output as operand a (qgemm_residual / qconv2d_residual's `add`).
struct Q8Output {
  const int8_t* residual = nullptr;
  void* out = nullptr;
  QElemParams add;
};
Q8Output q8_output(const ExecArgs& a, const Node& nd, const Step* step);
// The quantization of such a node for the int8 kernels' packers (qgemm_pack, qconv2d_pack, qdwconv2d_pack):
// s8 activations and output; channels: the output channels (the per-channel scale count).
QGemmQuant q8_quant(const Model& m, const Node& nd, size_t channels);

}  // namespace webxnn
