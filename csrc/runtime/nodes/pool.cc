// Pooling, NHWC: AvgPooling2d, MaxPooling2d (fp32 or qint8 kernels), ArgMaxPooling2d (decoded and shaped, not
// run), GlobalAvgPooling2d (fp32 or qint8), and WXPool2d (max / average / L2 with ceil rounding, any float type).
#include <algorithm>

#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

void decode_pool(const NodeDecoder& d, const void* table, Node& nd, bool dilated) {
  const auto* t = static_cast<const fb::_XNNPooling2D*>(table);
  PoolParams& p = nd.pool;
  decode_pool_window(t, p);
  p.stride_h = t->stride_height();
  p.stride_w = t->stride_width();
  // ExecuTorch writes 0 (meaning 1) for average pooling, which has no dilation.
  p.dilation_h = dilated ? std::max<uint32_t>(1, t->dilation_height()) : 1;
  p.dilation_w = dilated ? std::max<uint32_t>(1, t->dilation_width()) : 1;
  p.act = nd.act;
  d.io(t, nd);
}
void decode_avg_pool(const NodeDecoder& d, const void* table, Node& nd) { decode_pool(d, table, nd, false); }
void decode_max_pool(const NodeDecoder& d, const void* table, Node& nd) { decode_pool(d, table, nd, true); }

void decode_argmax_pool(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNArgMaxPooling2d*>(table);
  PoolParams& p = nd.pool;
  decode_pool_window(t, p);
  p.stride_h = p.pool_h;
  p.stride_w = p.pool_w;
  nd.inputs = {d.ref("input_id", t->input_id())};
  nd.outputs = {d.ref("output_value_id", t->output_value_id()),
                d.ref("output_index_id", t->output_index_id())};
  nd.flags = t->flags();
}

void decode_wx_pool(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXPool2d*>(table);
  nd.wx_op = d.op(t->op(), "pool op");
  PoolParams& p = nd.pool;
  decode_pool_window(t, p);
  p.stride_h = t->stride_height();
  p.stride_w = t->stride_width();
  p.dilation_h = std::max<uint32_t>(1, t->dilation_height());
  p.dilation_w = std::max<uint32_t>(1, t->dilation_width());
  d.io(t, nd);
}

void need_window(const ShapeInference& s) {
  const PoolParams& p = s.node().pool;
  if (p.pool_h == 0 || p.pool_w == 0)
    s.fail("pooling size " + str(p.pool_h) + "x" + str(p.pool_w) + " must be > 0");
  if (p.stride_h == 0 || p.stride_w == 0)
    s.fail("stride " + str(p.stride_h) + "x" + str(p.stride_w) + " must be > 0");
}

void pool_shapes(ShapeInference& s) {
  const PoolParams& p = s.node().pool;
  need_window(s);
  if (s.node().flags & kFlagTensorflowSamePadding) {
    unsupported(s.model().node_label(s.index()) + ": TensorFlow SAME padding (flag 0x4) is not supported");
  }
  s.need_rank(0, 4, 4);
  s.need_nonempty(0);
  const Shape& x = s.in(0);
  uint64_t oh = 0, ow = 0;
  if (!window_out(x[1], p.pad_top, p.pad_bottom, p.pool_h, p.dilation_h, p.stride_h, oh) ||
      !window_out(x[2], p.pad_left, p.pad_right, p.pool_w, p.dilation_w, p.stride_w, ow)) {
    s.fail(s.in_label(0) + " is smaller than the " + str(p.pool_h) + "x" + str(p.pool_w) +
           " window plus padding");
  }
  if (p.pad_top >= p.pool_h || p.pad_bottom >= p.pool_h || p.pad_left >= p.pool_w ||
      p.pad_right >= p.pool_w) {
    // A window made only of padding has no element to pool over.
    s.fail("padding must be smaller than the pooling window");
  }
  Shape o = {x[0], static_cast<size_t>(oh), static_cast<size_t>(ow), x[3]};
  s.set_out(0, o);
  if (s.node().outputs.size() > 1) s.set_out(1, o);
}

void global_pool_shapes(ShapeInference& s) {
  s.need_rank(0, 3, kMaxRank);
  s.need_nonempty(0);
  Shape o = s.in(0);
  const size_t r = o.size();
  if (s.node().flags & kFlagKeepDims) {
    o[r - 3] = 1;
    o[r - 2] = 1;
  } else {
    o.erase(o.begin() + static_cast<std::ptrdiff_t>(r - 3), o.begin() + static_cast<std::ptrdiff_t>(r - 1));
  }
  s.set_out(0, o);
}

void wx_pool_shapes(ShapeInference& s) {
  const PoolParams& p = s.node().pool;
  need_window(s);
  s.need_rank(0, 4, 4);
  s.need_nonempty(0);
  const Shape& x = s.in(0);
  const Shape& di = s.declared_in(0);
  const Shape& dec = s.declared_out();
  if (dec.size() != 4) s.fail("the output must have rank 4");
  // Output sizes: floor (default) or ceil rounding, whichever the declared output used.
  auto sizes = [&](uint64_t in_sz, uint64_t pa, uint64_t pb, uint64_t k, uint64_t dil, uint64_t st,
                   uint64_t& fl, uint64_t& ce) {
    const uint64_t eff = dil * (k - 1) + 1, padded = in_sz + pa + pb;
    if (padded < eff) return false;
    fl = (padded - eff) / st + 1;
    ce = (padded - eff + st - 1) / st + 1;
    return true;
  };
  uint64_t fh, ch, fw, cw, dfh, dch, dfw, dcw;
  if (!sizes(x[1], p.pad_top, p.pad_bottom, p.pool_h, p.dilation_h, p.stride_h, fh, ch) ||
      !sizes(x[2], p.pad_left, p.pad_right, p.pool_w, p.dilation_w, p.stride_w, fw, cw) ||
      !sizes(di[1], p.pad_top, p.pad_bottom, p.pool_h, p.dilation_h, p.stride_h, dfh, dch) ||
      !sizes(di[2], p.pad_left, p.pad_right, p.pool_w, p.dilation_w, p.stride_w, dfw, dcw)) {
    s.fail(s.in_label(0) + " is smaller than the " + str(p.pool_h) + "x" + str(p.pool_w) +
           " window plus padding");
  }
  const bool ceil_h = dec[1] == dch && dec[1] != dfh;
  const bool ceil_w = dec[2] == dcw && dec[2] != dfw;
  s.set_out(0, {x[0], static_cast<size_t>(ceil_h ? ch : fh), static_cast<size_t>(ceil_w ? cw : fw), x[3]});
}

// fp32, or qint8 per tensor: max pooling keeps the input's quantization, average pooling requantizes.
void check_max_pool(const SupportCheck& c) {
  if (c.all_fp32()) return;
  if (all_q8(c)) return need_q8(c, true);
  unsupported(c.label() + ": datatypes " + c.describe() + " are not supported (fp32, or qint8 per tensor)");
}
void check_avg_pool(const SupportCheck& c) {
  if (c.all_fp32()) return;
  if (all_q8(c)) return need_q8(c, false);
  unsupported(c.label() + ": datatypes " + c.describe() + " are not supported (fp32, or qint8 per tensor)");
}

const int8_t* in8(const NodeIo& io) { return static_cast<const int8_t*>(io.in(0)); }
int8_t* out8(const NodeIo& io) { return static_cast<int8_t*>(io.out()); }

void max_pool_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Shape& x = io.in_shape(0);
  const size_t OH = io.out_shape()[1], OW = io.out_shape()[2];
  if (io.out_val().dtype == DType::kQint8) {
    const QElemParams q = q8_params(a.m, io.nd);
    a.k.qmax_pool2d(io.nd.pool, x[0], x[1], x[2], x[3], in8(io), OH, OW, out8(io), q.out_min, q.out_max,
                    a.par);
    return;
  }
  a.k.max_pool2d(io.nd.pool, x[0], x[1], x[2], x[3], io.inf(0), OH, OW, io.outf(), a.par);
}

void avg_pool_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Shape& x = io.in_shape(0);
  const size_t OH = io.out_shape()[1], OW = io.out_shape()[2];
  if (io.out_val().dtype == DType::kQint8) {
    a.k.qavg_pool2d(io.nd.pool, x[0], x[1], x[2], x[3], in8(io), OH, OW, out8(io), q8_params(a.m, io.nd),
                    a.par);
    return;
  }
  a.k.avg_pool2d(io.nd.pool, x[0], x[1], x[2], x[3], io.inf(0), OH, OW, io.outf(), a.par);
}

void global_pool_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Shape& x = io.in_shape(0);
  const size_t r = x.size();
  const size_t C = x[r - 1], HW = x[r - 3] * x[r - 2];
  size_t N = 1;
  for (size_t d = 0; d + 3 < r; ++d) N *= x[d];
  if (io.out_val().dtype == DType::kQint8) {
    a.k.qglobal_avg_pool(N, HW, C, in8(io), out8(io), q8_params(a.m, io.nd), a.par);
    return;
  }
  a.k.global_avg_pool(N, HW, C, io.inf(0), io.outf(), io.nd.act, a.par);
}

void wx_pool_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Shape& x = io.in_shape(0);
  const Shape& os = io.out_shape();
  wx::pool2d(io.nd.wx_op, io.et(io.nd.outputs[0]), io.nd.pool, x[0], x[1], x[2], x[3], io.in(0), os[1], os[2],
             io.out(), a.par);
}

}  // namespace

void register_pool(NodeTable& table) {
  define_node(table, T::XNNAvgPooling2d, decode_avg_pool, pool_shapes, check_avg_pool, avg_pool_exec);
  define_node(table, T::XNNMaxPooling2d, decode_max_pool, pool_shapes, check_max_pool, max_pool_exec);
  // No kernel: decoded and shaped, then refused by the support check.
  define_node(table, T::XNNArgMaxPooling2d, decode_argmax_pool, pool_shapes, nullptr, nullptr);
  define_node(table, T::XNNGlobalAvgPooling2d, decode_1x1, global_pool_shapes, check_avg_pool,
              global_pool_exec);
  define_node(table, T::WXPool2d, decode_wx_pool, wx_pool_shapes, check_wx_float, wx_pool_exec);
}

}  // namespace webxnn
