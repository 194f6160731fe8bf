// XNNPACK's element-wise unary nodes (fp32): Sigmoid, Clamp, Floor, ..., LeakyReLU, ELU. One kernel
// (KernelTable::unary) runs them all; HardSwish, Sigmoid and Gelu also fuse into the conv / FC before them.
#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

void decode_leaky_relu(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNLeakyReLU*>(table);
  nd.alpha = t->negative_slope();
  d.io(t, nd);
}

void decode_elu(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNELU*>(table);
  nd.alpha = t->alpha();
  d.io(t, nd);
}

bool always(const Model&, const Node&) { return true; }

void exec_unary(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const UnaryOp op = static_cast<UnaryOp>(node_def(io.nd.type).op);
  UnaryParams p;
  p.alpha = io.nd.alpha;
  if (op == UnaryOp::kClamp) p.act = io.nd.act;
  a.k.unary(op, numel(io.out_shape()), io.inf(0), io.outf(), p, a.par);
}

}  // namespace

void register_unary(NodeTable& table) {
  auto add = [&](T type, UnaryOp op, PostOp post = PostOp::kNone, DecodeFn decode = decode_1x1) {
    NodeDef& d = define_node(table, type, decode, same_shape, check_fp32, exec_unary);
    d.in_place = always;
    d.op = static_cast<uint8_t>(op);
    d.post_op = post;
  };
  add(T::XNNSigmoid, UnaryOp::kSigmoid, PostOp::kSigmoid);
  add(T::XNNClamp, UnaryOp::kClamp);
  add(T::XNNFloor, UnaryOp::kFloor);
  add(T::XNNSquareRoot, UnaryOp::kSqrt);
  add(T::XNNCeiling, UnaryOp::kCeil);
  add(T::XNNHardswish, UnaryOp::kHardswish, PostOp::kHardswish);
  add(T::XNNNegate, UnaryOp::kNeg);
  add(T::XNNSquare, UnaryOp::kSquare);
  add(T::XNNAbs, UnaryOp::kAbs);
  add(T::XNNReciprocalSquareRoot, UnaryOp::kRsqrt);
  add(T::XNNLog, UnaryOp::kLog);
  add(T::XNNGelu, UnaryOp::kGelu, PostOp::kGelu);
  add(T::XNNTanh, UnaryOp::kTanh);
  add(T::XNNExp, UnaryOp::kExp);
  add(T::XNNSin, UnaryOp::kSin);
  add(T::XNNCos, UnaryOp::kCos);
  add(T::XNNLeakyReLU, UnaryOp::kLeakyRelu, PostOp::kNone, decode_leaky_relu);
  add(T::XNNELU, UnaryOp::kElu, PostOp::kNone, decode_elu);
}

}  // namespace webxnn
