// Spatial resampling: StaticResizeBilinear2D (XNNPACK's, NHWC, fp32, fp16 or qint8) and WXResample2d (nearest or
// linear over any two axes, with the scales WebNN gives).
#include <cmath>

#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

void decode_bilinear(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNStaticResizeBilinear2D*>(table);
  nd.new_height = t->new_height();
  nd.new_width = t->new_width();
  d.io(t, nd);
}

void bilinear_shapes(ShapeInference& s) {
  s.need_rank(0, 4, 4);
  const Node& nd = s.node();
  if (nd.new_height == 0 || nd.new_width == 0) s.fail("new_height and new_width must be > 0");
  Shape o = s.in(0);
  o[1] = nd.new_height;
  o[2] = nd.new_width;
  s.set_out(0, o);
}

void bilinear_check(const SupportCheck& c) {
  const DType a = c.dt(c.node().inputs[0]), b = c.dt(c.node().outputs[0]);
  if (a == b && (a == DType::kFp32 || a == DType::kFp16)) return;
  if (all_q8(c)) return need_q8(c, true);
  unsupported(c.label() + ": datatypes " + c.describe() + " are not supported (fp32, fp16 or qint8)");
}

// qint8 (same quantization in and out): the raw values interpolated in double like fp32's, rounded half to even
// (so exact wherever the taps' weights make the result an integer: copies, align-corners 2x upsampling, ...).
void bilinear_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const bool q8 = io.out_val().dtype == DType::kQint8;
  wx::resize_bilinear_nhwc(q8 ? wx::ET::kI8 : io.et(io.nd.outputs[0]), io.nd.flags, io.in_shape(0),
                           io.out_shape(), io.in(0), io.out(), a.par, q8);
}

void decode_resample(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXResample2d*>(table);
  nd.wx_op = d.op(t->mode(), "resample mode");
  nd.ints_a = uvec(t->axes());
  if (t->scales()) nd.floats.assign(t->scales()->begin(), t->scales()->end());
  d.io(t, nd);
}

void resample_shapes(ShapeInference& s) {
  const Node& nd = s.node();
  const Shape& x = s.in(0);
  if (nd.ints_a.size() != 2 || nd.floats.size() != 2) s.fail("needs two axes and two scales");
  const uint32_t a0 = nd.ints_a[0], a1 = nd.ints_a[1];
  if (a0 >= x.size() || a1 >= x.size() || a0 == a1)
    s.fail("axes must be two distinct dims of " + s.in_label(0));
  for (float sc : nd.floats) {
    if (!std::isfinite(sc) || sc <= 0.f) s.fail("scales must be finite and > 0");
  }
  const Shape& dec = s.declared_out();
  if (dec.size() != x.size()) s.fail("the output rank differs from " + s.in_label(0));
  Shape o = x;
  o[a0] = dec[a0];
  o[a1] = dec[a1];
  for (uint32_t ax : {a0, a1}) {
    if (o[ax] != 0 && x[ax] == 0) s.fail(s.in_label(0) + " is empty along axis " + str(ax));
  }
  s.set_out(0, o);
}

void resample_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Node& nd = io.nd;
  const size_t axes[2] = {nd.ints_a[0], nd.ints_a[1]};
  const float scales[2] = {nd.floats[0], nd.floats[1]};
  wx::resample2d(io.et(nd.outputs[0]), nd.wx_op, io.in_shape(0), io.out_shape(), axes, scales, io.in(0),
                 io.out(), a.par);
}

}  // namespace

void register_resize(NodeTable& table) {
  define_node(table, T::XNNStaticResizeBilinear2D, decode_bilinear, bilinear_shapes, bilinear_check,
              bilinear_exec);
  define_node(table, T::WXResample2d, decode_resample, resample_shapes, check_wx_float, resample_exec);
}

}  // namespace webxnn
