// XNNPACK's element-wise binary nodes (fp32, numpy broadcasting): Add, Subtract, Multiply, Div, Minimum,
// Maximum, PReLU. One kernel (KernelTable::binary) runs them all; Add and Multiply also run qint8 (qadd, qmul:
// each operand with its own quantization, requantized to the output's). An fp32 Add may take the conv / FC
// that makes one of its operands into its step (a fused residual, see plan_fusion.cc).
#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

void prelu_shape(ShapeInference& s) {
  Shape o;
  if (!broadcast_shapes(s.in(0), s.in(1), o) || o != s.in(0)) {
    s.fail("slope " + s.in_label(1) + " does not broadcast to " + s.in_label(0));
  }
  s.set_out(0, o);
}

bool always(const Model&, const Node&) { return true; }

// Collapses a broadcast binary op to <= 8 dims of alternating broadcast patterns (dims of size 1 dropped,
// neighbours with the same pattern merged). Strides are in elements, 0 along broadcast dims.
struct Collapsed {
  size_t rank = 0;
  size_t out[kMaxRank] = {}, as[kMaxRank] = {}, bs[kMaxRank] = {};
};

Collapsed collapse_binary(const Shape& a, const Shape& b, const Shape& o) {
  const size_t r = o.size();
  size_t od[kMaxRank], ab[kMaxRank], bb[kMaxRank];  // ab/bb: 1 when broadcast along this dim
  size_t n = 0;
  for (size_t k = 0; k < r; ++k) {
    if (o[k] == 1) continue;
    const size_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    const size_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    const size_t fa = da == 1 ? 1 : 0, fb = db == 1 ? 1 : 0;
    if (n > 0 && ab[n - 1] == fa && bb[n - 1] == fb) {
      od[n - 1] *= o[k];
    } else {
      od[n] = o[k];
      ab[n] = fa;
      bb[n] = fb;
      ++n;
    }
  }
  Collapsed c;
  if (n == 0) {
    c.rank = 1;
    c.out[0] = 1;
    return c;
  }
  c.rank = n;
  size_t sa = 1, sb = 1;
  for (size_t k = n; k-- > 0;) {
    c.out[k] = od[k];
    c.as[k] = ab[k] ? 0 : sa;
    c.bs[k] = bb[k] ? 0 : sb;
    if (!ab[k]) sa *= od[k];
    if (!bb[k]) sb *= od[k];
  }
  return c;
}

// fp32, or (Add, Multiply) qint8 a and b, each with its own quantization, -> qint8.
void check_binary(const SupportCheck& c) {
  if (c.all_fp32()) return;
  const BinaryOp op = static_cast<BinaryOp>(node_def(c.node().type).op);
  if ((op == BinaryOp::kAdd || op == BinaryOp::kMul) && all_q8(c)) return need_q8(c, false);
  unsupported(c.label() + ": datatypes " + c.describe() + " are not supported (fp32" +
              (op == BinaryOp::kAdd || op == BinaryOp::kMul ? ", or qint8 per tensor" : " only") + ")");
}

// Runs fn(shape, a offset, b offset, out offset) over the kernel calls of a broadcast binary node: the kernels
// take up to kMaxBinaryRank dims, so any leading ones beyond that are looped over here (offsets in elements).
template <typename Fn>
void for_each_binary_call(const NodeIo& io, Fn fn) {
  const Collapsed c = collapse_binary(io.in_shape(0), io.in_shape(1), io.out_shape());
  const size_t lead = c.rank > kMaxBinaryRank ? c.rank - kMaxBinaryRank : 0;
  BinaryShape s;
  s.rank = c.rank - lead;
  size_t inner = 1;
  for (size_t d = 0; d < s.rank; ++d) {
    s.out_dims[d] = c.out[lead + d];
    s.a_strides[d] = c.as[lead + d];
    s.b_strides[d] = c.bs[lead + d];
    inner *= s.out_dims[d];
  }
  size_t outer = 1;
  for (size_t d = 0; d < lead; ++d) outer *= c.out[d];
  for (size_t o = 0; o < outer; ++o) {
    size_t rem = o, ao = 0, bo = 0;
    for (size_t d = lead; d-- > 0;) {
      const size_t idx = rem % c.out[d];
      rem /= c.out[d];
      ao += idx * c.as[d];
      bo += idx * c.bs[d];
    }
    fn(s, ao, bo, o * inner);
  }
}

void exec_binary(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const BinaryOp op = static_cast<BinaryOp>(node_def(io.nd.type).op);
  if (io.out_val().dtype == DType::kQint8) {
    const QElemParams q = q8_params(a.m, io.nd);
    const auto fn = op == BinaryOp::kAdd ? a.k.qadd : a.k.qmul;
    const int8_t* x = static_cast<const int8_t*>(io.in(0));
    const int8_t* y = static_cast<const int8_t*>(io.in(1));
    int8_t* out = static_cast<int8_t*>(io.out());
    for_each_binary_call(io, [&](const BinaryShape& s, size_t ao, size_t bo, size_t oo) {
      fn(s, x + ao, y + bo, out + oo, q, a.par);
    });
    return;
  }
  Activation act;  // output_min_max: XNNPACK's add, subtract, multiply and divide have one
  if (op == BinaryOp::kAdd || op == BinaryOp::kSub || op == BinaryOp::kMul || op == BinaryOp::kDiv) {
    act = io.nd.act;
  }
  const float* x = io.inf(0);
  const float* y = io.inf(1);
  float* outf = io.outf();
  for_each_binary_call(io, [&](const BinaryShape& s, size_t ao, size_t bo, size_t oo) {
    a.k.binary(op, s, x + ao, y + bo, outf + oo, act, a.par);
  });
}

}  // namespace

void register_binary(NodeTable& table) {
  auto add = [&](T type, BinaryOp op) -> NodeDef& {
    NodeDef& d = define_node(table, type, decode_2x1, broadcast_shape, check_binary, exec_binary);
    d.in_place = always;
    d.op = static_cast<uint8_t>(op);
    return d;
  };
  add(T::XNNAdd, BinaryOp::kAdd).traits = kResidualAdd;
  add(T::XNNSubtract, BinaryOp::kSub);
  add(T::XNNMultiply, BinaryOp::kMul);
  add(T::XNNDiv, BinaryOp::kDiv);
  add(T::XNNMinimum, BinaryOp::kMin);
  add(T::XNNMaximum, BinaryOp::kMax);
  add(T::XNNPReLU, BinaryOp::kPrelu).shapes = prelu_shape;
}

}  // namespace webxnn
