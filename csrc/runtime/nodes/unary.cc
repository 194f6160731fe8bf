// XNNPACK's element-wise unary nodes (fp32): Sigmoid, Clamp, Floor, ..., LeakyReLU, ELU. One kernel
// (KernelTable::unary) runs them all; HardSwish, Sigmoid and Gelu also fuse into the conv / FC before them.
// Sigmoid, Tanh, HardSwish, Gelu, LeakyReLU, ELU and Clamp also run qint8 -> qint8, by a 256-entry table
// built at load (kPacksTable) and the qlut kernel.
#include <algorithm>
#include <cmath>

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

// ---- qint8: a 256-entry lookup table per node, built at load ----

bool q8_op(UnaryOp op) {
  switch (op) {
    case UnaryOp::kSigmoid:
    case UnaryOp::kTanh:
    case UnaryOp::kHardswish:
    case UnaryOp::kGelu:
    case UnaryOp::kLeakyRelu:
    case UnaryOp::kElu:
    case UnaryOp::kClamp: return true;
    default: return false;
  }
}

// The op on a real number, in double precision (the table's definition; tests compute the same in numpy).
double real_op(UnaryOp op, double x, double alpha) {
  switch (op) {
    case UnaryOp::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case UnaryOp::kTanh: return std::tanh(x);
    case UnaryOp::kHardswish: return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
    case UnaryOp::kGelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case UnaryOp::kLeakyRelu: return x >= 0 ? x : alpha * x;
    case UnaryOp::kElu: return x >= 0 ? x : alpha * std::expm1(x);
    default: return x;  // kClamp: the clamp is the output bounds
  }
}

// fp32, or qint8 per tensor (Clamp: with the input's quantization) for the ops with a table.
void check_unary(const SupportCheck& c) {
  if (c.all_fp32()) return;
  const UnaryOp op = static_cast<UnaryOp>(node_def(c.node().type).op);
  if (q8_op(op) && all_q8(c)) return need_q8(c, op == UnaryOp::kClamp);
  unsupported(c.label() + ": datatypes " + c.describe() + " are not supported (fp32" +
              (q8_op(op) ? ", or qint8 per tensor" : " only") + ")");
}

size_t unary_table_size(const PackArgs& a) {
  return a.m.values[a.m.nodes[a.node].outputs[0]].dtype == DType::kQint8 ? 256 : 0;
}

// Entry q (at uint8_t(q)): x = (q - zx) * sx, y = op(x), all in double; then rint(y / sy) + zy (half to
// even), saturated to [-128, 127] and clamped to the node's output bounds (quantize_bound).
void unary_table(const PackArgs& a, void* dst) {
  const Node& nd = a.m.nodes[a.node];
  const UnaryOp op = static_cast<UnaryOp>(node_def(nd.type).op);
  const QuantParams& qx = a.m.values[nd.inputs[0]].quant;
  const QuantParams& qy = a.m.values[nd.outputs[0]].quant;
  const double lo = quantize_bound(nd.act.min, qy), hi = quantize_bound(nd.act.max, qy);
  int8_t* t = static_cast<int8_t*>(dst);
  for (int q = -128; q < 128; ++q) {
    const double y = real_op(op, double(q - qx.zero_point) * double(qx.scale), double(nd.alpha));
    double r = std::nearbyint(y / double(qy.scale)) + qy.zero_point;
    r = std::isnan(r) ? lo : std::min(hi, std::max(lo, r));
    t[static_cast<uint8_t>(q)] = static_cast<int8_t>(r);
  }
}

void exec_unary(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const UnaryOp op = static_cast<UnaryOp>(node_def(io.nd.type).op);
  if (io.out_val().dtype == DType::kQint8) {
    int8_t buf[256];
    a.k.qlut(numel(io.out_shape()), static_cast<const int8_t*>(io.in(0)), static_cast<int8_t*>(io.out()),
             packed_table(a, i, buf), a.par);
    return;
  }
  UnaryParams p;
  p.alpha = io.nd.alpha;
  if (op == UnaryOp::kClamp) p.act = io.nd.act;
  a.k.unary(op, numel(io.out_shape()), io.inf(0), io.outf(), p, a.par);
}

}  // namespace

void register_unary(NodeTable& table) {
  auto add = [&](T type, UnaryOp op, PostOp post = PostOp::kNone, DecodeFn decode = decode_1x1) {
    NodeDef& d = define_node(table, type, decode, same_shape, check_unary, exec_unary);
    d.in_place = always;
    d.pack_size = unary_table_size;
    d.pack = unary_table;
    d.traits = kPacksTable;
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
