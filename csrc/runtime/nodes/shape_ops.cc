// Layout nodes of any whole-byte element type: StaticTranspose, StaticReshape, StaticSlice,
// StaticConstantPad, Concatenate2..5. A Reshape usually runs no step at all (its output shares its
// input's storage, see plan.cc); an NCHW -> NHWC transpose may be read through by the conv after it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/nodes/common.h"

namespace webxnn {
namespace {

using T = fb::XNodeUnion;

// A rank-0 input is one element: nothing to rearrange.
bool copy_scalar(const NodeIo& io) {
  if (!io.in_shape(0).empty()) return false;
  std::memcpy(io.out(), io.in(0), io.esize());
  return true;
}

// ---- StaticTranspose ----

void decode_transpose(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNStaticTranspose*>(table);
  nd.ints_a = uvec(t->perm());
  d.io(t, nd);
}

void transpose_shapes(ShapeInference& s) {
  const Shape& x = s.in(0);
  const auto& perm = s.node().ints_a;
  if (perm.size() != x.size()) {
    s.fail("perm has " + str(perm.size()) + " entries but " + s.in_label(0) + " has rank " + str(x.size()));
  }
  std::vector<bool> seen(perm.size(), false);
  Shape o(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) {
    if (perm[d] >= perm.size() || seen[perm[d]])
      s.fail("perm is not a permutation of 0.." + str(perm.size() - 1));
    seen[perm[d]] = true;
    o[d] = x[perm[d]];
  }
  s.set_out(0, o);
}

void transpose_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  if (copy_scalar(io)) return;
  const Node& nd = io.nd;
  const Shape& x = io.in_shape(0);
  const size_t esize = io.esize();
  size_t perm[kMaxRank];
  for (size_t d = 0; d < x.size(); ++d) perm[d] = nd.ints_a[d];
  // The graph-boundary layout change of an image (NCHW <-> NHWC with a few channels) has its own loop.
  static const uint32_t kToNhwc[4] = {0, 2, 3, 1}, kToNchw[4] = {0, 3, 1, 2};
  if (x.size() == 4 && (std::equal(kToNhwc, kToNhwc + 4, nd.ints_a.begin()) ||
                        std::equal(kToNchw, kToNchw + 4, nd.ints_a.begin()))) {
    const bool to_nhwc = nd.ints_a[1] == 2;
    const size_t c = to_nhwc ? x[1] : x[3];
    const size_t pixels = x[1] * x[2] * x[3] / c;
    if (esize == 4 && a.k.image_layout_f32(x[0], c, pixels, !to_nhwc, io.inf(0), io.outf(), a.par)) return;
    if (wx::transpose_few_channels(esize, x[0], c, pixels, !to_nhwc, io.in(0), io.out(), a.par)) return;
  }
  transpose_bytes(esize, x.size(), x.data(), perm, io.in(0), io.out(), a.par);
}

// ---- StaticReshape (a view: see view_exec) ----

void decode_reshape(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNStaticReshape*>(table);
  nd.ints_a = uvec(t->new_shape());
  d.io(t, nd);
}

void reshape_shapes(ShapeInference& s) {
  const auto& ns = s.node().ints_a;
  if (ns.size() > kMaxRank) s.fail("new_shape has rank " + str(ns.size()) + ", more than " + str(kMaxRank));
  const size_t total = numel(s.in(0));
  size_t zeros = 0, zero_at = 0;
  uint64_t known = 1;
  for (size_t d = 0; d < ns.size(); ++d) {
    if (ns[d] == 0) {
      ++zeros;
      zero_at = d;
      continue;
    }
    if (known > kMaxTensorBytes / ns[d]) s.fail("new_shape is too large");
    known *= ns[d];
  }
  if (zeros > 1) s.fail("new_shape has more than one inferred (0) dimension");
  Shape o(ns.begin(), ns.end());
  if (zeros == 1) {
    if (known == 0 || total % known != 0) {
      s.fail("cannot infer dim " + str(zero_at) + " of new_shape: " + str(total) + " elements of " +
             s.in_label(0) + " do not divide by " + str(known));
    }
    o[zero_at] = static_cast<size_t>(total / known);
  } else if (known != total) {
    s.fail("new_shape " + shape_str(o) + " has " + str(known) + " elements but " + s.in_label(0) + " has " +
           str(total));
  }
  s.set_out(0, o);
}

// ---- StaticSlice ----

void decode_slice(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNStaticSlice*>(table);
  nd.ints_a = uvec(t->offsets());
  nd.ints_b = uvec(t->sizes());
  d.io(t, nd);
}

void slice_shapes(ShapeInference& s) {
  const Shape& x = s.in(0);
  const auto& off = s.node().ints_a;
  const auto& sz = s.node().ints_b;
  if (off.size() != x.size() || sz.size() != x.size()) {
    s.fail("offsets (" + str(off.size()) + ") and sizes (" + str(sz.size()) +
           ") must have one entry per dim of " + s.in_label(0));
  }
  Shape o(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    if (off[d] > x[d])
      s.fail("offset " + str(off[d]) + " of dim " + str(d) + " is past the end of " + s.in_label(0));
    if (sz[d] == 0) {
      o[d] = x[d] - off[d];  // XNNPACK: size 0 means "to the end"
    } else {
      if (uint64_t(off[d]) + sz[d] > x[d]) {
        s.fail("slice [" + str(off[d]) + ", " + str(uint64_t(off[d]) + sz[d]) + ") of dim " + str(d) +
               " is out of range for " + s.in_label(0));
      }
      o[d] = sz[d];
    }
  }
  s.set_out(0, o);
}

void slice_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  if (copy_scalar(io)) return;
  const Shape& x = io.in_shape(0);
  size_t off[kMaxRank];
  for (size_t d = 0; d < x.size(); ++d) off[d] = io.nd.ints_a[d];
  slice_bytes(io.esize(), x.size(), x.data(), off, io.out_shape().data(), io.in(0), io.out());
}

// ---- StaticConstantPad ----

void decode_pad(const NodeDecoder& d, const void* table, Node& nd) {
  const auto* t = static_cast<const fb::XNNStaticConstantPad*>(table);
  nd.ints_a = uvec(t->pre_paddings());
  nd.ints_b = uvec(t->post_paddings());
  nd.alpha = t->padding_value();
  d.io(t, nd);
}

void pad_shapes(ShapeInference& s) {
  const Shape& x = s.in(0);
  const Node& nd = s.node();
  if (nd.ints_a.size() < x.size() || nd.ints_b.size() < x.size()) {
    s.fail("pre_paddings (" + str(nd.ints_a.size()) + ") and post_paddings (" + str(nd.ints_b.size()) +
           ") need one entry per dim of " + s.in_label(0));
  }
  Shape o(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    const uint64_t v = uint64_t(x[d]) + nd.ints_a[d] + nd.ints_b[d];
    if (v > kMaxTensorBytes) s.fail("padded dim " + str(d) + " is too large");
    o[d] = static_cast<size_t>(v);
  }
  s.set_out(0, o);
}

void pad_check(const SupportCheck& c) {
  c.need_bytes();
  const DType t = c.dt(c.node().outputs[0]);
  wx::ET et;
  const bool computed = t == DType::kQint8 || t == DType::kQuint8 || wx_et(t, et);
  if (!computed && c.node().alpha != 0.f) {
    unsupported(c.label() + ": a non-zero padding value for " + dtype_name(t) + " is not supported");
  }
}

// The padding value as one element of the output's type (quantized, or truncated and saturated).
void pad_fill(const Value& out, float v, uint8_t fill[8]) {
  switch (out.dtype) {
    case DType::kFp32: std::memcpy(fill, &v, 4); break;
    case DType::kQint8:
    case DType::kQuint8: {
      const bool s8 = out.dtype == DType::kQint8;
      const double lo = s8 ? -128 : 0, hi = s8 ? 127 : 255;
      double q = std::nearbyint(double(v) / out.quant.scale) + out.quant.zero_point;
      q = std::isnan(q) ? 0 : std::min(hi, std::max(lo, q));
      fill[0] = s8 ? static_cast<uint8_t>(static_cast<int8_t>(q)) : static_cast<uint8_t>(q);
      break;
    }
    case DType::kWxInt8: {
      const double q = std::isnan(v) ? 0 : std::min(127.0, std::max(-128.0, std::trunc(double(v))));
      fill[0] = static_cast<uint8_t>(static_cast<int8_t>(q));
      break;
    }
    case DType::kWxUint8: {
      const double q = std::isnan(v) ? 0 : std::min(255.0, std::max(0.0, std::trunc(double(v))));
      fill[0] = static_cast<uint8_t>(q);
      break;
    }
    case DType::kInt32: {
      const double q =
          std::isnan(v) ? 0 : std::min(2147483647.0, std::max(-2147483648.0, std::trunc(double(v))));
      const int32_t iv = static_cast<int32_t>(q);
      std::memcpy(fill, &iv, 4);
      break;
    }
    default: {
      wx::ET et;
      if (wx_et(out.dtype, et)) wx::fill_value(et, v, fill);
      break;
    }
  }
}

void pad_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  if (copy_scalar(io)) return;
  const Shape& x = io.in_shape(0);
  size_t pre[kMaxRank], post[kMaxRank];
  for (size_t d = 0; d < x.size(); ++d) {
    pre[d] = io.nd.ints_a[d];
    post[d] = io.nd.ints_b[d];
  }
  uint8_t fill[8] = {};
  pad_fill(io.out_val(), io.nd.alpha, fill);
  pad_bytes(io.esize(), x.size(), x.data(), pre, post, fill, io.in(0), io.out());
}

// ---- Concatenate2..5 ----

void decode_concat(const NodeDecoder& d, const void* table, Node& nd, size_t count) {
  const auto* t = static_cast<const fb::_XNNCat*>(table);
  const uint32_t ids[5] = {t->input1_id(), t->input2_id(), t->input3_id(), t->input4_id(), t->input5_id()};
  const char* fields[5] = {"input1_id", "input2_id", "input3_id", "input4_id", "input5_id"};
  for (size_t k = 0; k < count; ++k) nd.inputs.push_back(d.ref(fields[k], ids[k]));
  nd.axis = t->axis();
  d.out_flags(t, nd);
}
void decode_concat2(const NodeDecoder& d, const void* table, Node& nd) { decode_concat(d, table, nd, 2); }
void decode_concat3(const NodeDecoder& d, const void* table, Node& nd) { decode_concat(d, table, nd, 3); }
void decode_concat4(const NodeDecoder& d, const void* table, Node& nd) { decode_concat(d, table, nd, 4); }
void decode_concat5(const NodeDecoder& d, const void* table, Node& nd) { decode_concat(d, table, nd, 5); }

void concat_shapes(ShapeInference& s) {
  const Node& nd = s.node();
  const Shape& first = s.in(0);
  if (nd.axis >= first.size()) s.fail("axis " + str(nd.axis) + " is out of range for " + s.in_label(0));
  Shape o = first;
  uint64_t sum = first[nd.axis];
  for (size_t k = 1; k < nd.inputs.size(); ++k) {
    const Shape& sk = s.in(k);
    bool ok = sk.size() == first.size();
    for (size_t d = 0; ok && d < sk.size(); ++d) ok = d == nd.axis || sk[d] == first[d];
    if (!ok) s.fail(s.in_label(k) + " does not match " + s.in_label(0) + " outside axis " + str(nd.axis));
    sum += sk[nd.axis];
  }
  o[nd.axis] = static_cast<size_t>(sum);
  s.set_out(0, o);
}

void concat_exec(const ExecArgs& a, size_t i, const Step*) {
  const NodeIo io(a, i);
  const Node& nd = io.nd;
  const size_t n = nd.inputs.size();
  const void* ins[5];
  size_t inner[5];
  size_t outer = 1;
  for (size_t d = 0; d < nd.axis; ++d) outer *= io.out_shape()[d];
  for (size_t k = 0; k < n; ++k) {
    const Shape& s = io.in_shape(k);
    size_t b = io.esize();
    for (size_t d = nd.axis; d < s.size(); ++d) b *= s[d];
    ins[k] = io.in(k);
    inner[k] = b;
  }
  concat_bytes(n, ins, inner, outer, io.out());
}

}  // namespace

void register_shape_ops(NodeTable& table) {
  define_node(table, T::XNNStaticTranspose, decode_transpose, transpose_shapes, check_bytes, transpose_exec)
      .traits = kTranspose;
  define_node(table, T::XNNStaticReshape, decode_reshape, reshape_shapes, check_bytes, view_exec).traits =
      kView;
  define_node(table, T::XNNStaticSlice, decode_slice, slice_shapes, check_bytes, slice_exec);
  define_node(table, T::XNNStaticConstantPad, decode_pad, pad_shapes, pad_check, pad_exec);
  define_node(table, T::XNNConcatenate2, decode_concat2, concat_shapes, check_bytes, concat_exec);
  define_node(table, T::XNNConcatenate3, decode_concat3, concat_shapes, check_bytes, concat_exec);
  define_node(table, T::XNNConcatenate4, decode_concat4, concat_shapes, check_bytes, concat_exec);
  define_node(table, T::XNNConcatenate5, decode_concat5, concat_shapes, check_bytes, concat_exec);
}

}  // namespace webxnn
