// Layout nodes of webxnn (any element type the WX kernels take): WXExpand, WXTile, WXReverse, WXTriangular,
// WXPad (constant / edge / reflection / symmetric) and WXSlice (strided).
#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;
using P = fb::WXPadMode;

// ---- WXExpand, WXTile ----

void decode_expand(const NodeDecoder& d, const void* table, Node& nd) {
  d.io(static_cast<const fb::WXExpand*>(table), nd);
}

void expand_shapes(ShapeInference& s) {
  const Shape o = s.follow_input(s.declared_out());
  Shape b;
  if (!broadcast_shapes(s.in(0), o, b) || b != o) {
    s.fail(s.in_label(0) + " does not broadcast to the output dims " + shape_str(o));
  }
  s.set_out(0, o);
}

void expand_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::expand(io.esize(), io.in_shape(0), io.out_shape(), io.in(0), io.out(), a.par);
}

void decode_tile(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXTile*>(table);
  nd.ints_a = uvec(t->repetitions());
  d.io(t, nd);
}

void tile_shapes(ShapeInference& s) {
  const Shape& x = s.in(0);
  const auto& reps = s.node().ints_a;
  if (reps.size() != x.size()) {
    s.fail("repetitions has " + str(reps.size()) + " entries but " + s.in_label(0) + " has rank " +
           str(x.size()));
  }
  Shape o(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    const uint64_t r = reps[d];
    if (r == 0) s.fail("repetitions must be >= 1");
    if (x[d] != 0 && r > kMaxTensorBytes / x[d]) s.fail("tiled dim " + str(d) + " is too large");
    o[d] = static_cast<size_t>(x[d] * r);
  }
  s.set_out(0, o);
}

void tile_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::tile(io.esize(), io.in_shape(0), io.out_shape(), io.in(0), io.out(), a.par);
}

// ---- WXReverse, WXTriangular ----

void decode_reverse(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXReverse*>(table);
  nd.ints_a = uvec(t->axes());
  d.io(t, nd);
}

void reverse_shapes(ShapeInference& s) {
  s.axes_mask(s.in(0).size());
  s.set_out(0, s.in(0));
}

void reverse_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Shape& x = io.in_shape(0);
  const std::vector<bool> mask = io.axes(x.size());
  wx::reverse(io.esize(), x, mask, io.in(0), io.out(), a.par);
}

void decode_triangular(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXTriangular*>(table);
  nd.flag_a = t->upper();
  nd.diagonal = t->diagonal();
  d.io(t, nd);
}

void triangular_shapes(ShapeInference& s) {
  s.need_rank(0, 2, kMaxRank);
  s.set_out(0, s.in(0));
}

void triangular_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::triangular(io.esize(), io.in_shape(0), io.nd.flag_a, io.nd.diagonal, io.in(0), io.out(), a.par);
}

// ---- WXPad ----

void decode_pad(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXPad*>(table);
  nd.wx_op = d.op(t->mode(), "pad mode");
  nd.ints_a = uvec(t->pre_paddings());
  nd.ints_b = uvec(t->post_paddings());
  nd.dalpha = t->value();
  d.io(t, nd);
}

void pad_shapes(ShapeInference& s) {
  const Node& nd = s.node();
  const Shape& x = s.in(0);
  if (nd.ints_a.size() != x.size() || nd.ints_b.size() != x.size()) {
    s.fail("pre_paddings (" + str(nd.ints_a.size()) + ") and post_paddings (" + str(nd.ints_b.size()) +
           ") need one entry per dim of " + s.in_label(0));
  }
  const auto mode = static_cast<P>(nd.wx_op);
  Shape o(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    const uint64_t a = nd.ints_a[d], b = nd.ints_b[d];
    if (mode == P::edge && x[d] == 0 && (a || b)) s.fail("edge padding of an empty dim " + str(d));
    if (mode == P::reflection && (a >= x[d] || b >= x[d]) && (a || b)) {
      s.fail("reflection padding of dim " + str(d) + " must be smaller than its size " + str(x[d]));
    }
    if (mode == P::symmetric && (a > x[d] || b > x[d])) {
      s.fail("symmetric padding of dim " + str(d) + " must not exceed its size " + str(x[d]));
    }
    const uint64_t v = uint64_t(x[d]) + a + b;
    if (v > kMaxTensorBytes) s.fail("padded dim " + str(d) + " is too large");
    o[d] = static_cast<size_t>(v);
  }
  s.set_out(0, o);
}

void pad_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  uint8_t fill[8] = {};
  wx::fill_value(io.et(io.nd.outputs[0]), io.nd.dalpha, fill);
  wx::pad(io.esize(), io.in_shape(0), io.nd.ints_a, io.out_shape(), io.nd.wx_op, fill, io.in(0), io.out(),
          a.par);
}

// ---- WXSlice ----

void decode_slice(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXSlice*>(table);
  nd.ints_a = uvec(t->starts());
  nd.ints_b = uvec(t->strides());
  d.io(t, nd);
}

void slice_shapes(ShapeInference& s) {
  const Shape& x = s.in(0);
  const auto& st = s.node().ints_a;
  const auto& sd = s.node().ints_b;
  if (st.size() != x.size() || sd.size() != x.size()) {
    s.fail("starts (" + str(st.size()) + ") and strides (" + str(sd.size()) + ") need one entry per dim of " +
           s.in_label(0));
  }
  Shape o = s.declared_out();
  if (o.size() != x.size()) s.fail("the output rank differs from " + s.in_label(0));
  const Shape& di = s.declared_in(0);
  for (size_t d = 0; d < x.size(); ++d) {
    if (sd[d] == 0) s.fail("stride of dim " + str(d) + " must be >= 1");
    if (x[d] != di[d] && st[d] == 0 && sd[d] == 1 && o[d] == di[d]) o[d] = x[d];  // dynamic dim, whole
    if (o[d] != 0 && uint64_t(st[d]) + uint64_t(o[d] - 1) * sd[d] >= x[d]) {
      s.fail("slice of dim " + str(d) + " (start " + str(st[d]) + ", stride " + str(sd[d]) + ", " +
             str(o[d]) + " elements) is out of range for " + s.in_label(0));
    }
  }
  s.set_out(0, o);
}

void slice_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  wx::strided_slice(io.esize(), io.in_shape(0), io.nd.ints_a, io.nd.ints_b, io.out_shape(), io.in(0),
                    io.out(), a.par);
}

}  // namespace

void register_wx_layout(NodeTable& table) {
  define_node(table, T::WXExpand, decode_expand, expand_shapes, check_wx_same, expand_exec);
  define_node(table, T::WXTile, decode_tile, tile_shapes, check_wx_same, tile_exec);
  define_node(table, T::WXReverse, decode_reverse, reverse_shapes, check_wx_same, reverse_exec);
  define_node(table, T::WXTriangular, decode_triangular, triangular_shapes, check_wx_same, triangular_exec);
  define_node(table, T::WXPad, decode_pad, pad_shapes, check_wx_same, pad_exec);
  define_node(table, T::WXSlice, decode_slice, slice_shapes, check_wx_same, slice_exec);
}

}  // namespace webxnn
