// Indexed reads and writes (webxnn nodes): WXGather, WXGatherElements, WXGatherND, WXScatterElements,
// WXScatterND. Indices of any integer type; negative ones count from the end, out-of-range ones are clamped
// (unless a gather's flags ask for a check of ids from a graph input: Program::check_gather_indices).
#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

// ---- decode: (input, indices[, updates]) and an axis where the op has one ----

template <typename Table>
void decode_indices(const NodeDecoder& d, const Table* t, Node& nd) {
  nd.inputs = {d.ref("input_id", t->input_id()), d.ref("indices_id", t->indices_id())};
  d.out_flags(t, nd);
  // the checked-indices flags (model.h); any other bit is unknown, and wrap means nothing unchecked
  if (nd.flags != 0 && nd.flags != kFlagCheckedIndices &&
      nd.flags != (kFlagCheckedIndices | kFlagIndicesWrap))
    d.fail("flags " + str(nd.flags) +
           " must be 0, 1 (checked indices) or 3 (checked, negatives from the end)");
}

template <typename Table>
void decode_updates(const NodeDecoder& d, const Table* t, Node& nd) {
  nd.inputs = {d.ref("input_id", t->input_id()), d.ref("indices_id", t->indices_id()),
               d.ref("updates_id", t->updates_id())};
  d.out_flags(t, nd);
}

void decode_gather(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXGather*>(table);
  nd.axis = t->axis();
  decode_indices(d, t, nd);
}

void decode_gather_elements(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXGatherElements*>(table);
  nd.axis = t->axis();
  decode_indices(d, t, nd);
}

void decode_gather_nd(const NodeDecoder& d, const void* table, Node& nd) {
  decode_indices(d, static_cast<const fb::WXGatherND*>(table), nd);
}

void decode_scatter_elements(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXScatterElements*>(table);
  nd.axis = t->axis();
  decode_updates(d, t, nd);
}

void decode_scatter_nd(const NodeDecoder& d, const void* table, Node& nd) {
  decode_updates(d, static_cast<const fb::WXScatterND*>(table), nd);
}

// ---- shapes ----

void gather_shapes(ShapeInference& s) {
  const Shape& x = s.in(0);
  const Shape& idx = s.in(1);
  const uint32_t axis = s.node().axis;
  if (axis >= x.size()) s.fail("axis " + str(axis) + " is out of range for " + s.in_label(0));
  Shape o(x.begin(), x.begin() + axis);
  o.insert(o.end(), idx.begin(), idx.end());
  o.insert(o.end(), x.begin() + axis + 1, x.end());
  s.set_out(0, o);
}

// gatherElements / scatterElements: indices (and updates) of the input's rank, no larger off the axis.
void check_elements(ShapeInference& s) {
  const Shape& x = s.in(0);
  const Shape& idx = s.in(1);
  const uint32_t axis = s.node().axis;
  if (axis >= x.size()) s.fail("axis " + str(axis) + " is out of range for " + s.in_label(0));
  if (idx.size() != x.size()) s.fail("indices " + s.in_label(1) + " must have the rank of " + s.in_label(0));
  for (size_t d = 0; d < x.size(); ++d) {
    if (d != axis && idx[d] > x[d]) {
      s.fail("indices " + s.in_label(1) + " are larger than " + s.in_label(0) + " in dim " + str(d));
    }
  }
}

void gather_elements_shapes(ShapeInference& s) {
  check_elements(s);
  s.set_out(0, s.in(1));
}

void scatter_elements_shapes(ShapeInference& s) {
  check_elements(s);
  if (s.in(2) != s.in(1))
    s.fail("updates " + s.in_label(2) + " must have the dims of indices " + s.in_label(1));
  s.set_out(0, s.in(0));
}

// gatherND / scatterND: the slices the indices pick.
Shape nd_slices(ShapeInference& s) {
  const Shape& x = s.in(0);
  const Shape& idx = s.in(1);
  if (idx.empty()) s.fail("indices " + s.in_label(1) + " must have rank >= 1");
  const size_t k = idx.back();
  if (k < 1 || k > x.size()) {
    s.fail("the last dim of indices " + s.in_label(1) + " must be 1.." + str(x.size()) + " (the rank of " +
           s.in_label(0) + ")");
  }
  Shape slices(idx.begin(), idx.end() - 1);
  slices.insert(slices.end(), x.begin() + static_cast<std::ptrdiff_t>(k), x.end());
  return slices;
}

void gather_nd_shapes(ShapeInference& s) { s.set_out(0, nd_slices(s)); }

void scatter_nd_shapes(ShapeInference& s) {
  const Shape slices = nd_slices(s);
  if (s.in(2) != slices) s.fail("updates " + s.in_label(2) + " should be " + shape_str(slices));
  s.set_out(0, s.in(0));
}

// ---- checks ----

void gather_check(const SupportCheck& c) {
  const WxTypes t(c);
  t.need_same();
  if (!WxTypes::is_int(t.in[1])) t.bad("indices must be an integer datatype");
}

void scatter_check(const SupportCheck& c) {
  const WxTypes t(c);
  if (t.out != t.in[0] || t.in[2] != t.in[0]) t.bad("input, updates and output must have the same datatype");
  if (!WxTypes::is_int(t.in[1])) t.bad("indices must be an integer datatype");
}

// ---- execution ----

void gather_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::gather(io.esize(), io.in_shape(0), io.nd.axis, io.et(io.nd.inputs[1]), io.in_shape(1), io.in(0),
             io.in(1), io.out(), a.par);
}

void gather_elements_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::gather_elements(io.esize(), io.in_shape(0), io.nd.axis, io.et(io.nd.inputs[1]), io.in_shape(1),
                      io.in(0), io.in(1), io.out(), a.par);
}

void gather_nd_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::gather_nd(io.esize(), io.in_shape(0), io.et(io.nd.inputs[1]), io.in_shape(1), io.in(0), io.in(1),
                io.out(), a.par);
}

void scatter_elements_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::scatter_elements(io.esize(), io.in_shape(0), io.nd.axis, io.et(io.nd.inputs[1]), io.in_shape(1),
                       io.in(0), io.in(1), io.in(2), io.out());
}

void scatter_nd_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::scatter_nd(io.esize(), io.in_shape(0), io.et(io.nd.inputs[1]), io.in_shape(1), io.in(0), io.in(1),
                 io.in(2), io.out());
}

}  // namespace

void register_wx_gather(NodeTable& table) {
  define_node(table, T::WXGather, decode_gather, gather_shapes, gather_check, gather_exec);
  define_node(table, T::WXGatherElements, decode_gather_elements, gather_elements_shapes, gather_check,
              gather_elements_exec);
  define_node(table, T::WXGatherND, decode_gather_nd, gather_nd_shapes, gather_check, gather_nd_exec);
  define_node(table, T::WXScatterElements, decode_scatter_elements, scatter_elements_shapes, scatter_check,
              scatter_elements_exec);
  define_node(table, T::WXScatterND, decode_scatter_nd, scatter_nd_shapes, scatter_check, scatter_nd_exec);
}

}  // namespace webxnn
