// webxnn's element-wise nodes for what XNNPACK's do not cover (integers, comparisons, logical ops, ...):
// WXUnary, WXBinary (numpy broadcasting) and WXWhere. fp32 unary ops the kernel table vectorises go there.
#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;
using U = fb::WXUnaryOp;
using B = fb::WXBinaryOp;

// ---- WXUnary ----

void decode_unary(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXUnary*>(table);
  nd.wx_op = d.op(t->op(), "unary op");
  nd.alpha = static_cast<float>(t->alpha());
  nd.beta = static_cast<float>(t->beta());
  nd.dalpha = t->alpha();
  nd.dbeta = t->beta();
  d.io(t, nd);
}

bool is(uint16_t wx_op, U op) { return wx_op == static_cast<uint16_t>(op); }
bool is(uint16_t wx_op, B op) { return wx_op == static_cast<uint16_t>(op); }

void unary_check(const SupportCheck& c) {
  const WxTypes t(c);
  const uint16_t op = c.node().wx_op;
  if (is(op, U::cast) || is(op, U::identity)) return;  // any to any
  if (is(op, U::logical_not)) {
    if (t.in[0] != wx::ET::kU8 || t.out != wx::ET::kU8) t.bad("logical_not takes and gives uint8");
    return;
  }
  if (is(op, U::is_nan) || is(op, U::is_infinite)) {
    if (!t.in_float() || t.out != wx::ET::kU8) t.bad("is_nan / is_infinite take a float and give uint8");
    return;
  }
  t.need_same();
}

// WXUnary ops whose fp32 form the kernel table has with the same semantics.
bool unary_fp32(uint16_t wx_op, UnaryOp& op) {
  if (is(wx_op, U::relu))
    op = UnaryOp::kRelu;
  else if (is(wx_op, U::erf))
    op = UnaryOp::kErf;
  else if (is(wx_op, U::softsign))
    op = UnaryOp::kSoftsign;
  else if (is(wx_op, U::abs))
    op = UnaryOp::kAbs;
  else if (is(wx_op, U::neg))
    op = UnaryOp::kNeg;
  else
    return false;
  return true;
}

bool unary_in_place(const Model& m, const Node& nd) {
  UnaryOp op;
  return m.values[nd.outputs[0]].dtype == DType::kFp32 && m.values[nd.inputs[0]].dtype == DType::kFp32 &&
         unary_fp32(nd.wx_op, op);
}

void unary_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Node& nd = io.nd;
  const wx::ET it = io.et(nd.inputs[0]), ot = io.et(nd.outputs[0]);
  const size_t n = numel(io.out_shape());
  // fp32 ops the kernel table vectorizes go there (the WX kernel evaluates in double, one at a time).
  UnaryOp op;
  if (it == wx::ET::kF32 && ot == wx::ET::kF32 && unary_fp32(nd.wx_op, op)) {
    UnaryParams p;
    p.alpha = static_cast<float>(nd.dalpha);
    p.beta = static_cast<float>(nd.dbeta);
    a.k.unary(op, n, io.inf(0), io.outf(), p, a.par);
    return;
  }
  wx::unary(nd.wx_op, nd.dalpha, nd.dbeta, it, ot, n, io.in(0), io.out(), a.par);
}

// ---- WXBinary ----

void decode_binary(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXBinary*>(table);
  nd.wx_op = d.op(t->op(), "binary op");
  nd.inputs = {d.ref("input1_id", t->input1_id()), d.ref("input2_id", t->input2_id())};
  d.out_flags(t, nd);
}

void binary_check(const SupportCheck& c) {
  const WxTypes t(c);
  const uint16_t op = c.node().wx_op;
  if (t.in[0] != t.in[1]) t.bad("both inputs must have the same datatype");
  if (op >= static_cast<uint16_t>(B::equal) && op <= static_cast<uint16_t>(B::logical_xor)) {
    if (t.out != wx::ET::kU8) t.bad("comparisons and logical ops give uint8");
    if (op >= static_cast<uint16_t>(B::logical_and) && t.in[0] != wx::ET::kU8)
      t.bad("logical ops take uint8");
    return;
  }
  t.need_same();
}

void binary_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Node& nd = io.nd;
  wx::binary(nd.wx_op, io.et(nd.inputs[0]), io.et(nd.outputs[0]), io.in_shape(0), io.in_shape(1),
             io.out_shape(), io.in(0), io.in(1), io.out(), a.par);
}

// ---- WXWhere ----

void decode_where(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXWhere*>(table);
  nd.inputs = {d.ref("condition_id", t->condition_id()), d.ref("true_id", t->true_id()),
               d.ref("false_id", t->false_id())};
  d.out_flags(t, nd);
}

void where_shapes(ShapeInference& s) {
  Shape a, o;
  if (!broadcast_shapes(s.in(1), s.in(2), a) || !broadcast_shapes(s.in(0), a, o)) {
    s.fail("condition " + s.in_label(0) + ", " + s.in_label(1) + " and " + s.in_label(2) +
           " do not broadcast");
  }
  s.set_out(0, o);
}

void where_check(const SupportCheck& c) {
  const WxTypes t(c);
  if (t.in[0] != wx::ET::kU8) t.bad("the condition must be uint8");
  if (t.in[1] != t.out || t.in[2] != t.out) t.bad("both branches and the output must have the same datatype");
}

void where_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::where(io.esize(), io.in_shape(0), io.in_shape(1), io.in_shape(2), io.out_shape(),
            static_cast<const uint8_t*>(io.in(0)), io.in(1), io.in(2), io.out(), a.par);
}

}  // namespace

void register_wx_elementwise(NodeTable& table) {
  define_node(table, T::WXUnary, decode_unary, same_shape, unary_check, unary_exec).in_place = unary_in_place;
  define_node(table, T::WXBinary, decode_binary, broadcast_shape, binary_check, binary_exec);
  define_node(table, T::WXWhere, decode_where, where_shapes, where_check, where_exec);
}

}  // namespace webxnn
