// BatchMatrixMultiply (fp32): [..., M, K] x [..., K, N] (or [..., N, K], flag 0x1) with broadcast batch dims;
// a step with transposes fused around it (Step::operand_transpose, a transpose as `into`) reads and writes
// through them at strides.
#include "runtime/nodes/common.h"
#include "runtime/strided_matrices.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

void bmm_shapes(ShapeInference& s) {
  s.need_rank(0, 2, kMaxRank);
  s.need_rank(1, 2, kMaxRank);
  const Shape& a = s.in(0);
  const Shape& b = s.in(1);
  const bool nk = s.node().flags & kFlagTransposeWeights;
  const size_t M = a[a.size() - 2], K = a.back();
  const size_t Kb = nk ? b.back() : b[b.size() - 2];
  const size_t N = nk ? b[b.size() - 2] : b.back();
  if (K != Kb)
    s.fail(s.in_label(0) + " and " + s.in_label(1) + " disagree on K (" + str(K) + " vs " + str(Kb) + ")");
  if (K == 0) s.fail("K is zero");
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2), ob;
  if (!broadcast_shapes(ab, bb, ob)) {
    s.fail("batch dims of " + s.in_label(0) + " and " + s.in_label(1) + " do not broadcast");
  }
  ob.push_back(M);
  ob.push_back(N);
  s.set_out(0, ob);
}

// A step with fused transposes: every operand a batch of matrices at strides (the planner checked that they
// are, and that each operand has the product's batch dims or a single matrix).
void bmm_strided(const ExecArgs& ea, const NodeIo& io, const Step& st) {
  const Shape& out_shape = io.out_shape();
  const size_t r = out_shape.size();
  const size_t M = out_shape[r - 2], N = out_shape[r - 1], K = io.in_shape(0).back();
  bool nk = io.nd.flags & kFlagTransposeWeights;
  bool ok = true;
  const float* in[2];
  MatStrides ms[2];
  for (size_t k = 0; k < 2; ++k) {
    const uint32_t t = st.operand_transpose[k];
    bool swapped = false;
    if (t == kNoValue) {
      in[k] = io.inf(k);
      ok = ok && as_matrices(io.in_shape(k), dense_strides(io.in_shape(k)), &ms[k]);
    } else {
      const Node& tn = ea.m.nodes[t];
      in[k] = static_cast<const float*>(ea.ptrs[tn.inputs[0]]);
      ok = ok &&
           as_matrices(io.in_shape(k), strides_through_transpose(ea.plan.shapes[tn.inputs[0]], tn.ints_a),
                       &ms[k], k == 1 ? &swapped : nullptr);
    }
    if (swapped) nk = !nk;
  }
  float* out = io.outf();
  MatStrides cs;
  if (st.into != kNoValue) {
    const Node& tn = ea.m.nodes[st.into];
    out = static_cast<float*>(ea.ptrs[tn.outputs[0]]);
    ok = ok && as_matrices(out_shape, strides_into_transpose(ea.plan.shapes[tn.outputs[0]], tn.ints_a), &cs);
  } else {
    ok = ok && as_matrices(out_shape, dense_strides(out_shape), &cs);
  }
  if (!ok) fail(StatusCode::kInternal, "BatchMatrixMultiply: a fused transpose is not a batch of matrices");
  size_t batch = 1;
  for (size_t d = 0; d + 2 < r; ++d) batch *= out_shape[d];
  ea.k.batch_matmul(batch, M, N, K, in[0], ms[0], in[1], ms[1], nk, out, cs, ea.par);
}

void bmm_exec(const ExecArgs& ea, size_t i, const Step* step) {
  const NodeIo io(ea, i);
  if (step && (step->into != kNoValue || step->operand_transpose[0] != kNoValue ||
               step->operand_transpose[1] != kNoValue)) {
    return bmm_strided(ea, io, *step);
  }
  const Shape& a = io.in_shape(0);
  const Shape& b = io.in_shape(1);
  const Shape& out_shape = io.out_shape();
  const bool nk = io.nd.flags & kFlagTransposeWeights;
  const size_t M = a[a.size() - 2], Kd = a.back();
  const size_t N = out_shape.back();
  const size_t r = out_shape.size() - 2;  // batch rank
  Shape ob(out_shape.begin(), out_shape.begin() + static_cast<std::ptrdiff_t>(r));
  Shape ab(r, 1), bb(r, 1);
  for (size_t d = 0; d < a.size() - 2; ++d) ab[r - (a.size() - 2) + d] = a[d];
  for (size_t d = 0; d < b.size() - 2; ++d) bb[r - (b.size() - 2) + d] = b[d];
  const size_t nb = numel(ob), na = numel(ab), nbb = numel(bb);
  const size_t a_mat = M * Kd, b_mat = Kd * N, c_mat = M * N;
  if ((ab == ob || na == 1) && (bb == ob || nbb == 1)) {
    ea.k.batch_matmul(nb, M, N, Kd, io.inf(0), {na == 1 && nb != 1 ? 0 : a_mat, Kd}, io.inf(1),
                      {nbb == 1 && nb != 1 ? 0 : b_mat, nk ? Kd : N}, nk, io.outf(), {c_mat, N}, ea.par);
    return;
  }
  for (size_t o = 0; o < nb; ++o) {
    size_t rem = o, ai = 0, bi = 0, as = 1, bs = 1;
    for (size_t d = r; d-- > 0;) {
      const size_t idx = rem % ob[d];
      rem /= ob[d];
      ai += (ab[d] == 1 ? 0 : idx) * as;
      bi += (bb[d] == 1 ? 0 : idx) * bs;
      as *= ab[d];
      bs *= bb[d];
    }
    ea.k.batch_matmul(1, M, N, Kd, io.inf(0) + ai * a_mat, {0, Kd}, io.inf(1) + bi * b_mat, {0, nk ? Kd : N},
                      nk, io.outf() + o * c_mat, {0, N}, ea.par);
  }
}

}  // namespace

void register_bmm(NodeTable& table) {
  NodeDef& d = define_node(table, T::XNNBatchMatrixMultiply, decode_2x1, bmm_shapes, check_fp32, bmm_exec);
  d.macs = gemm_macs;
  d.traits = kStridedMatmul;
}

}  // namespace webxnn
