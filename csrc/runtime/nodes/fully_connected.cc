// FullyConnected: fp32 (weights packed for the GEMM at load, or per run when not constant), or qint8 x
// qcint8 [+ qcint32 bias] -> qint8, or dynamic int8: qdint8 x qcint8 [+ fp32 bias] -> fp32 (ExecuTorch's
// dynamically quantized linear, on qd8_gemm). An fp32 step may write the residual Add or the activation after
// it, and on a few rows have its weights fetched ahead by the convs before it (plan.cc); a qint8 one may write
// the qint8 residual Add after it (qgemm_residual); a dynamic one does none of these.
// A qdint8 input holds its per-row parameters beside its data in the same arena slot (plan.h: value_bytes,
// qd8_params): the Convert fp32 -> qdint8 before this node wrote them; one row per output row
// (num_nonbatch_dims 1).
#include <algorithm>
#include <cmath>

#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

void decode_fc(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNFullyConnected*>(table);
  nd.inputs = {d.ref("input1_id", t->input1_id()), d.ref("filter_id", t->filter_id()),
               d.ref("bias_id", t->bias_id(), true)};
  d.out_flags(t, nd);
}

void fc_shapes(ShapeInference& s) {
  s.need_rank(0, 1, kMaxRank);
  s.need_rank(1, 2, 2);
  const Shape& x = s.in(0);
  const Shape& w = s.in(1);
  const bool io = s.node().flags & kFlagTransposeWeights;
  const size_t I = io ? w[0] : w[1];
  const size_t O = io ? w[1] : w[0];
  if (x.back() != I) {
    s.fail(s.in_label(0) + " has " + str(x.back()) + " input features but filter " + s.in_label(1) +
           (io ? " ([I, O], flag 0x1)" : " ([O, I])") + " expects " + str(I));
  }
  if (I == 0 || O == 0) s.fail("filter " + s.in_label(1) + " has a zero-size dimension");
  if (s.has_in(2) && numel(s.in(2)) != O)
    s.fail("bias " + s.in_label(2) + " must have " + str(O) + " elements");
  Shape o = x;
  o.back() = O;
  s.set_out(0, o);
}

// qdint8 x (qcint8 | qint8 zp 0) [+ fp32 bias] -> fp32, one row of parameters per output row.
void check_fc_dynamic(const SupportCheck& c, size_t o_dim) {
  const Node& nd = c.node();
  const bool has_bias = nd.inputs[2] != kNoValue;
  if (c.dt(nd.outputs[0]) != DType::kFp32 || (has_bias && c.dt(nd.inputs[2]) != DType::kFp32)) {
    unsupported(c.label() + ": datatypes " + c.describe() +
                " are not supported (a qdint8 input takes qcint8 weights [+ fp32 bias] -> fp32)");
  }
  check_q8_filter(c, o_dim);
  const int32_t rows_dims = c.model().values[nd.inputs[0]].quant.num_nonbatch_dims;
  if (rows_dims != 1) {
    unsupported(c.label() +
                ": a qdint8 input needs num_nonbatch_dims 1 (a zero point and scale per row), not " +
                std::to_string(rows_dims));
  }
}

void fc_check(const SupportCheck& c) {
  const size_t o_dim = (c.node().flags & kFlagTransposeWeights) ? 1 : 0;
  if (c.dt(c.node().inputs[0]) == DType::kQdint8) {
    check_fc_dynamic(c, o_dim);
    return;
  }
  check_q8_weights(
      c, o_dim, "fp32, qint8 x qcint8 [+ qcint32 bias] -> qint8, or qdint8 x qcint8 [+ fp32 bias] -> fp32");
}

// K and N of the filter; true for fp32 weights (else qint8).
bool fc_kn(const PackArgs& a, size_t& K, size_t& N) {
  const Node& nd = a.m.nodes[a.node];
  const bool io = nd.flags & kFlagTransposeWeights;
  K = io ? a.filter_dims[0] : a.filter_dims[1];
  N = io ? a.filter_dims[1] : a.filter_dims[0];
  return a.m.values[nd.inputs[1]].dtype == DType::kFp32;
}

bool fc_dynamic(const PackArgs& a) { return a.m.values[a.m.nodes[a.node].inputs[0]].dtype == DType::kQdint8; }

size_t fc_pack_size(const PackArgs& a) {
  size_t K = 0, N = 0;
  if (fc_kn(a, K, N)) return a.k.gemm_packed_size(K, N);
  return fc_dynamic(a) ? a.k.qd8_gemm_packed_size(K, N) : a.k.qgemm_packed_size(K, N);
}

void fc_pack(const PackArgs& a, void* dst) {
  const Node& nd = a.m.nodes[a.node];
  const bool io = nd.flags & kFlagTransposeWeights;
  size_t K = 0, N = 0;
  if (fc_kn(a, K, N)) {
    a.k.gemm_pack(K, N, static_cast<const float*>(a.filter), !io, static_cast<const float*>(a.bias), dst);
    return;
  }
  if (fc_dynamic(a)) {
    const Value& w = a.m.values[nd.inputs[1]];
    const bool per_channel = w.quant.kind == QuantParams::Kind::kPerChannel;
    a.k.qd8_gemm_pack(K, N, static_cast<const int8_t*>(a.filter), !io,
                      per_channel ? w.quant.scales.data() : &w.quant.scale, per_channel ? N : 1,
                      static_cast<const float*>(a.bias), dst);
    return;
  }
  const QGemmQuant q = q8_quant(a.m, nd, N);
  a.k.qgemm_pack(K, N, static_cast<const int8_t*>(a.filter), !io, static_cast<const int32_t*>(a.bias), q,
                 dst);
}

void fc_exec(const ExecArgs& a, size_t i, const Step* step) {
  const NodeIo io(a, i);
  AlignedBuffer run_packed;
  const void* packed = packed_weights(io, i, run_packed);
  const Shape& x = io.in_shape(0);
  const size_t Kd = x.back();
  const size_t N = io.out_shape().back();
  const size_t M = numel(x) / Kd;
  const Value& out_val = io.out_val();
  if (out_val.dtype != DType::kFp32) {  // qint8 x qcint8 -> qint8
    const int8_t lo = quantize_bound(io.nd.act.min, out_val.quant);
    const int8_t hi = quantize_bound(io.nd.act.max, out_val.quant);
    const Q8Output o = q8_output(a, io.nd, step);
    if (o.residual) {
      a.k.qgemm_residual(M, N, Kd, io.in(0), Kd, packed, o.residual, N, o.out, N, lo, hi, o.add, a.par);
    } else {
      a.k.qgemm(M, N, Kd, io.in(0), Kd, packed, o.out, N, lo, hi, a.par);
    }
    return;
  }
  const FusedOutput f = fused_output(a, io.nd, step);
  if (f.residual) {
    a.k.gemm_residual(M, N, Kd, io.inf(0), Kd, packed, f.residual, N, f.out, N, f.act, a.par);
  } else if (io.in_val(0).dtype == DType::kQdint8) {
    void* in = const_cast<void*>(io.in(0));  // read only: qd8_params gives the same pointer type for both
    a.k.qd8_gemm(M, N, Kd, static_cast<const int8_t*>(in), Kd, qd8_params(in, x), packed, f.out, N,
                 io.nd.act.min, io.nd.act.max, a.par);
  } else {
    a.k.gemm(M, N, Kd, io.inf(0), Kd, packed, f.out, N, f.act, a.par);
  }
}

// qint8 x qcint8 -> qint8 (qgemm) has a residual epilogue; a dynamic one (fp32 out) has not.
bool fc_q8_residual(const Model& m, const Node& nd) {
  return m.values[nd.inputs[0]].dtype == DType::kQint8 && m.values[nd.outputs[0]].dtype == DType::kQint8;
}

}  // namespace

void register_fully_connected(NodeTable& table) {
  NodeDef& d = define_node(table, T::XNNFullyConnected, decode_fc, fc_shapes, fc_check, fc_exec);
  d.pack_size = fc_pack_size;
  d.pack = fc_pack;
  d.macs = gemm_macs;
  d.traits = kPacksWeights | kTakesResidual | kTakesActivation | kPrefetched;
  d.q8_residual = fc_q8_residual;
}

}  // namespace webxnn
