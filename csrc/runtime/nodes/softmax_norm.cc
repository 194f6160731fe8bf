// Row-wise normalisations: Softmax (fp32, over the last dim) and WXNormalize (layer / instance / group
// normalisation over `axes`, with optional scale and bias; the kernel table's fused row kernel when the axes
// are the trailing dims).
#include <cmath>

#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

void softmax_shapes(ShapeInference& s) {
  s.need_rank(0, 1, kMaxRank);
  s.set_out(0, s.in(0));
}

void softmax_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const size_t cols = io.out_shape().back();
  a.k.softmax(numel(io.out_shape()) / cols, cols, io.inf(0), io.outf(), a.par);
}

void decode_normalize(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::WXNormalize*>(table);
  nd.ints_a = uvec(t->axes());
  nd.alpha = t->epsilon();
  if (!std::isfinite(nd.alpha) || nd.alpha < 0.f) {
    d.fail("epsilon " + std::to_string(nd.alpha) + " is not a finite non-negative number");
  }
  nd.inputs = {d.ref("input_id", t->input_id()), d.ref("scale_id", t->scale_id(), true),
               d.ref("bias_id", t->bias_id(), true)};
  d.out_flags(t, nd);
}

void normalize_shapes(ShapeInference& s) {
  s.axes_mask(s.in(0).size());
  for (size_t k = 1; k <= 2; ++k) {
    Shape o;
    if (s.has_in(k) && (!broadcast_shapes(s.in(k), s.in(0), o) || o != s.in(0))) {
      s.fail((k == 1 ? "scale " : "bias ") + s.in_label(k) + " does not broadcast to " + s.in_label(0));
    }
  }
  s.set_out(0, s.in(0));
}

void normalize_check(const SupportCheck& c) {
  const WxTypes t(c);
  if ((t.has[1] && t.in[1] != t.in[0]) || (t.has[2] && t.in[2] != t.in[0])) {
    t.bad("scale and bias must match the input");
  }
  if (!t.in_float()) t.bad("a float datatype is needed");
  t.need_same();
}

// A WXNormalize the kernel table's fused row kernel can take: the axes are the trailing dims (any order) and
// scale/bias are absent or flat vectors over exactly those dims.
bool fused_normalize(const ExecArgs& a, const Node& nd) {
  if (!a.k.normalize || nd.ints_a.empty()) return false;
  const Shape& x = a.plan.shapes[nd.inputs[0]];
  const size_t r = x.size(), k = nd.ints_a.size();
  std::vector<bool> seen(r, false);
  for (uint32_t ax : nd.ints_a) {
    if (ax < r - k) return false;
    seen[ax] = true;
  }
  size_t cols = 1;
  for (size_t d = r - k; d < r; ++d) cols *= x[d];
  if (cols == 0) return false;
  for (size_t p = 1; p <= 2; ++p) {
    if (nd.inputs[p] == kNoValue) continue;
    Shape s = a.plan.shapes[nd.inputs[p]];
    while (!s.empty() && s.front() == 1) s.erase(s.begin());
    if (s.size() > k || numel(s) != cols) return false;
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] != x[r - s.size() + d]) return false;
    }
  }
  return true;
}

void normalize_exec(const ExecArgs& a, size_t i, const Step*) {
  static const Shape kNone;
  const NodeIo io(a, i);
  const Node& nd = io.nd;
  const wx::ET ot = io.et(nd.outputs[0]);
  const Shape& x = io.in_shape(0);
  if (ot == wx::ET::kF32 && fused_normalize(a, nd)) {
    size_t cols = 1;
    for (size_t d = x.size() - nd.ints_a.size(); d < x.size(); ++d) cols *= x[d];
    a.k.normalize(numel(x) / cols, cols, io.inf(0), io.inf(1), io.inf(2), nd.alpha, io.outf(), a.par);
    return;
  }
  const std::vector<bool> mask = io.axes(x.size());
  wx::normalize(ot, x, mask, nd.alpha, io.in(1), io.in(1) ? io.in_shape(1) : kNone, io.in(2),
                io.in(2) ? io.in_shape(2) : kNone, io.in(0), io.out(), a.par);
}

}  // namespace

void register_softmax_norm(NodeTable& table) {
  define_node(table, T::XNNSoftmax, decode_1x1, softmax_shapes, check_fp32, softmax_exec);
  define_node(table, T::WXNormalize, decode_normalize, normalize_shapes, normalize_check, normalize_exec);
}

}  // namespace webxnn
