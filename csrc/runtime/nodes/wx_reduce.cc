// Reductions (webxnn nodes): WXReduce (sum, mean, max, ..., arg_max / arg_min over `axes`) and
// WXCumulativeSum (a running sum along one axis, exclusive and / or reversed).
#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;
using R = fb::WXReduceOp;

bool is_arg(uint16_t op) {
  return op == static_cast<uint16_t>(R::arg_max) || op == static_cast<uint16_t>(R::arg_min);
}

void decode_reduce(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXReduce*>(table);
  nd.wx_op = d.op(t->op(), "reduce op");
  nd.ints_a = uvec(t->axes());
  nd.keep_dims = t->keep_dims();
  d.io(t, nd);
}

void reduce_shapes(ShapeInference& s) {
  const Node& nd = s.node();
  const Shape& x = s.in(0);
  std::vector<bool> red(x.size(), false);
  for (uint32_t a : nd.ints_a) {
    if (a >= x.size() || red[a]) s.fail("axes must be distinct dims of " + s.in_label(0));
    red[a] = true;
  }
  if (is_arg(nd.wx_op) && nd.ints_a.size() != 1) {
    s.fail("arg_max / arg_min take exactly one axis, got " + str(nd.ints_a.size()));
  }
  Shape o;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!red[d])
      o.push_back(x[d]);
    else if (nd.keep_dims)
      o.push_back(1);
  }
  s.set_out(0, o);
}

void reduce_check(const SupportCheck& c) {
  const WxTypes t(c);
  if (is_arg(c.node().wx_op)) {
    if (!WxTypes::is_int(t.out)) t.bad("arg_max / arg_min give an integer datatype");
    return;
  }
  t.need_same();
}

void reduce_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Node& nd = io.nd;
  const Shape& x = io.in_shape(0);
  const std::vector<bool> mask = io.axes(x.size());
  wx::reduce(nd.wx_op, io.et(nd.inputs[0]), io.et(nd.outputs[0]), x, mask, io.in(0), io.out(), a.par);
}

void decode_cumsum(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXCumulativeSum*>(table);
  nd.axis = t->axis();
  nd.flag_a = t->exclusive();
  nd.flag_b = t->reversed();
  d.io(t, nd);
}

void cumsum_shapes(ShapeInference& s) {
  if (s.node().axis >= s.in(0).size())
    s.fail("axis " + str(s.node().axis) + " is out of range for " + s.in_label(0));
  s.set_out(0, s.in(0));
}

void cumsum_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Node& nd = io.nd;
  wx::cumulative_sum(io.et(nd.outputs[0]), io.in_shape(0), nd.axis, nd.flag_a, nd.flag_b, io.in(0), io.out(),
                     a.par);
}

}  // namespace

void register_wx_reduce(NodeTable& table) {
  define_node(table, T::WXReduce, decode_reduce, reduce_shapes, reduce_check, reduce_exec);
  define_node(table, T::WXCumulativeSum, decode_cumsum, cumsum_shapes, check_wx_same, cumsum_exec);
}

}  // namespace webxnn
