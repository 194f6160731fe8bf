// BatchMatrixMultiply (fp32): [..., M, K] x [..., K, N] (or [..., N, K], flag 0x1) with broadcast batch dims.
#include "runtime/nodes/common.h"

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

void bmm_exec(const ExecArgs& ea, size_t i, const Step*) {
  const NodeIo io(ea, i);
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
    ea.k.batch_matmul(nb, M, N, Kd, io.inf(0), na == 1 && nb != 1 ? 0 : a_mat, io.inf(1),
                      nbb == 1 && nb != 1 ? 0 : b_mat, nk, io.outf(), ea.par);
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
    ea.k.batch_matmul(1, M, N, Kd, io.inf(0) + ai * a_mat, 0, io.inf(1) + bi * b_mat, 0, nk,
                      io.outf() + o * c_mat, ea.par);
  }
}

}  // namespace

void register_bmm(NodeTable& table) {
  define_node(table, T::XNNBatchMatrixMultiply, decode_2x1, bmm_shapes, check_fp32, bmm_exec).macs =
      gemm_macs;
}

}  // namespace webxnn
