#include "runtime/shapes.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/wx/wx.h"  // blockwise_compatible: the quantize kernel's own shape rule
#include "runtime/status.h"

namespace webxnn {
namespace {

std::string str(uint64_t v) { return std::to_string(v); }

// Output size of a strided window over `in` padded by pads: floor((in + pads - eff_kernel) / stride) + 1.
bool window_out(uint64_t in, uint64_t pad_a, uint64_t pad_b, uint64_t kernel, uint64_t dilation, uint64_t stride,
                uint64_t& out) {
  const uint64_t eff = dilation * (kernel - 1) + 1;  // < 2^64: both factors < 2^32
  const uint64_t padded = in + pad_a + pad_b;        // in <= 2^40
  if (padded < eff || stride == 0) return false;
  out = (padded - eff) / stride + 1;
  return true;
}

class Inferer {
 public:
  Inferer(const Model& m, size_t i, std::vector<Shape>& shapes)
      : m_(m), i_(i), nd_(m.nodes[i]), shapes_(shapes) {}

  [[noreturn]] void fail_node(const std::string& msg) const { format_error(m_.node_label(i_) + ": " + msg); }

  const Shape& in(size_t k) const { return shapes_[nd_.inputs[k]]; }
  bool has_in(size_t k) const { return k < nd_.inputs.size() && nd_.inputs[k] != kNoValue; }
  std::string in_label(size_t k) const {
    return "input " + m_.value_label(nd_.inputs[k]) + " " + shape_str(in(k));
  }
  void set_out(size_t k, Shape s) {
    // Bound every inferred shape like a declared one, so later products cannot overflow.
    uint64_t n = 1;
    for (size_t d : s) {
      if (d != 0 && n > kMaxTensorBytes / d) fail_node("output shape " + shape_str(s) + " is too large");
      n *= d;
    }
    if (n > kMaxTensorBytes / 8) fail_node("output shape " + shape_str(s) + " is too large");
    if (s.size() > kMaxRank) fail_node("output rank " + str(s.size()) + " exceeds " + str(kMaxRank));
    shapes_[nd_.outputs[k]] = std::move(s);
  }
  void need_rank(size_t k, size_t lo, size_t hi) const {
    const size_t r = in(k).size();
    if (r < lo || r > hi) {
      if (lo == hi) fail_node(in_label(k) + " must have rank " + str(lo));
      fail_node(in_label(k) + " must have rank " + str(lo) + ".." + str(hi));
    }
  }
  void need_nonempty(size_t k) const {
    for (size_t d : in(k)) {
      if (d == 0) fail_node(in_label(k) + " has a zero-size dimension, which this node cannot take");
    }
  }

  void run() {
    using T = NodeType;
    switch (nd_.type) {
      case T::kAdd: case T::kDiv: case T::kMinimum: case T::kMultiply: case T::kSubtract: case T::kMaximum:
      case T::kWXBinary: {
        Shape o;
        if (!broadcast_shapes(in(0), in(1), o)) fail_node(in_label(0) + " and " + in_label(1) + " do not broadcast");
        set_out(0, o);
        break;
      }
      case T::kPReLU: {
        Shape o;
        if (!broadcast_shapes(in(0), in(1), o) || o != in(0)) {
          fail_node("slope " + in_label(1) + " does not broadcast to " + in_label(0));
        }
        set_out(0, o);
        break;
      }
      case T::kSoftmax:
        need_rank(0, 1, kMaxRank);
        set_out(0, in(0));
        break;
      case T::kSigmoid: case T::kClamp: case T::kFloor: case T::kConvert: case T::kSquareRoot: case T::kCeiling:
      case T::kHardswish: case T::kNegate: case T::kSquare: case T::kAbs: case T::kReciprocalSquareRoot:
      case T::kLog: case T::kGelu: case T::kTanh: case T::kExp: case T::kSin: case T::kCopy: case T::kCos:
      case T::kLeakyReLU: case T::kELU: case T::kWXUnary:
        set_out(0, in(0));
        break;
      case T::kGlobalAvgPooling2d: {
        need_rank(0, 3, kMaxRank);
        need_nonempty(0);
        Shape o = in(0);
        const size_t r = o.size();
        if (nd_.flags & kFlagKeepDims) {
          o[r - 3] = 1;
          o[r - 2] = 1;
        } else {
          o.erase(o.begin() + static_cast<std::ptrdiff_t>(r - 3), o.begin() + static_cast<std::ptrdiff_t>(r - 1));
        }
        set_out(0, o);
        break;
      }
      case T::kFullyConnected: fully_connected(); break;
      case T::kBatchMatrixMultiply: bmm(); break;
      case T::kConv2d: case T::kDepthwiseConv2d: case T::kConvTranspose2d: conv(); break;
      case T::kAvgPooling2d: case T::kMaxPooling2d: case T::kArgMaxPooling2d: pool(); break;
      case T::kStaticTranspose: transpose(); break;
      case T::kStaticReshape: reshape(); break;
      case T::kStaticSlice: slice(); break;
      case T::kStaticConstantPad: pad(); break;
      case T::kConcatenate2: case T::kConcatenate3: case T::kConcatenate4: case T::kConcatenate5: concat(); break;
      case T::kStaticResizeBilinear2D: {
        need_rank(0, 4, 4);
        if (nd_.new_height == 0 || nd_.new_width == 0) fail_node("new_height and new_width must be > 0");
        Shape o = in(0);
        o[1] = nd_.new_height;
        o[2] = nd_.new_width;
        set_out(0, o);
        break;
      }
      case T::kWXReduce: reduce(); break;
      case T::kWXGather: gather(); break;
      case T::kWXGatherElements: case T::kWXScatterElements: elements(); break;
      case T::kWXGatherND: case T::kWXScatterND: nd(); break;
      case T::kWXWhere: {
        Shape a, o;
        if (!broadcast_shapes(in(1), in(2), a) || !broadcast_shapes(in(0), a, o)) {
          fail_node("condition " + in_label(0) + ", " + in_label(1) + " and " + in_label(2) + " do not broadcast");
        }
        set_out(0, o);
        break;
      }
      case T::kWXExpand: expand(); break;
      case T::kWXTile: tile(); break;
      case T::kWXReverse: case T::kWXNormalize: {
        axes_mask(in(0).size());
        if (nd_.type == T::kWXNormalize) {
          for (size_t k = 1; k <= 2; ++k) {
            Shape o;
            if (has_in(k) && (!broadcast_shapes(in(k), in(0), o) || o != in(0))) {
              fail_node((k == 1 ? "scale " : "bias ") + in_label(k) + " does not broadcast to " + in_label(0));
            }
          }
        }
        set_out(0, in(0));
        break;
      }
      case T::kWXCumulativeSum:
        if (nd_.axis >= in(0).size()) fail_node("axis " + str(nd_.axis) + " is out of range for " + in_label(0));
        set_out(0, in(0));
        break;
      case T::kWXTriangular:
        need_rank(0, 2, kMaxRank);
        set_out(0, in(0));
        break;
      case T::kWXPad: wx_pad(); break;
      case T::kWXSlice: wx_slice(); break;
      case T::kWXResample2d: resample(); break;
      case T::kWXPool2d: wx_pool(); break;
      case T::kWXQuantize: {
        for (size_t k = 1; k <= 2; ++k) {
          if (has_in(k) && !wx::blockwise_compatible(in(k), in(0))) {
            fail_node((k == 1 ? "scale " : "zero point ") + in_label(k) +
                      " neither broadcasts nor repeats block-wise to " + in_label(0));
          }
        }
        set_out(0, in(0));
        break;
      }
      default:
        unsupported(m_.node_label(i_) + ": this node type is not supported by this runtime");
    }
  }

 private:
  void fully_connected() {
    need_rank(0, 1, kMaxRank);
    need_rank(1, 2, 2);
    const Shape& x = in(0);
    const Shape& w = in(1);
    const bool io = nd_.flags & kFlagTransposeWeights;
    const size_t I = io ? w[0] : w[1];
    const size_t O = io ? w[1] : w[0];
    if (x.back() != I) {
      fail_node(in_label(0) + " has " + str(x.back()) + " input features but filter " + in_label(1) +
                (io ? " ([I, O], flag 0x1)" : " ([O, I])") + " expects " + str(I));
    }
    if (I == 0 || O == 0) fail_node("filter " + in_label(1) + " has a zero-size dimension");
    if (has_in(2) && numel(in(2)) != O) fail_node("bias " + in_label(2) + " must have " + str(O) + " elements");
    Shape o = x;
    o.back() = O;
    set_out(0, o);
  }

  void bmm() {
    need_rank(0, 2, kMaxRank);
    need_rank(1, 2, kMaxRank);
    const Shape& a = in(0);
    const Shape& b = in(1);
    const bool nk = nd_.flags & kFlagTransposeWeights;
    const size_t M = a[a.size() - 2], K = a.back();
    const size_t Kb = nk ? b.back() : b[b.size() - 2];
    const size_t N = nk ? b[b.size() - 2] : b.back();
    if (K != Kb) fail_node(in_label(0) + " and " + in_label(1) + " disagree on K (" + str(K) + " vs " + str(Kb) + ")");
    if (K == 0) fail_node("K is zero");
    Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2), ob;
    if (!broadcast_shapes(ab, bb, ob)) fail_node("batch dims of " + in_label(0) + " and " + in_label(1) + " do not broadcast");
    ob.push_back(M);
    ob.push_back(N);
    set_out(0, ob);
  }

  void conv() {
    const ConvParams& c = nd_.conv;
    const char* t = nd_.type == NodeType::kDepthwiseConv2d ? "depthwise" : "conv";
    (void)t;
    if (c.kernel_h == 0 || c.kernel_w == 0) fail_node("kernel size " + str(c.kernel_h) + "x" + str(c.kernel_w) + " must be > 0");
    if (c.stride_h == 0 || c.stride_w == 0) fail_node("stride (subsampling) " + str(c.stride_h) + "x" + str(c.stride_w) + " must be > 0");
    if (c.dilation_h == 0 || c.dilation_w == 0) fail_node("dilation " + str(c.dilation_h) + "x" + str(c.dilation_w) + " must be > 0");
    if (c.groups == 0 || c.group_input_channels == 0 || c.group_output_channels == 0) {
      fail_node("groups (" + str(c.groups) + "), group_input_channels (" + str(c.group_input_channels) +
                ") and group_output_channels (" + str(c.group_output_channels) + ") must be > 0");
    }
    if (nd_.flags & kFlagTensorflowSamePadding) {
      unsupported(m_.node_label(i_) + ": TensorFlow SAME padding (flag 0x4) is not supported");
    }
    need_rank(0, 4, 4);
    need_rank(1, 4, 4);
    need_nonempty(0);
    const Shape& x = in(0);
    const Shape& w = in(1);
    const uint64_t groups = c.groups, gic = c.group_input_channels, goc = c.group_output_channels;
    const uint64_t out_c = groups * goc;
    uint64_t in_c = groups * gic;
    Shape want_w;
    if (nd_.type == NodeType::kDepthwiseConv2d) {
      if (gic != 1) fail_node("depthwise convolution needs group_input_channels 1, got " + str(gic));
      in_c = groups;
      want_w = {1, c.kernel_h, c.kernel_w, static_cast<size_t>(out_c)};
    } else {
      want_w = {static_cast<size_t>(out_c), c.kernel_h, c.kernel_w, static_cast<size_t>(gic)};
    }
    if (x[3] != in_c) {
      fail_node(in_label(0) + " has " + str(x[3]) + " channels but groups x group_input_channels = " + str(in_c));
    }
    if (w != want_w) fail_node("filter " + in_label(1) + " should be " + shape_str(want_w));
    if (has_in(2) && numel(in(2)) != out_c) fail_node("bias " + in_label(2) + " must have " + str(out_c) + " elements");
    uint64_t oh = 0, ow = 0;
    if (nd_.type == NodeType::kConvTranspose2d) {
      if (c.adjustment_h >= c.stride_h || c.adjustment_w >= c.stride_w) {
        fail_node("adjustment " + str(c.adjustment_h) + "x" + str(c.adjustment_w) + " must be smaller than the stride");
      }
      const uint64_t fh = uint64_t(c.stride_h) * (x[1] - 1) + c.adjustment_h + uint64_t(c.dilation_h) * (c.kernel_h - 1) + 1;
      const uint64_t fw = uint64_t(c.stride_w) * (x[2] - 1) + c.adjustment_w + uint64_t(c.dilation_w) * (c.kernel_w - 1) + 1;
      const uint64_t ph = uint64_t(c.pad_top) + c.pad_bottom, pw = uint64_t(c.pad_left) + c.pad_right;
      if (ph >= fh || pw >= fw) fail_node("padding crops the whole output of " + in_label(0));
      oh = fh - ph;
      ow = fw - pw;
    } else {
      if (!window_out(x[1], c.pad_top, c.pad_bottom, c.kernel_h, c.dilation_h, c.stride_h, oh) ||
          !window_out(x[2], c.pad_left, c.pad_right, c.kernel_w, c.dilation_w, c.stride_w, ow)) {
        fail_node(in_label(0) + " is smaller than the " + str(c.kernel_h) + "x" + str(c.kernel_w) +
                  " (dilated) kernel plus padding");
      }
    }
    if (oh > kMaxTensorBytes || ow > kMaxTensorBytes) fail_node("output is too large");
    set_out(0, {x[0], static_cast<size_t>(oh), static_cast<size_t>(ow), static_cast<size_t>(out_c)});
  }

  void pool() {
    const PoolParams& p = nd_.pool;
    if (p.pool_h == 0 || p.pool_w == 0) fail_node("pooling size " + str(p.pool_h) + "x" + str(p.pool_w) + " must be > 0");
    if (p.stride_h == 0 || p.stride_w == 0) fail_node("stride " + str(p.stride_h) + "x" + str(p.stride_w) + " must be > 0");
    if (nd_.flags & kFlagTensorflowSamePadding) {
      unsupported(m_.node_label(i_) + ": TensorFlow SAME padding (flag 0x4) is not supported");
    }
    need_rank(0, 4, 4);
    need_nonempty(0);
    const Shape& x = in(0);
    uint64_t oh = 0, ow = 0;
    if (!window_out(x[1], p.pad_top, p.pad_bottom, p.pool_h, p.dilation_h, p.stride_h, oh) ||
        !window_out(x[2], p.pad_left, p.pad_right, p.pool_w, p.dilation_w, p.stride_w, ow)) {
      fail_node(in_label(0) + " is smaller than the " + str(p.pool_h) + "x" + str(p.pool_w) + " window plus padding");
    }
    if (p.pad_top >= p.pool_h || p.pad_bottom >= p.pool_h || p.pad_left >= p.pool_w || p.pad_right >= p.pool_w) {
      // A window made only of padding has no element to pool over.
      fail_node("padding must be smaller than the pooling window");
    }
    Shape o = {x[0], static_cast<size_t>(oh), static_cast<size_t>(ow), x[3]};
    set_out(0, o);
    if (nd_.outputs.size() > 1) set_out(1, o);
  }

  void transpose() {
    const Shape& x = in(0);
    const auto& perm = nd_.ints_a;
    if (perm.size() != x.size()) fail_node("perm has " + str(perm.size()) + " entries but " + in_label(0) + " has rank " + str(x.size()));
    std::vector<bool> seen(perm.size(), false);
    Shape o(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) {
      if (perm[d] >= perm.size() || seen[perm[d]]) fail_node("perm is not a permutation of 0.." + str(perm.size() - 1));
      seen[perm[d]] = true;
      o[d] = x[perm[d]];
    }
    set_out(0, o);
  }

  void reshape() {
    const auto& ns = nd_.ints_a;
    if (ns.size() > kMaxRank) fail_node("new_shape has rank " + str(ns.size()) + ", more than " + str(kMaxRank));
    const size_t total = numel(in(0));
    size_t zeros = 0, zero_at = 0;
    uint64_t known = 1;
    for (size_t d = 0; d < ns.size(); ++d) {
      if (ns[d] == 0) {
        ++zeros;
        zero_at = d;
        continue;
      }
      if (known > kMaxTensorBytes / ns[d]) fail_node("new_shape is too large");
      known *= ns[d];
    }
    if (zeros > 1) fail_node("new_shape has more than one inferred (0) dimension");
    Shape o(ns.begin(), ns.end());
    if (zeros == 1) {
      if (known == 0 || total % known != 0) {
        fail_node("cannot infer dim " + str(zero_at) + " of new_shape: " + str(total) + " elements of " +
                  in_label(0) + " do not divide by " + str(known));
      }
      o[zero_at] = static_cast<size_t>(total / known);
    } else if (known != total) {
      fail_node("new_shape " + shape_str(o) + " has " + str(known) + " elements but " + in_label(0) + " has " + str(total));
    }
    set_out(0, o);
  }

  void slice() {
    const Shape& x = in(0);
    const auto& off = nd_.ints_a;
    const auto& sz = nd_.ints_b;
    if (off.size() != x.size() || sz.size() != x.size()) {
      fail_node("offsets (" + str(off.size()) + ") and sizes (" + str(sz.size()) + ") must have one entry per dim of " + in_label(0));
    }
    Shape o(x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      if (off[d] > x[d]) fail_node("offset " + str(off[d]) + " of dim " + str(d) + " is past the end of " + in_label(0));
      if (sz[d] == 0) {
        o[d] = x[d] - off[d];  // XNNPACK: size 0 means "to the end"
      } else {
        if (uint64_t(off[d]) + sz[d] > x[d]) {
          fail_node("slice [" + str(off[d]) + ", " + str(uint64_t(off[d]) + sz[d]) + ") of dim " + str(d) +
                    " is out of range for " + in_label(0));
        }
        o[d] = sz[d];
      }
    }
    set_out(0, o);
  }

  void pad() {
    const Shape& x = in(0);
    if (nd_.ints_a.size() < x.size() || nd_.ints_b.size() < x.size()) {
      fail_node("pre_paddings (" + str(nd_.ints_a.size()) + ") and post_paddings (" + str(nd_.ints_b.size()) +
                ") need one entry per dim of " + in_label(0));
    }
    Shape o(x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      const uint64_t v = uint64_t(x[d]) + nd_.ints_a[d] + nd_.ints_b[d];
      if (v > kMaxTensorBytes) fail_node("padded dim " + str(d) + " is too large");
      o[d] = static_cast<size_t>(v);
    }
    set_out(0, o);
  }

  void concat() {
    const Shape& first = in(0);
    if (nd_.axis >= first.size()) fail_node("axis " + str(nd_.axis) + " is out of range for " + in_label(0));
    Shape o = first;
    uint64_t sum = first[nd_.axis];
    for (size_t k = 1; k < nd_.inputs.size(); ++k) {
      const Shape& s = in(k);
      bool ok = s.size() == first.size();
      for (size_t d = 0; ok && d < s.size(); ++d) ok = d == nd_.axis || s[d] == first[d];
      if (!ok) fail_node(in_label(k) + " does not match " + in_label(0) + " outside axis " + str(nd_.axis));
      sum += s[nd_.axis];
    }
    o[nd_.axis] = static_cast<size_t>(sum);
    set_out(0, o);
  }

  const Shape& declared_out() const { return m_.values[nd_.outputs[0]].dims; }
  const Shape& declared_in(size_t k) const { return m_.values[nd_.inputs[k]].dims; }

  // The declared output dims, except where a dim equals the declared input's and the input's actual dim
  // differs (a dynamic dim passing through): then the actual one. Ranks right-aligned.
  Shape follow_input(const Shape& declared) const {
    Shape o = declared;
    const Shape& di = declared_in(0);
    const Shape& x = in(0);
    if (di.size() != x.size() || di.size() > o.size()) return o;
    const size_t off = o.size() - di.size();
    for (size_t d = 0; d < di.size(); ++d) {
      if (x[d] != di[d] && o[off + d] == di[d]) o[off + d] = x[d];
    }
    return o;
  }

  std::vector<bool> axes_mask(size_t rank) const {
    std::vector<bool> m(rank, false);
    for (uint32_t a : nd_.ints_a) {
      if (a >= rank || m[a]) fail_node("axes must be distinct dims of " + in_label(0));
      m[a] = true;
    }
    return m;
  }

  bool is_int_value(size_t k) const {
    switch (m_.values[nd_.inputs[k]].dtype) {
      case DType::kInt32: case DType::kWxInt8: case DType::kWxUint8: case DType::kWxUint32: case DType::kWxInt64:
      case DType::kWxUint64:
        return true;
      default:
        return false;
    }
  }

  void gather() {
    const Shape& x = in(0);
    const Shape& idx = in(1);
    if (nd_.axis >= x.size()) fail_node("axis " + str(nd_.axis) + " is out of range for " + in_label(0));
    Shape o(x.begin(), x.begin() + nd_.axis);
    o.insert(o.end(), idx.begin(), idx.end());
    o.insert(o.end(), x.begin() + nd_.axis + 1, x.end());
    set_out(0, o);
  }

  // gatherElements / scatterElements: indices (and updates) of the input's rank, no larger off the axis.
  void elements() {
    const Shape& x = in(0);
    const Shape& idx = in(1);
    if (nd_.axis >= x.size()) fail_node("axis " + str(nd_.axis) + " is out of range for " + in_label(0));
    if (idx.size() != x.size()) fail_node("indices " + in_label(1) + " must have the rank of " + in_label(0));
    for (size_t d = 0; d < x.size(); ++d) {
      if (d != nd_.axis && idx[d] > x[d]) {
        fail_node("indices " + in_label(1) + " are larger than " + in_label(0) + " in dim " + str(d));
      }
    }
    if (nd_.type == NodeType::kWXScatterElements) {
      if (in(2) != idx) fail_node("updates " + in_label(2) + " must have the dims of indices " + in_label(1));
      set_out(0, x);
    } else {
      set_out(0, idx);
    }
  }

  void nd() {
    const Shape& x = in(0);
    const Shape& idx = in(1);
    if (idx.empty()) fail_node("indices " + in_label(1) + " must have rank >= 1");
    const size_t k = idx.back();
    if (k < 1 || k > x.size()) {
      fail_node("the last dim of indices " + in_label(1) + " must be 1.." + str(x.size()) + " (the rank of " +
                in_label(0) + ")");
    }
    Shape slices(idx.begin(), idx.end() - 1);
    slices.insert(slices.end(), x.begin() + static_cast<std::ptrdiff_t>(k), x.end());
    if (nd_.type == NodeType::kWXScatterND) {
      if (in(2) != slices) fail_node("updates " + in_label(2) + " should be " + shape_str(slices));
      set_out(0, x);
    } else {
      set_out(0, slices);
    }
  }

  void expand() {
    const Shape o = follow_input(declared_out());
    Shape b;
    if (!broadcast_shapes(in(0), o, b) || b != o) {
      fail_node(in_label(0) + " does not broadcast to the output dims " + shape_str(o));
    }
    set_out(0, o);
  }

  void tile() {
    const Shape& x = in(0);
    if (nd_.ints_a.size() != x.size()) {
      fail_node("repetitions has " + str(nd_.ints_a.size()) + " entries but " + in_label(0) + " has rank " + str(x.size()));
    }
    Shape o(x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      const uint64_t r = nd_.ints_a[d];
      if (r == 0) fail_node("repetitions must be >= 1");
      if (x[d] != 0 && r > kMaxTensorBytes / x[d]) fail_node("tiled dim " + str(d) + " is too large");
      o[d] = static_cast<size_t>(x[d] * r);
    }
    set_out(0, o);
  }

  void wx_pad() {
    const Shape& x = in(0);
    if (nd_.ints_a.size() != x.size() || nd_.ints_b.size() != x.size()) {
      fail_node("pre_paddings (" + str(nd_.ints_a.size()) + ") and post_paddings (" + str(nd_.ints_b.size()) +
                ") need one entry per dim of " + in_label(0));
    }
    Shape o(x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      const uint64_t a = nd_.ints_a[d], b = nd_.ints_b[d];
      if (nd_.wx_op == 1 && x[d] == 0 && (a || b)) fail_node("edge padding of an empty dim " + str(d));
      if (nd_.wx_op == 2 && (a >= x[d] || b >= x[d]) && (a || b)) {
        fail_node("reflection padding of dim " + str(d) + " must be smaller than its size " + str(x[d]));
      }
      if (nd_.wx_op == 3 && (a > x[d] || b > x[d])) {
        fail_node("symmetric padding of dim " + str(d) + " must not exceed its size " + str(x[d]));
      }
      const uint64_t v = uint64_t(x[d]) + a + b;
      if (v > kMaxTensorBytes) fail_node("padded dim " + str(d) + " is too large");
      o[d] = static_cast<size_t>(v);
    }
    set_out(0, o);
  }

  void wx_slice() {
    const Shape& x = in(0);
    const auto& st = nd_.ints_a;
    const auto& sd = nd_.ints_b;
    if (st.size() != x.size() || sd.size() != x.size()) {
      fail_node("starts (" + str(st.size()) + ") and strides (" + str(sd.size()) + ") need one entry per dim of " +
                in_label(0));
    }
    Shape o = declared_out();
    if (o.size() != x.size()) fail_node("the output rank differs from " + in_label(0));
    const Shape& di = declared_in(0);
    for (size_t d = 0; d < x.size(); ++d) {
      if (sd[d] == 0) fail_node("stride of dim " + str(d) + " must be >= 1");
      if (x[d] != di[d] && st[d] == 0 && sd[d] == 1 && o[d] == di[d]) o[d] = x[d];  // dynamic dim, whole
      if (o[d] != 0 && uint64_t(st[d]) + uint64_t(o[d] - 1) * sd[d] >= x[d]) {
        fail_node("slice of dim " + str(d) + " (start " + str(st[d]) + ", stride " + str(sd[d]) + ", " + str(o[d]) +
                  " elements) is out of range for " + in_label(0));
      }
    }
    set_out(0, o);
  }

  void resample() {
    const Shape& x = in(0);
    if (nd_.ints_a.size() != 2 || nd_.floats.size() != 2) fail_node("needs two axes and two scales");
    const uint32_t a0 = nd_.ints_a[0], a1 = nd_.ints_a[1];
    if (a0 >= x.size() || a1 >= x.size() || a0 == a1) fail_node("axes must be two distinct dims of " + in_label(0));
    for (float s : nd_.floats) {
      if (!std::isfinite(s) || s <= 0.f) fail_node("scales must be finite and > 0");
    }
    const Shape& dec = declared_out();
    if (dec.size() != x.size()) fail_node("the output rank differs from " + in_label(0));
    Shape o = x;
    o[a0] = dec[a0];
    o[a1] = dec[a1];
    for (uint32_t a : {a0, a1}) {
      if (o[a] != 0 && x[a] == 0) fail_node(in_label(0) + " is empty along axis " + str(a));
    }
    set_out(0, o);
  }

  void wx_pool() {
    const PoolParams& p = nd_.pool;
    if (p.pool_h == 0 || p.pool_w == 0) fail_node("pooling size " + str(p.pool_h) + "x" + str(p.pool_w) + " must be > 0");
    if (p.stride_h == 0 || p.stride_w == 0) fail_node("stride " + str(p.stride_h) + "x" + str(p.stride_w) + " must be > 0");
    need_rank(0, 4, 4);
    need_nonempty(0);
    const Shape& x = in(0);
    const Shape& di = declared_in(0);
    const Shape& dec = declared_out();
    if (dec.size() != 4) fail_node("the output must have rank 4");
    // Output sizes: floor (default) or ceil rounding, whichever the declared output used.
    auto sizes = [&](uint64_t in_sz, uint64_t pa, uint64_t pb, uint64_t k, uint64_t dil, uint64_t s, uint64_t& fl,
                     uint64_t& ce) {
      const uint64_t eff = dil * (k - 1) + 1, padded = in_sz + pa + pb;
      if (padded < eff) return false;
      fl = (padded - eff) / s + 1;
      ce = (padded - eff + s - 1) / s + 1;
      return true;
    };
    uint64_t fh, ch, fw, cw, dfh, dch, dfw, dcw;
    if (!sizes(x[1], p.pad_top, p.pad_bottom, p.pool_h, p.dilation_h, p.stride_h, fh, ch) ||
        !sizes(x[2], p.pad_left, p.pad_right, p.pool_w, p.dilation_w, p.stride_w, fw, cw) ||
        !sizes(di[1], p.pad_top, p.pad_bottom, p.pool_h, p.dilation_h, p.stride_h, dfh, dch) ||
        !sizes(di[2], p.pad_left, p.pad_right, p.pool_w, p.dilation_w, p.stride_w, dfw, dcw)) {
      fail_node(in_label(0) + " is smaller than the " + str(p.pool_h) + "x" + str(p.pool_w) + " window plus padding");
    }
    const bool ceil_h = dec[1] == dch && dec[1] != dfh;
    const bool ceil_w = dec[2] == dcw && dec[2] != dfw;
    set_out(0, {x[0], static_cast<size_t>(ceil_h ? ch : fh), static_cast<size_t>(ceil_w ? cw : fw), x[3]});
  }

  void reduce() {
    const Shape& x = in(0);
    std::vector<bool> red(x.size(), false);
    for (uint32_t a : nd_.ints_a) {
      if (a >= x.size() || red[a]) fail_node("axes must be distinct dims of " + in_label(0));
      red[a] = true;
    }
    if ((nd_.wx_op == 10 || nd_.wx_op == 11) && nd_.ints_a.size() != 1) {
      fail_node("arg_max / arg_min take exactly one axis, got " + str(nd_.ints_a.size()));
    }
    Shape o;
    for (size_t d = 0; d < x.size(); ++d) {
      if (!red[d]) o.push_back(x[d]);
      else if (nd_.keep_dims) o.push_back(1);
    }
    set_out(0, o);
  }

  const Model& m_;
  size_t i_;
  const Node& nd_;
  std::vector<Shape>& shapes_;
};

}  // namespace

size_t numel(const Shape& s) {
  size_t n = 1;
  for (size_t d : s) n *= d;
  return n;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  const size_t r = std::max(a.size(), b.size());
  out.assign(r, 1);
  for (size_t k = 0; k < r; ++k) {
    const size_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    const size_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (da == db || db == 1) out[k] = da;
    else if (da == 1) out[k] = db;
    else return false;
  }
  return true;
}

void infer_node_shapes(const Model& m, size_t i, std::vector<Shape>& shapes) { Inferer(m, i, shapes).run(); }

}  // namespace webxnn
