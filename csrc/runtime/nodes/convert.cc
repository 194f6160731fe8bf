// Datatype changes: Convert (fp32 <-> qint8, qint8 -> qint8 by a requantization table, or between fp32, fp16
// and the plain integer types) and WXQuantize (quantize / dequantize with scale and zero-point tensors,
// block-wise or broadcast).
#include <algorithm>
#include <cmath>

#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

void convert_check(const SupportCheck& c) {
  const DType a = c.dt(c.node().inputs[0]), b = c.dt(c.node().outputs[0]);
  if ((a == DType::kFp32 && b == DType::kQint8) || (a == DType::kQint8 && b == DType::kFp32)) return;
  if (a == DType::kQint8 && b == DType::kQint8 && all_q8(c)) return need_q8(c, false);  // requantize
  if (a == DType::kFp32 && b == DType::kQdint8) return;  // dynamic: per-row parameters (plan.h: qd8_params)
  wx::ET ea, eb;
  if (wx_et(a, ea) && wx_et(b, eb)) return;
  unsupported(
      c.label() + ": conversion " + c.describe() +
      " is not supported (fp32 <-> qint8, fp32 -> qdint8, or between fp32, fp16 and the integer types)");
}

void convert_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const size_t n = numel(io.out_shape());
  const Value& x = io.in_val(0);
  const Value& y = io.out_val();
  wx::ET ea, eb;
  if (wx_et(x.dtype, ea) && wx_et(y.dtype, eb)) {
    wx::convert(ea, eb, n, io.in(0), io.out(), a.par);
  } else if (x.dtype == DType::kQint8 && y.dtype == DType::kQint8) {
    int8_t buf[256];
    a.k.qlut(n, static_cast<const int8_t*>(io.in(0)), static_cast<int8_t*>(io.out()), packed_table(a, i, buf),
             a.par);
  } else if (y.dtype == DType::kQdint8) {
    const size_t rows = qd8_rows(y, io.out_shape());
    a.k.quantize_qd8(rows, rows ? n / rows : 0, io.inf(0), static_cast<int8_t*>(io.out()),
                     qd8_params(io.out(), io.out_shape()), a.par);
  } else if (y.dtype == DType::kQint8) {
    a.k.quantize_qs8(n, io.inf(0), static_cast<int8_t*>(io.out()), y.quant.scale, y.quant.zero_point, a.par);
  } else {
    a.k.dequantize_qs8(n, static_cast<const int8_t*>(io.in(0)), io.outf(), x.quant.scale, x.quant.zero_point,
                       a.par);
  }
}

// qint8 -> qint8: the requantization table (kPacksTable), qgemm's arithmetic on one value: entry q (at
// uint8_t(q)) = clamp(rint(float(q - zx) * m) + zy, -128, 127) with m = sx / sy in fp32.
size_t requant_table_size(const PackArgs& a) {
  const Node& nd = a.m.nodes[a.node];
  const bool q8 =
      a.m.values[nd.inputs[0]].dtype == DType::kQint8 && a.m.values[nd.outputs[0]].dtype == DType::kQint8;
  return q8 ? 256 : 0;
}

void requant_table(const PackArgs& a, void* dst) {
  const Node& nd = a.m.nodes[a.node];
  const QuantParams& qx = a.m.values[nd.inputs[0]].quant;
  const QuantParams& qy = a.m.values[nd.outputs[0]].quant;
  const float m = qx.scale / qy.scale;
  const float lo = static_cast<float>(-128 - qy.zero_point), hi = static_cast<float>(127 - qy.zero_point);
  int8_t* t = static_cast<int8_t*>(dst);
  for (int q = -128; q < 128; ++q) {
    float v = static_cast<float>(q - qx.zero_point) * m;
    v = std::min(hi, std::max(lo, v));
    t[static_cast<uint8_t>(q)] = static_cast<int8_t>(static_cast<int32_t>(std::nearbyint(v)) + qy.zero_point);
  }
}

void decode_quantize(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXQuantize*>(table);
  nd.wx_op = d.op(t->op(), "quantize op");
  nd.inputs = {d.ref("input_id", t->input_id()), d.ref("scale_id", t->scale_id()),
               d.ref("zero_point_id", t->zero_point_id(), true)};
  d.out_flags(t, nd);
}

void quantize_shapes(ShapeInference& s) {
  for (size_t k = 1; k <= 2; ++k) {
    if (s.has_in(k) && !wx::blockwise_compatible(s.in(k), s.in(0))) {
      s.fail((k == 1 ? "scale " : "zero point ") + s.in_label(k) +
             " neither broadcasts nor repeats block-wise to " + s.in_label(0));
    }
  }
  s.set_out(0, s.in(0));
}

void quantize_check(const SupportCheck& c) {
  const WxTypes t(c);
  if (!wx::et_is_float(t.in[1])) t.bad("the scale must be a float datatype");
  if (c.node().wx_op == static_cast<uint16_t>(fb::WXQuantizeOp::quantize)) {
    if (!t.in_float() || !WxTypes::is_int(t.out)) t.bad("quantize takes a float and gives an integer");
    if (t.has[2] && t.in[2] != t.out) t.bad("the zero point must have the output's datatype");
  } else {
    if (!WxTypes::is_int(t.in[0]) || !wx::et_is_float(t.out))
      t.bad("dequantize takes an integer and gives a float");
    if (t.has[2] && t.in[2] != t.in[0]) t.bad("the zero point must have the input's datatype");
  }
}

void quantize_exec(const ExecArgs& a, size_t i, const Step*) {
  static const Shape kNone;
  const NodeIo io(a, i);
  const Node& nd = io.nd;
  const bool has_zp = io.in(2) != nullptr;
  wx::quantize(nd.wx_op, io.et(nd.inputs[0]), io.et(nd.outputs[0]), io.in_shape(0), io.et(nd.inputs[1]),
               io.in_shape(1), io.in(1), has_zp ? io.et(nd.inputs[2]) : wx::ET::kI32,
               has_zp ? io.in_shape(2) : kNone, io.in(2), io.in(0), io.out(), a.par);
}

}  // namespace

void register_convert(NodeTable& table) {
  NodeDef& convert = define_node(table, T::XNNConvert, decode_1x1, same_shape, convert_check, convert_exec);
  convert.pack_size = requant_table_size;
  convert.pack = requant_table;
  convert.traits = kPacksTable;
  define_node(table, T::WXQuantize, decode_quantize, quantize_shapes, quantize_check, quantize_exec);
}

}  // namespace webxnn
