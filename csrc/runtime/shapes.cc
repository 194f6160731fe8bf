#include "runtime/shapes.h"

#include <algorithm>
#include <string>

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

  void reduce() {
    const Shape& x = in(0);
    std::vector<bool> red(x.size(), false);
    for (uint32_t a : nd_.ints_a) {
      if (a >= x.size() || red[a]) fail_node("axes must be distinct dims of " + in_label(0));
      red[a] = true;
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
