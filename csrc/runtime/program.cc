#include "runtime/program.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "kernels/wx/wx.h"
#include "runtime/arena_layout.h"
#include "runtime/loader.h"
#include "runtime/shapes.h"
#include "runtime/status.h"

namespace webxnn {
namespace {

constexpr size_t kTensorSlack = 16;      // readable bytes after every arena tensor
constexpr size_t kPlanCacheSize = 8;     // plans for non-declared input shapes

std::string str(uint64_t v) { return std::to_string(v); }

bool public_dtype_of(DType t, PublicDType& out) {
  switch (t) {
    case DType::kFp32: out = PublicDType::kFloat32; return true;
    case DType::kFp16: out = PublicDType::kFloat16; return true;
    case DType::kQint8: case DType::kWxInt8: out = PublicDType::kInt8; return true;
    case DType::kQuint8: case DType::kWxUint8: out = PublicDType::kUint8; return true;
    case DType::kInt32: case DType::kQint32: out = PublicDType::kInt32; return true;
    case DType::kWxUint32: out = PublicDType::kUint32; return true;
    case DType::kWxInt64: out = PublicDType::kInt64; return true;
    case DType::kWxUint64: out = PublicDType::kUint64; return true;
    default: return false;
  }
}

// The WX kernels' element type of a datatype; false for quantized and other types they do not take.
bool wx_et(DType t, wx::ET& out) {
  switch (t) {
    case DType::kFp32: out = wx::ET::kF32; return true;
    case DType::kFp16: out = wx::ET::kF16; return true;
    case DType::kInt32: out = wx::ET::kI32; return true;
    case DType::kWxInt8: out = wx::ET::kI8; return true;
    case DType::kWxUint8: out = wx::ET::kU8; return true;
    case DType::kWxUint32: out = wx::ET::kU32; return true;
    case DType::kWxInt64: out = wx::ET::kI64; return true;
    case DType::kWxUint64: out = wx::ET::kU64; return true;
    default: return false;
  }
}

bool is_wx_node(NodeType t) { return static_cast<uint8_t>(t) >= 128; }

bool packs_weights(NodeType t) {
  return t == NodeType::kFullyConnected || t == NodeType::kConv2d || t == NodeType::kDepthwiseConv2d ||
         t == NodeType::kConvTranspose2d;
}

constexpr size_t kMaxFoldBytes = size_t(64) << 20;  // larger constant results are computed per run instead

size_t value_bytes(const Value& v, const Shape& s) { return numel(s) * std::max<size_t>(1, element_size(v.dtype)); }

int8_t quantize_bound(float real, const QuantParams& q, bool is_min) {
  if (std::isinf(real)) return (real < 0) ? -128 : 127;
  double x = std::nearbyint(double(real) / q.scale) + q.zero_point;
  x = std::min(127.0, std::max(-128.0, x));
  (void)is_min;
  return static_cast<int8_t>(x);
}

// Collapses a broadcast binary op to <= 8 dims of alternating broadcast patterns (dims of size 1 dropped,
// neighbours with the same pattern merged). Strides are in elements, 0 along broadcast dims.
struct Collapsed {
  size_t rank = 0;
  size_t out[kMaxRank] = {}, as[kMaxRank] = {}, bs[kMaxRank] = {};
};

Collapsed collapse_binary(const Shape& a, const Shape& b, const Shape& o) {
  const size_t r = o.size();
  size_t od[kMaxRank], ab[kMaxRank], bb[kMaxRank];  // ab/bb: 1 when broadcast along this dim
  size_t n = 0;
  for (size_t k = 0; k < r; ++k) {
    if (o[k] == 1) continue;
    const size_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    const size_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    const size_t fa = da == 1 ? 1 : 0, fb = db == 1 ? 1 : 0;
    if (n > 0 && ab[n - 1] == fa && bb[n - 1] == fb) {
      od[n - 1] *= o[k];
    } else {
      od[n] = o[k];
      ab[n] = fa;
      bb[n] = fb;
      ++n;
    }
  }
  Collapsed c;
  if (n == 0) {
    c.rank = 1;
    c.out[0] = 1;
    return c;
  }
  c.rank = n;
  size_t sa = 1, sb = 1;
  for (size_t k = n; k-- > 0;) {
    c.out[k] = od[k];
    c.as[k] = ab[k] ? 0 : sa;
    c.bs[k] = bb[k] ? 0 : sb;
    if (!ab[k]) sa *= od[k];
    if (!bb[k]) sb *= od[k];
  }
  return c;
}

UnaryOp unary_op_of(NodeType t) {
  switch (t) {
    case NodeType::kSigmoid: return UnaryOp::kSigmoid;
    case NodeType::kClamp: return UnaryOp::kClamp;
    case NodeType::kFloor: return UnaryOp::kFloor;
    case NodeType::kSquareRoot: return UnaryOp::kSqrt;
    case NodeType::kCeiling: return UnaryOp::kCeil;
    case NodeType::kHardswish: return UnaryOp::kHardswish;
    case NodeType::kNegate: return UnaryOp::kNeg;
    case NodeType::kSquare: return UnaryOp::kSquare;
    case NodeType::kAbs: return UnaryOp::kAbs;
    case NodeType::kReciprocalSquareRoot: return UnaryOp::kRsqrt;
    case NodeType::kLog: return UnaryOp::kLog;
    case NodeType::kGelu: return UnaryOp::kGelu;
    case NodeType::kTanh: return UnaryOp::kTanh;
    case NodeType::kExp: return UnaryOp::kExp;
    case NodeType::kSin: return UnaryOp::kSin;
    case NodeType::kCos: return UnaryOp::kCos;
    case NodeType::kLeakyReLU: return UnaryOp::kLeakyRelu;
    case NodeType::kELU: return UnaryOp::kElu;
    default: return UnaryOp::kCopy;
  }
}

bool is_unary_fp32(NodeType t) {
  switch (t) {
    case NodeType::kSigmoid: case NodeType::kClamp: case NodeType::kFloor: case NodeType::kSquareRoot:
    case NodeType::kCeiling: case NodeType::kHardswish: case NodeType::kNegate: case NodeType::kSquare:
    case NodeType::kAbs: case NodeType::kReciprocalSquareRoot: case NodeType::kLog: case NodeType::kGelu:
    case NodeType::kTanh: case NodeType::kExp: case NodeType::kSin: case NodeType::kCos:
    case NodeType::kLeakyReLU: case NodeType::kELU:
      return true;
    default:
      return false;
  }
}

// WXUnary ops (schema WXUnaryOp) whose fp32 form the kernel table has with the same semantics.
bool wx_unary_fp32(uint16_t wx_op, UnaryOp& op) {
  switch (wx_op) {
    case 0: op = UnaryOp::kRelu; return true;
    case 1: op = UnaryOp::kErf; return true;
    case 6: op = UnaryOp::kSoftsign; return true;
    case 14: op = UnaryOp::kAbs; return true;
    case 15: op = UnaryOp::kNeg; return true;
    default: return false;
  }
}

bool is_binary(NodeType t, BinaryOp& op) {
  switch (t) {
    case NodeType::kAdd: op = BinaryOp::kAdd; return true;
    case NodeType::kSubtract: op = BinaryOp::kSub; return true;
    case NodeType::kMultiply: op = BinaryOp::kMul; return true;
    case NodeType::kDiv: op = BinaryOp::kDiv; return true;
    case NodeType::kMinimum: op = BinaryOp::kMin; return true;
    case NodeType::kMaximum: op = BinaryOp::kMax; return true;
    case NodeType::kPReLU: op = BinaryOp::kPrelu; return true;
    default: return false;
  }
}

bool same_quant(const Value& a, const Value& b) {
  if (a.dtype != b.dtype) return false;
  if (a.quant.kind != QuantParams::Kind::kPerTensor) return true;
  return a.quant.scale == b.quant.scale && a.quant.zero_point == b.quant.zero_point;
}

}  // namespace

const char* public_dtype_name(PublicDType t) {
  switch (t) {
    case PublicDType::kFloat32: return "float32";
    case PublicDType::kFloat16: return "float16";
    case PublicDType::kInt8: return "int8";
    case PublicDType::kUint8: return "uint8";
    case PublicDType::kInt32: return "int32";
    case PublicDType::kUint32: return "uint32";
    case PublicDType::kInt64: return "int64";
    case PublicDType::kUint64: return "uint64";
  }
  return "?";
}

size_t public_dtype_size(PublicDType t) {
  switch (t) {
    case PublicDType::kFloat32: case PublicDType::kInt32: case PublicDType::kUint32: return 4;
    case PublicDType::kFloat16: return 2;
    case PublicDType::kInt8: case PublicDType::kUint8: return 1;
    case PublicDType::kInt64: case PublicDType::kUint64: return 8;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------------------
// Loading

std::shared_ptr<Program> Program::load_bytes(const void* data, size_t size, const LoadOptions& opts) {
  if (!data && size) fail(StatusCode::kInvalidArgument, "load_bytes: data is null");
  std::shared_ptr<Program> p(new Program());
  p->init(BlobStorage::copy_of(data, size), opts);
  return p;
}

std::shared_ptr<Program> Program::load_borrowed(const void* data, size_t size, std::shared_ptr<void> owner,
                                                const LoadOptions& opts) {
  if (!data && size) fail(StatusCode::kInvalidArgument, "load_borrowed: data is null");
  std::shared_ptr<Program> p(new Program());
  p->init(BlobStorage::borrow(data, size, std::move(owner)), opts);
  return p;
}

std::shared_ptr<Program> Program::load_file(const std::string& path, const LoadOptions& opts) {
  std::shared_ptr<Program> p(new Program());
  p->init(BlobStorage::map_file(path), opts);
  return p;
}

Program::~Program() = default;

void Program::init(std::shared_ptr<BlobStorage> blob, const LoadOptions& opts) {
  blob_ = std::move(blob);
  model_ = decode_blob(blob_->data(), blob_->size());
  const size_t nv = model_.values.size();
  const size_t nn = model_.nodes.size();

  // Parameters and shapes: every node's declared output dims must be what the node produces.
  std::vector<Shape> shapes(nv);
  for (size_t v = 0; v < nv; ++v) shapes[v] = model_.values[v].dims;
  for (size_t i = 0; i < nn; ++i) {
    infer_node_shapes(model_, i, shapes);
    for (uint32_t out : model_.nodes[i].outputs) {
      if (shapes[out] != model_.values[out].dims) {
        format_error(model_.node_label(i) + ": output " + model_.value_label(out) + " is declared " +
                     shape_str(model_.values[out].dims) + " but the node produces " + shape_str(shapes[out]));
      }
    }
  }
  for (size_t i = 0; i < nn; ++i) check_supported(i);
  kernels_ = &best_kernels();
  fold_constants(shapes);

  // Graph inputs and outputs.
  for (int pass = 0; pass < 2; ++pass) {
    const auto& ids = pass == 0 ? model_.inputs : model_.outputs;
    const auto& names = pass == 0 ? model_.input_names : model_.output_names;
    auto& infos = pass == 0 ? inputs_ : outputs_;
    for (size_t k = 0; k < ids.size(); ++k) {
      const Value& v = model_.values[ids[k]];
      TensorInfo info;
      info.name = names[k];
      info.shape = v.dims;
      if (!public_dtype_of(v.dtype, info.dtype)) {
        unsupported(std::string(pass == 0 ? "graph input '" : "graph output '") + names[k] + "' (" +
                    model_.value_label(ids[k]) + ") has datatype " + dtype_name(v.dtype) +
                    ", which cannot be passed in or out");
      }
      info.dynamic.assign(v.dims.size(), std::string());
      info.is_dynamic.assign(v.dims.size(), !model_.has_wx_metadata && pass == 0);  // ExecuTorch: upper bounds
      if (pass == 0) {
        for (const DynDim& d : model_.dyn_dims) {
          if (d.input != k) continue;
          info.dynamic[d.axis] = d.name.empty() ? "dyn" + str(d.axis) : d.name;
          info.is_dynamic[d.axis] = true;
        }
      }
      infos.push_back(std::move(info));
    }
  }

  producer_.assign(nv, -1);
  last_use_.assign(nv, -1);
  consumers_.assign(nv, 0);
  for (size_t i = 0; i < nn; ++i) {
    if (model_.nodes[i].folded) continue;
    for (uint32_t in : model_.nodes[i].inputs) {
      if (in == kNoValue) continue;
      last_use_[in] = static_cast<int64_t>(i);
      ++consumers_[in];
    }
    for (uint32_t out : model_.nodes[i].outputs) producer_[out] = static_cast<int64_t>(i);
  }

  // The declared input size of each convolution: kernel tables pick an algorithm by it at pack time.
  for (Node& nd : model_.nodes) {
    if (nd.type != NodeType::kConv2d || nd.inputs.empty() || shapes[nd.inputs[0]].size() != 4) continue;
    const Shape& in = shapes[nd.inputs[0]];
    nd.conv.input_h = static_cast<uint32_t>(std::min<size_t>(in[1], UINT32_MAX));
    nd.conv.input_w = static_cast<uint32_t>(std::min<size_t>(in[2], UINT32_MAX));
  }
  pool_ = std::make_unique<ThreadPool>(opts.threads);
  pack_weights();
  base_plan_ = make_plan(std::move(shapes));
}

void Program::check_supported(size_t i) const {
  const Node& nd = model_.nodes[i];
  auto dt = [&](uint32_t v) { return model_.values[v].dtype; };
  auto describe = [&]() {
    std::string s = "(";
    for (size_t k = 0; k < nd.inputs.size(); ++k) {
      if (nd.inputs[k] == kNoValue) continue;
      if (s.size() > 1) s += ", ";
      s += dtype_name(dt(nd.inputs[k]));
    }
    s += ") -> ";
    for (size_t k = 0; k < nd.outputs.size(); ++k) s += std::string(k ? ", " : "") + dtype_name(dt(nd.outputs[k]));
    return s;
  };
  auto all_fp32 = [&]() {
    for (uint32_t v : nd.inputs) {
      if (v != kNoValue && dt(v) != DType::kFp32) return false;
    }
    for (uint32_t v : nd.outputs) {
      if (dt(v) != DType::kFp32) return false;
    }
    return true;
  };
  auto need_fp32 = [&]() {
    if (!all_fp32()) unsupported(model_.node_label(i) + ": datatypes " + describe() + " are not supported (fp32 only)");
  };
  auto need_const = [&](size_t k, const char* what) {
    if (k < nd.inputs.size() && nd.inputs[k] != kNoValue && !model_.values[nd.inputs[k]].is_constant) {
      unsupported(model_.node_label(i) + ": a non-constant " + what + " (" + model_.value_label(nd.inputs[k]) +
                  ") is not supported yet");
    }
  };
  auto need_bytes = [&]() {  // layout ops: any element type, same in and out
    const Value& out = model_.values[nd.outputs[0]];
    if (element_size(out.dtype) == 0) {
      unsupported(model_.node_label(i) + ": datatype " + dtype_name(out.dtype) + " is not supported here");
    }
    for (uint32_t v : nd.inputs) {
      if (!same_quant(model_.values[v], out)) {
        unsupported(model_.node_label(i) + ": datatypes or quantization differ between input and output " +
                    describe());
      }
    }
  };
  BinaryOp bop;
  using T = NodeType;
  switch (nd.type) {
    case T::kSoftmax: case T::kGlobalAvgPooling2d: case T::kAvgPooling2d: case T::kMaxPooling2d:
    case T::kBatchMatrixMultiply:
      need_fp32();
      return;
    case T::kConv2d: case T::kDepthwiseConv2d: case T::kConvTranspose2d:
      need_fp32();  // a non-constant filter or bias is packed per run
      return;
    case T::kFullyConnected: {
      if (all_fp32()) return;
      need_const(1, "filter");
      need_const(2, "bias");
      const Value& x = model_.values[nd.inputs[0]];
      const Value& w = model_.values[nd.inputs[1]];
      const Value& y = model_.values[nd.outputs[0]];
      const bool has_bias = nd.inputs[2] != kNoValue;
      const bool w_ok = (w.dtype == DType::kQcint8) ||
                        (w.dtype == DType::kQint8 && w.quant.zero_point == 0);
      const bool b_ok = !has_bias || dt(nd.inputs[2]) == DType::kQcint32 || dt(nd.inputs[2]) == DType::kQint32;
      if (x.dtype == DType::kQint8 && y.dtype == DType::kQint8 && w_ok && b_ok) {
        const size_t o_dim = (nd.flags & kFlagTransposeWeights) ? 1 : 0;
        if (w.quant.kind == QuantParams::Kind::kPerChannel && size_t(w.quant.channel_dim) != o_dim) {
          unsupported(model_.node_label(i) + ": per-channel filter scales must be along the output dim " +
                      str(o_dim) + ", not " + std::to_string(w.quant.channel_dim));
        }
        return;
      }
      unsupported(model_.node_label(i) + ": datatypes " + describe() +
                  " are not supported (fp32, or qint8 x qcint8 [+ qcint32 bias] -> qint8)");
    }
    case T::kConvert: {
      const DType a = dt(nd.inputs[0]), b = dt(nd.outputs[0]);
      if ((a == DType::kFp32 && b == DType::kQint8) || (a == DType::kQint8 && b == DType::kFp32)) return;
      wx::ET ea, eb;
      if (wx_et(a, ea) && wx_et(b, eb)) return;
      unsupported(model_.node_label(i) + ": conversion " + describe() +
                  " is not supported (fp32 <-> qint8, or between fp32, fp16 and the integer types)");
    }
    case T::kStaticResizeBilinear2D: {
      const DType a = dt(nd.inputs[0]), b = dt(nd.outputs[0]);
      if (a == b && (a == DType::kFp32 || a == DType::kFp16)) return;
      unsupported(model_.node_label(i) + ": datatypes " + describe() + " are not supported (fp32 or fp16)");
    }
    case T::kStaticTranspose: case T::kStaticReshape: case T::kStaticSlice: case T::kCopy:
    case T::kConcatenate2: case T::kConcatenate3: case T::kConcatenate4: case T::kConcatenate5:
      need_bytes();
      return;
    case T::kStaticConstantPad: {
      need_bytes();
      const DType t = dt(nd.outputs[0]);
      wx::ET et;
      const bool computed = t == DType::kQint8 || t == DType::kQuint8 || wx_et(t, et);
      if (!computed && nd.alpha != 0.f) {
        unsupported(model_.node_label(i) + ": a non-zero padding value for " + dtype_name(t) + " is not supported");
      }
      return;
    }
    default:
      break;
  }
  if (is_binary(nd.type, bop) || is_unary_fp32(nd.type)) {
    need_fp32();
    return;
  }
  if (is_wx_node(nd.type)) {
    check_wx_types(i);
    return;
  }
  unsupported(model_.node_label(i) + ": this node type is not supported by the runtime yet");
}

void Program::check_wx_types(size_t i) const {
  const Node& nd = model_.nodes[i];
  std::vector<wx::ET> in(nd.inputs.size(), wx::ET::kF32);
  std::vector<bool> has(nd.inputs.size(), false);
  wx::ET out = wx::ET::kF32;
  std::string sig = "(";
  for (size_t k = 0; k < nd.inputs.size(); ++k) {
    if (nd.inputs[k] == kNoValue) continue;
    sig += std::string(sig.size() > 1 ? ", " : "") + dtype_name(model_.values[nd.inputs[k]].dtype);
  }
  sig += std::string(") -> ") + dtype_name(model_.values[nd.outputs[0]].dtype);
  auto bad = [&](const std::string& why) {
    unsupported(model_.node_label(i) + ": datatypes " + sig + " are not supported: " + why);
  };
  for (size_t k = 0; k < nd.inputs.size(); ++k) {
    if (nd.inputs[k] == kNoValue) continue;
    if (!wx_et(model_.values[nd.inputs[k]].dtype, in[k])) bad("webxnn nodes take fp32, fp16 and plain integers");
    has[k] = true;
  }
  if (!wx_et(model_.values[nd.outputs[0]].dtype, out)) bad("webxnn nodes take fp32, fp16 and plain integers");
  const bool in_float = wx::et_is_float(in[0]);
  auto is_int = [](wx::ET t) { return !wx::et_is_float(t); };
  using T = NodeType;
  switch (nd.type) {
    case T::kWXUnary:
      if (nd.wx_op == 12 || nd.wx_op == 11) return;  // cast, identity: any to any
      if (nd.wx_op == 8) {
        if (in[0] != wx::ET::kU8 || out != wx::ET::kU8) bad("logical_not takes and gives uint8");
        return;
      }
      if (nd.wx_op == 9 || nd.wx_op == 10) {
        if (!in_float || out != wx::ET::kU8) bad("is_nan / is_infinite take a float and give uint8");
        return;
      }
      if (out != in[0]) bad("input and output must have the same datatype");
      return;
    case T::kWXBinary:
      if (in[0] != in[1]) bad("both inputs must have the same datatype");
      if (nd.wx_op >= 1 && nd.wx_op <= 9) {
        if (out != wx::ET::kU8) bad("comparisons and logical ops give uint8");
        if (nd.wx_op >= 7 && in[0] != wx::ET::kU8) bad("logical ops take uint8");
        return;
      }
      if (out != in[0]) bad("input and output must have the same datatype");
      return;
    case T::kWXReduce:
      if (nd.wx_op == 10 || nd.wx_op == 11) {
        if (!is_int(out)) bad("arg_max / arg_min give an integer datatype");
        return;
      }
      if (out != in[0]) bad("input and output must have the same datatype");
      return;
    case T::kWXGather: case T::kWXGatherElements: case T::kWXGatherND:
      if (out != in[0]) bad("input and output must have the same datatype");
      if (!is_int(in[1])) bad("indices must be an integer datatype");
      return;
    case T::kWXScatterElements: case T::kWXScatterND:
      if (out != in[0] || in[2] != in[0]) bad("input, updates and output must have the same datatype");
      if (!is_int(in[1])) bad("indices must be an integer datatype");
      return;
    case T::kWXWhere:
      if (in[0] != wx::ET::kU8) bad("the condition must be uint8");
      if (in[1] != out || in[2] != out) bad("both branches and the output must have the same datatype");
      return;
    case T::kWXNormalize:
      if ((has[1] && in[1] != in[0]) || (has[2] && in[2] != in[0])) bad("scale and bias must match the input");
      [[fallthrough]];
    case T::kWXResample2d: case T::kWXPool2d:
      if (!in_float) bad("a float datatype is needed");
      if (out != in[0]) bad("input and output must have the same datatype");
      return;
    case T::kWXQuantize:
      if (!wx::et_is_float(in[1])) bad("the scale must be a float datatype");
      if (nd.wx_op == 0) {
        if (!in_float || !is_int(out)) bad("quantize takes a float and gives an integer");
        if (has[2] && in[2] != out) bad("the zero point must have the output's datatype");
      } else {
        if (!is_int(in[0]) || !wx::et_is_float(out)) bad("dequantize takes an integer and gives a float");
        if (has[2] && in[2] != in[0]) bad("the zero point must have the input's datatype");
      }
      return;
    default:  // expand, tile, reverse, cumulative sum, triangular, pad, slice
      if (out != in[0]) bad("input and output must have the same datatype");
      return;
  }
}

void Program::fold_constants(const std::vector<Shape>& shapes) {
  const size_t nv = model_.values.size();
  std::vector<void*> ptrs(nv, nullptr);
  for (size_t v = 0; v < nv; ++v) {
    if (model_.values[v].is_constant) ptrs[v] = const_cast<uint8_t*>(model_.values[v].data);
  }
  Plan plan;
  plan.shapes = shapes;
  SerialParallel serial;
  for (size_t i = 0; i < model_.nodes.size(); ++i) {
    Node& nd = model_.nodes[i];
    if (nd.inputs.empty() || packs_weights(nd.type)) continue;
    bool foldable = true;
    for (uint32_t in : nd.inputs) foldable = foldable && (in == kNoValue || model_.values[in].is_constant);
    size_t total = 0;
    for (uint32_t out : nd.outputs) {
      const Value& v = model_.values[out];
      foldable = foldable && v.flags == 0 && element_size(v.dtype) != 0;
      if (foldable) total += value_bytes(v, shapes[out]);
    }
    if (!foldable || total > kMaxFoldBytes) continue;
    std::vector<std::shared_ptr<AlignedBuffer>> bufs;
    bool empty = false;
    for (uint32_t out : nd.outputs) {
      const size_t bytes = value_bytes(model_.values[out], shapes[out]);
      empty = empty || bytes == 0;
      bufs.push_back(std::make_shared<AlignedBuffer>(bytes + kTensorSlack, true));
      ptrs[out] = bufs.back()->data();
    }
    if (!empty) exec_node(i, plan, ptrs.data(), serial);
    for (size_t k = 0; k < nd.outputs.size(); ++k) {
      Value& v = model_.values[nd.outputs[k]];
      v.is_constant = true;
      v.data = bufs[k]->data();
      v.data_size = value_bytes(v, shapes[nd.outputs[k]]);
      model_.keepalive.push_back(bufs[k]);
    }
    nd.folded = true;
  }
}

bool Program::needs_run_packing(size_t i) const {
  const Node& nd = model_.nodes[i];
  if (!packs_weights(nd.type)) return false;
  for (size_t k = 1; k < nd.inputs.size(); ++k) {
    if (nd.inputs[k] != kNoValue && !model_.values[nd.inputs[k]].is_constant) return true;
  }
  return false;
}

void Program::pack_node(size_t i, const Shape& filter_dims, const void* filter, const void* bias,
                        AlignedBuffer& buf) const {
  const Node& nd = model_.nodes[i];
  switch (nd.type) {
    case NodeType::kFullyConnected: {
      const bool io = nd.flags & kFlagTransposeWeights;
      const size_t K = io ? filter_dims[0] : filter_dims[1];
      const size_t N = io ? filter_dims[1] : filter_dims[0];
      buf = AlignedBuffer(kernels_->gemm_packed_size(K, N));
      kernels_->gemm_pack(K, N, static_cast<const float*>(filter), !io, static_cast<const float*>(bias), buf.data());
      return;
    }
    case NodeType::kConv2d:
      buf = AlignedBuffer(kernels_->conv2d_packed_size(nd.conv));
      kernels_->conv2d_pack(nd.conv, static_cast<const float*>(filter), static_cast<const float*>(bias), buf.data());
      return;
    case NodeType::kDepthwiseConv2d:
      buf = AlignedBuffer(kernels_->dwconv2d_packed_size(nd.conv));
      kernels_->dwconv2d_pack(nd.conv, static_cast<const float*>(filter), static_cast<const float*>(bias), buf.data());
      return;
    case NodeType::kConvTranspose2d:
      buf = AlignedBuffer(kernels_->deconv2d_packed_size(nd.conv));
      kernels_->deconv2d_pack(nd.conv, static_cast<const float*>(filter), static_cast<const float*>(bias), buf.data());
      return;
    default:
      return;
  }
}

// All constant weights are packed at load into one buffer (huge-page backed when large: fewer page faults
// at load and TLB misses at run time), one slice per node, the nodes packed in parallel on the pool, biggest
// first.
void Program::pack_weights() {
  const size_t nn = model_.nodes.size();
  packed_ptr_.assign(nn, nullptr);
  std::vector<size_t> size(nn, 0), offset(nn, 0);
  auto fc_kn = [&](const Node& nd, size_t& K, size_t& N) {
    const Value& w = model_.values[nd.inputs[1]];
    const bool io = nd.flags & kFlagTransposeWeights;
    K = io ? w.dims[0] : w.dims[1];
    N = io ? w.dims[1] : w.dims[0];
    return w.dtype == DType::kFp32;
  };
  size_t total = 0;
  std::vector<size_t> order;
  for (size_t i = 0; i < nn; ++i) {
    const Node& nd = model_.nodes[i];
    if (nd.folded || !packs_weights(nd.type) || needs_run_packing(i)) continue;  // dynamic: packed per run
    size_t K = 0, N = 0;
    switch (nd.type) {
      case NodeType::kFullyConnected:
        size[i] = fc_kn(nd, K, N) ? kernels_->gemm_packed_size(K, N) : kernels_->qs8_gemm_packed_size(K, N);
        break;
      case NodeType::kConv2d: size[i] = kernels_->conv2d_packed_size(nd.conv); break;
      case NodeType::kDepthwiseConv2d: size[i] = kernels_->dwconv2d_packed_size(nd.conv); break;
      case NodeType::kConvTranspose2d: size[i] = kernels_->deconv2d_packed_size(nd.conv); break;
      default: break;
    }
    offset[i] = total;
    total += align_up(std::max<size_t>(size[i], 1), kArenaAlignment);
    order.push_back(i);
  }
  packed_all_ = AlignedBuffer(total, false, /*huge_pages=*/true);
  for (size_t i : order) packed_ptr_[i] = packed_all_.data() + offset[i];
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return size[a] > size[b]; });

  auto pack_one = [&](size_t t) {
    const size_t i = order[t];
    const Node& nd = model_.nodes[i];
    void* dst = packed_all_.data() + offset[i];
    auto cdata = [&](size_t k) -> const void* {
      return (k < nd.inputs.size() && nd.inputs[k] != kNoValue) ? model_.values[nd.inputs[k]].data : nullptr;
    };
    auto cf = [&](size_t k) { return static_cast<const float*>(cdata(k)); };
    switch (nd.type) {
      case NodeType::kFullyConnected: {
        const Value& w = model_.values[nd.inputs[1]];
        const bool io = nd.flags & kFlagTransposeWeights;
        size_t K = 0, N = 0;
        if (fc_kn(nd, K, N)) {
          kernels_->gemm_pack(K, N, cf(1), !io, cf(2), dst);
        } else {
          const Value& x = model_.values[nd.inputs[0]];
          const Value& y = model_.values[nd.outputs[0]];
          std::vector<float> scales(N, w.quant.scale);
          if (w.quant.kind == QuantParams::Kind::kPerChannel) scales = w.quant.scales;
          kernels_->qs8_gemm_pack(K, N, static_cast<const int8_t*>(cdata(1)), !io,
                                  static_cast<const int32_t*>(cdata(2)), scales.data(), x.quant.scale,
                                  x.quant.zero_point, y.quant.scale, y.quant.zero_point, dst);
        }
        break;
      }
      case NodeType::kConv2d: kernels_->conv2d_pack(nd.conv, cf(1), cf(2), dst); break;
      case NodeType::kDepthwiseConv2d: kernels_->dwconv2d_pack(nd.conv, cf(1), cf(2), dst); break;
      case NodeType::kConvTranspose2d: kernels_->deconv2d_pack(nd.conv, cf(1), cf(2), dst); break;
      default: break;
    }
  };
  pool_->run(order.size(), pack_one);
}

// ---------------------------------------------------------------------------------------------------------
// Planning

namespace {

bool act_is_none(const Activation& a) { return std::isinf(a.min) && a.min < 0 && std::isinf(a.max) && a.max > 0; }

// The kernels' fused post-op for an activation node type (kNone: not fusable).
PostOp post_op_of(NodeType t) {
  switch (t) {
    case NodeType::kHardswish: return PostOp::kHardswish;
    case NodeType::kSigmoid: return PostOp::kSigmoid;
    case NodeType::kGelu: return PostOp::kGelu;
    default: return PostOp::kNone;
  }
}

// Storage groups: a union-find over values whose root owns the storage every member shares.
struct Groups {
  std::vector<uint32_t> parent;
  uint32_t find(uint32_t v) {
    while (parent[v] != v) {
      parent[v] = parent[parent[v]];
      v = parent[v];
    }
    return v;
  }
};

// A 1x1, stride-1, unpadded convolution of one group (a GEMM over pixels).
bool is_pointwise(const ConvParams& c) {
  return c.kernel_h == 1 && c.kernel_w == 1 && c.stride_h == 1 && c.stride_w == 1 && c.groups == 1 &&
         !c.pad_top && !c.pad_right && !c.pad_bottom && !c.pad_left;
}

}  // namespace

// Decides what runs (steps), which Adds fuse into the Conv2d / FullyConnected before them, which values share
// storage, and where every value lives. `shapes` are the plan's value shapes.
std::shared_ptr<Plan> Program::make_plan(std::vector<Shape> shapes) const {
  auto plan = std::make_shared<Plan>();
  plan->shapes = std::move(shapes);
  std::vector<int64_t> last_use = last_use_;
  plan_steps(*plan, last_use);
  return plan;
}

void Program::plan_steps(Plan& plan, std::vector<int64_t>& last_use) const {
  const size_t nv = model_.values.size();
  const size_t nn = model_.nodes.size();
  const std::vector<Shape>& shapes = plan.shapes;
  auto bytes_of = [&](uint32_t v) { return value_bytes(model_.values[v], shapes[v]); };
  // Values that need arena memory of their own: computed, not graph inputs/outputs, not constants.
  auto computed = [&](uint32_t v) {
    const Value& val = model_.values[v];
    return !val.is_constant && val.flags == 0 && producer_[v] >= 0;
  };
  // A value with its own fixed memory: a constant or a graph input/output.
  auto fixed = [&](uint32_t v) {
    const Value& val = model_.values[v];
    return val.is_constant || val.flags != 0;
  };

  // 1. Fusion of a conv / FC into its only consumer, which then runs as one step at the consumer's position
  // (so the conv's inputs must live until then); the conv's output never materializes.
  //  * Residual: Add(p, r) where p is a Conv2d / FullyConnected output with no activation of its own, and p,
  //    r and the sum all of one shape.
  //  * Activation: HardSwish / Sigmoid / Gelu of a Conv2d / DepthwiseConv2d / FullyConnected output (its
  //    clamp, if any, comes first, as unfused), applied by the kernel to each output tile while in cache.
  //  * Expand -> depthwise (MobileNet blocks): a pointwise Conv2d (1x1, stride 1, unpadded, one group) read
  //    only by a DepthwiseConv2d with depth multiplier 1; the depthwise step computes the expanded rows it
  //    needs (`pre`), and may itself fuse into its activation.
  //  * NCHW image -> Conv2d: a StaticTranspose (0, 2, 3, 1) read only by a Conv2d whose kernel table reads
  //    planes as fast (an ONNX model's RGB stem); the conv reads the transpose's input in place.
  std::vector<uint32_t> fused_into(nn, kNoValue);  // conv/FC node -> the consumer node
  std::vector<Step> fused(nn);                     // consumer node -> its fused step
  std::vector<uint32_t> pre_of(nn, kNoValue);      // depthwise node -> its fused pointwise producer
  std::vector<uint32_t> pre_act_of(nn, kNoValue);  // depthwise node -> the activation after that producer
  std::vector<uint32_t> dw_of(nn, kNoValue);       // pointwise conv node -> its fused depthwise producer
  std::vector<uint32_t> dw_act_of(nn, kNoValue);   // pointwise conv node -> the activation after that producer
  std::vector<uint32_t> transpose_of(nn, kNoValue);  // Conv2d node -> the NCHW -> NHWC transpose it reads through
  std::vector<bool> elided(nv, false);             // the values that never materialize
  // The node producing pv if pv can stay inside a fused step (a computed fp32 value with one reader, made by a
  // node that runs, with weights packed at load, from an fp32 input), else -1.
  auto sole_producer = [&](uint32_t pv) -> int64_t {
    if (!computed(pv) || consumers_[pv] != 1 || model_.values[pv].dtype != DType::kFp32) return -1;
    const size_t j = static_cast<size_t>(producer_[pv]);
    const Node& cv = model_.nodes[j];
    if (cv.folded || needs_run_packing(j) || model_.values[cv.inputs[0]].dtype != DType::kFp32) return -1;
    return static_cast<int64_t>(j);
  };
  auto fusable = [&](uint32_t pv, bool residual) -> int64_t {  // the producer of pv if it can fuse, else -1
    const int64_t j = sole_producer(pv);
    if (j < 0 || fused_into[static_cast<size_t>(j)] != kNoValue) return -1;
    const Node& cv = model_.nodes[static_cast<size_t>(j)];
    const bool fc = cv.type == NodeType::kFullyConnected;
    const bool kind = residual ? (cv.type == NodeType::kConv2d || fc) : (fc || cv.type == NodeType::kConv2d ||
                                                                           cv.type == NodeType::kDepthwiseConv2d);
    if (!kind || (residual && !act_is_none(cv.act))) return -1;
    return j;
  };
  auto inputs_live_until = [&](size_t j, size_t i) {  // node j runs at node i's position
    for (uint32_t in : model_.nodes[j].inputs) {
      if (in != kNoValue) last_use[in] = std::max<int64_t>(last_use[in], static_cast<int64_t>(i));
    }
  };
  auto fuse = [&](size_t i, size_t j, uint32_t pv, uint32_t residual) {
    fused_into[j] = static_cast<uint32_t>(i);
    fused[i].node = static_cast<uint32_t>(j);
    fused[i].into = static_cast<uint32_t>(i);
    fused[i].residual = residual;
    fused[i].pre = pre_of[j];
    fused[i].pre_act = pre_act_of[j];
    fused[i].dw = dw_of[j];
    fused[i].dw_act = dw_act_of[j];
    fused[i].transpose = transpose_of[j];
    elided[pv] = true;
    inputs_live_until(j, i);
    if (pre_of[j] != kNoValue) inputs_live_until(pre_of[j], i);
    if (dw_of[j] != kNoValue) inputs_live_until(dw_of[j], i);
    if (transpose_of[j] != kNoValue) inputs_live_until(transpose_of[j], i);
  };
  // Only where the tensor between two fused steps would not stay in L2 (~1 MB per core here) from one step to
  // the next: on small maps the row-by-row pointwise GEMM (M = one row of pixels) re-reads its weights for
  // every row and loses more than the memory traffic saves (MobileNetV2: 112x112x96 and 56x56x144 fuse;
  // 28x28x192 and smaller maps run faster apart).
  constexpr size_t kMinFusedBytes = size_t{1} << 20;
  // The node of `type` making pv for a fused block step (see dwconv2d_fused): pv's only producer, directly or
  // through an activation it already fused into (*act: that activation node, else kNoValue); else -1.
  auto block_producer = [&](uint32_t pv, NodeType type, uint32_t* act) -> int64_t {
    if (!kernels_->dwconv2d_fused || shapes[pv].size() != 4 || bytes_of(pv) < kMinFusedBytes) return -1;
    const int64_t p = sole_producer(pv);
    if (p < 0) return -1;
    size_t j = static_cast<size_t>(p);
    *act = kNoValue;
    if (post_op_of(model_.nodes[j].type) != PostOp::kNone && fused[j].into == j) {
      *act = static_cast<uint32_t>(j);  // the node it runs (fused[j].node) passed sole_producer when it fused
      j = fused[j].node;
    }
    if (model_.nodes[j].type != type || fused_into[j] != *act || transpose_of[j] != kNoValue) return -1;
    return static_cast<int64_t>(j);
  };
  // The block's expand: the pointwise conv making a depthwise node's input, if the two can run as one step.
  auto pointwise_producer = [&](const Node& dw, uint32_t* act) -> int64_t {
    if (dw.conv.group_output_channels != 1) return -1;
    const int64_t j = block_producer(dw.inputs[0], NodeType::kConv2d, act);
    return j >= 0 && is_pointwise(model_.nodes[static_cast<size_t>(j)].conv) ? j : -1;
  };
  // The block's depthwise: the depthwise node making pointwise conv i's input (its project), if the two can
  // run as one step.
  auto depthwise_producer = [&](size_t i, uint32_t* act) -> int64_t {
    const Node& cv = model_.nodes[i];
    if (!is_pointwise(cv.conv) || needs_run_packing(i)) return -1;
    const int64_t d = block_producer(cv.inputs[0], NodeType::kDepthwiseConv2d, act);
    return d >= 0 && model_.nodes[static_cast<size_t>(d)].conv.group_output_channels == 1 ? d : -1;
  };
  // The image transpose (NCHW -> NHWC) making Conv2d node i's input, if the conv can read its planes instead.
  auto planes_producer = [&](size_t i) -> int64_t {
    static const uint32_t kToNhwc[4] = {0, 2, 3, 1};
    const Node& cv = model_.nodes[i];
    const int64_t t = sole_producer(cv.inputs[0]);
    if (t < 0 || !kernels_->conv2d_reads_nchw || !kernels_->conv2d_reads_nchw(cv.conv)) return -1;
    const Node& tn = model_.nodes[static_cast<size_t>(t)];
    const bool nhwc = tn.type == NodeType::kStaticTranspose && tn.ints_a.size() == 4 &&
                      std::equal(kToNhwc, kToNhwc + 4, tn.ints_a.begin());
    return nhwc && shapes[tn.inputs[0]].size() == 4 ? t : -1;
  };
  // Node i's step absorbs the step of the activation node act (if any) that a producer had fused into.
  auto absorb_act = [&](uint32_t act, size_t i) {
    if (act == kNoValue) return;
    fused[act] = Step();
    fused_into[act] = static_cast<uint32_t>(i);
  };
  for (size_t i = 0; i < nn; ++i) {
    const Node& nd = model_.nodes[i];
    if (nd.folded || nd.outputs.size() != 1) continue;
    const uint32_t out = nd.outputs[0];
    if (model_.values[out].dtype != DType::kFp32 || numel(shapes[out]) == 0) continue;
    if (nd.type == NodeType::kConv2d) {
      const int64_t t = needs_run_packing(i) ? -1 : planes_producer(i);
      if (t >= 0) {  // the transpose becomes part of this step (or of the step this conv fuses into)
        fused_into[static_cast<size_t>(t)] = static_cast<uint32_t>(i);
        transpose_of[i] = static_cast<uint32_t>(t);
        elided[nd.inputs[0]] = true;
        inputs_live_until(static_cast<size_t>(t), i);
        continue;
      }
      uint32_t act = kNoValue;
      const int64_t d = depthwise_producer(i, &act);
      if (d >= 0) {  // the depthwise step (its expand and activations too) becomes part of this one
        const size_t dn = static_cast<size_t>(d);
        fused_into[dn] = static_cast<uint32_t>(i);
        absorb_act(act, i);
        dw_of[i] = static_cast<uint32_t>(dn);
        dw_act_of[i] = act;
        pre_of[i] = pre_of[dn];
        pre_act_of[i] = pre_act_of[dn];
        elided[nd.inputs[0]] = true;
        inputs_live_until(dn, i);
        if (pre_of[dn] != kNoValue) inputs_live_until(pre_of[dn], i);
      }
      continue;
    }
    if (nd.type == NodeType::kDepthwiseConv2d) {
      uint32_t act = kNoValue;
      const int64_t j = needs_run_packing(i) ? -1 : pointwise_producer(nd, &act);
      if (j >= 0) {  // the expand step (and its activation) becomes part of this one
        fused_into[static_cast<size_t>(j)] = static_cast<uint32_t>(i);
        absorb_act(act, i);
        pre_of[i] = static_cast<uint32_t>(j);
        pre_act_of[i] = act;
        elided[nd.inputs[0]] = true;
        inputs_live_until(static_cast<size_t>(j), i);
      }
      continue;
    }
    if (post_op_of(nd.type) != PostOp::kNone && nd.inputs.size() == 1) {
      const int64_t j = fusable(nd.inputs[0], false);
      if (j >= 0) fuse(i, static_cast<size_t>(j), nd.inputs[0], kNoValue);
      continue;
    }
    if (nd.type != NodeType::kAdd || nd.inputs.size() != 2) continue;
    for (size_t k = 0; k < 2; ++k) {
      const uint32_t pv = nd.inputs[k], rv = nd.inputs[1 - k];
      if (pv == rv || shapes[pv] != shapes[out] || shapes[rv] != shapes[out]) continue;
      const int64_t j = fusable(pv, true);
      if (j < 0) continue;
      fuse(i, static_cast<size_t>(j), pv, rv);
      break;
    }
  }

  // 2. Steps and storage groups, in node order. glast[root]: the last node reading any member of the group.
  Groups g;
  g.parent.resize(nv);
  std::vector<int64_t> glast(nv, -1);
  for (uint32_t v = 0; v < nv; ++v) {
    g.parent[v] = v;
    glast[v] = std::max<int64_t>(last_use[v], producer_[v]);
  }
  auto join = [&](uint32_t member, uint32_t root) {  // member is a fresh output (its own root so far)
    g.parent[member] = root;
    glast[root] = std::max(glast[root], glast[member]);
  };
  for (size_t i = 0; i < nn; ++i) {
    const Node& nd = model_.nodes[i];
    if (nd.folded || fused_into[i] != kNoValue) continue;
    bool empty = false;
    for (uint32_t out : nd.outputs) empty = empty || numel(shapes[out]) == 0;
    if (empty) continue;
    if (fused[i].into != kNoValue) {
      plan.steps.push_back(fused[i]);
      continue;
    }
    const uint32_t out = nd.outputs[0];
    const bool view = nd.type == NodeType::kStaticReshape || nd.type == NodeType::kCopy;
    if (view && nd.outputs.size() == 1 && bytes_of(nd.inputs[0]) == bytes_of(out)) {
      const uint32_t rx = g.find(nd.inputs[0]);
      const Value& ov = model_.values[out];
      if (computed(out) && (computed(rx) || fixed(rx)) && !elided[rx]) {
        // The output shares the input's storage (an arena slot, or a constant / graph input / output).
        join(out, rx);
        plan.aliased_nodes.push_back(static_cast<uint32_t>(i));
        continue;
      }
      if (ov.flags == kFlagExternalOutput && computed(rx)) {
        // Graph output = reshape(x): the whole group of x is computed straight into the output buffer.
        g.parent[rx] = out;
        glast[out] = std::max(glast[out], glast[rx]);
        plan.aliased_nodes.push_back(static_cast<uint32_t>(i));
        continue;
      }
    }
    Step st;
    st.node = static_cast<uint32_t>(i);
    st.pre = pre_of[i];
    st.pre_act = pre_act_of[i];
    st.dw = dw_of[i];
    st.dw_act = dw_act_of[i];
    st.transpose = transpose_of[i];
    plan.steps.push_back(st);
    // In place: an element-wise fp32 node may write over an input of its size that no later node reads.
    BinaryOp bop;
    UnaryOp uop;
    const bool binary = is_binary(nd.type, bop);
    const bool wx_unary = nd.type == NodeType::kWXUnary && model_.values[out].dtype == DType::kFp32 &&
                          model_.values[nd.inputs[0]].dtype == DType::kFp32 && wx_unary_fp32(nd.wx_op, uop);
    if (!(binary || wx_unary || is_unary_fp32(nd.type)) || !computed(out)) continue;
    for (size_t k = 0; k < nd.inputs.size(); ++k) {
      const uint32_t x = nd.inputs[k];
      const uint32_t rx = g.find(x);
      if (!computed(rx) || glast[rx] != static_cast<int64_t>(i) || bytes_of(x) != bytes_of(out)) continue;
      if (binary && g.find(nd.inputs[1 - k]) == rx) continue;  // the other operand lives there too
      join(out, rx);
      break;
    }
  }

  // 3. Memory: one arena slot per computed group root, placed by size and lifetime (arena_layout.cc); centred
  // in slots when several threads split each op's rows.
  plan.offsets.assign(nv, Plan::kNotInArena);
  plan.alias.assign(nv, kNoValue);
  std::vector<ArenaTensor> ts;
  for (uint32_t v = 0; v < nv; ++v) {
    if (g.find(v) != v || !computed(v) || elided[v]) continue;
    const size_t start = static_cast<size_t>(producer_[v]);
    const size_t end = std::max<size_t>(start, static_cast<size_t>(std::max<int64_t>(glast[v], 0)));
    ts.push_back({v, align_up(bytes_of(v) + kTensorSlack, kArenaAlignment), start, end, 0});
  }
  const size_t arena = place_tensors(ts, nn, threads() > 1);
  for (const ArenaTensor& t : ts) plan.offsets[t.value] = t.offset;
  for (uint32_t v = 0; v < nv; ++v) {
    const uint32_t r = g.find(v);
    if (r == v) continue;
    if (plan.offsets[r] != Plan::kNotInArena) plan.offsets[v] = plan.offsets[r];
    else plan.alias[v] = r;
  }
  plan.arena_bytes = arena;
  for (Step& st : plan.steps) st.serial = small_step(plan, st);
  plan_ahead(plan);
}

// Weights fetched ahead. A FullyConnected step on a few rows (a classifier on one image) reads each weight once
// or a few times: it runs at the speed of memory, and weights bigger than L2 come from L3 or, when the rest of
// the model pushed them out, from DRAM. The pointwise Conv2d steps just before it (up to kAheadConvs of them,
// within kAheadSteps steps, none fused with a depthwise) prefetch them while they compute, a share each, in the
// gaps of their FMA loops (ConvParams::ahead).
// MobileNetV2's 5 MB classifier after its 960 -> 320 and 320 -> 1280 convs and the global average pool; those
// four steps' per-step minimums on a contended machine: 802 -> 735 us at 1 thread, 482 -> 376 at 2 (the
// classifier 164 -> 87 and 135 -> 39 us). With the last conv prefetching it all, that conv ran 364 -> 409 us at
// 1 thread, the four steps 778.
void Program::plan_ahead(Plan& plan) const {
  constexpr size_t kAheadConvs = 2, kAheadSteps = 5;
  constexpr size_t kAheadMaxRows = 8;                 // rows of the FC: each weight used at most this often
  constexpr size_t kAheadMinBytes = size_t(1) << 20;  // smaller weights stay in L2 / L3 between runs
  for (size_t f = 1; f < plan.steps.size(); ++f) {
    const uint32_t fc = plan.steps[f].node;
    const Node& fn = model_.nodes[fc];
    if (fn.type != NodeType::kFullyConnected || !packed_ptr_[fc] ||
        model_.values[fn.inputs[1]].dtype != DType::kFp32) {
      continue;
    }
    const Shape& x = plan.shapes[fn.inputs[0]];
    const size_t K = x.empty() ? 0 : x.back(), N = plan.shapes[fn.outputs[0]].back();
    if (K == 0 || numel(x) / K > kAheadMaxRows) continue;
    const size_t bytes = kernels_->gemm_packed_size(K, N);
    if (bytes < kAheadMinBytes) continue;
    std::vector<Step*> convs;  // nearest first
    for (size_t s = f; s-- > 0 && s + kAheadSteps >= f && convs.size() < kAheadConvs;) {
      Step& st = plan.steps[s];
      const Node& cn = model_.nodes[st.node];
      if (cn.type != NodeType::kConv2d) continue;
      if (!is_pointwise(cn.conv) || st.dw != kNoValue || st.transpose != kNoValue || st.ahead != kNoValue || st.serial) break;
      convs.push_back(&st);
    }
    // In execution order, equal shares of the lines: the earlier conv the first share.
    const size_t lines = bytes / 64, n = convs.size();
    for (size_t j = 0; j < n; ++j) {
      Step& st = *convs[n - 1 - j];
      st.ahead = fc;
      st.ahead_offset = lines * j / n * 64;
      st.ahead_bytes = (lines * (j + 1) / n - lines * j / n) * 64;
    }
  }
}

// Steps so small that handing out tasks costs more than it saves run on the calling thread alone (a few µs
// of work: waking a worker costs about as much). Kernels size their own tiles above this.
bool Program::small_step(const Plan& plan, const Step& st) const {
  constexpr size_t kMinParallelBytes = size_t(32) << 10;  // output bytes of element-wise / layout steps
  constexpr double kMinParallelMacs = 1e5;                // multiply-adds of GEMM / convolution steps
  const Node& nd = model_.nodes[st.node];
  const uint32_t out = nd.outputs[0];
  const size_t out_elems = numel(plan.shapes[out]);
  switch (nd.type) {
    case NodeType::kFullyConnected: case NodeType::kBatchMatrixMultiply: {
      const Shape& x = plan.shapes[nd.inputs[0]];
      const double k = x.empty() ? 1.0 : static_cast<double>(x.back());
      return static_cast<double>(out_elems) * k < kMinParallelMacs;
    }
    case NodeType::kConv2d: case NodeType::kConvTranspose2d: {
      const ConvParams& c = nd.conv;
      const double per_out = double(c.kernel_h) * c.kernel_w * c.group_input_channels;
      return static_cast<double>(out_elems) * per_out < kMinParallelMacs;
    }
    case NodeType::kDepthwiseConv2d:
      return static_cast<double>(out_elems) * nd.conv.kernel_h * nd.conv.kernel_w < kMinParallelMacs;
    default: {
      // Reductions, pools and gathers read more than they write: count the biggest operand.
      size_t bytes = value_bytes(model_.values[out], plan.shapes[out]);
      for (uint32_t in : nd.inputs) {
        if (in != kNoValue) bytes = std::max(bytes, value_bytes(model_.values[in], plan.shapes[in]));
      }
      return bytes < kMinParallelBytes;
    }
  }
}

std::shared_ptr<const Plan> Program::plan_for(const std::vector<Shape>& input_shapes) const {
  if (input_shapes.size() != model_.inputs.size()) {
    input_error("expected " + str(model_.inputs.size()) + " inputs, got " + str(input_shapes.size()));
  }
  bool declared = true;
  for (size_t k = 0; k < input_shapes.size(); ++k) {
    if (input_shapes[k] != inputs_[k].shape) declared = false;
  }
  if (declared) return base_plan_;
  {
    std::lock_guard<std::mutex> lk(cache_mutex_);
    auto it = cache_.find(input_shapes);
    if (it != cache_.end()) return it->second;
  }
  check_input_shapes(input_shapes);
  std::vector<Shape> shapes(model_.values.size());
  for (size_t v = 0; v < shapes.size(); ++v) shapes[v] = model_.values[v].dims;
  std::string changed;
  for (size_t k = 0; k < input_shapes.size(); ++k) {
    const Shape& s = input_shapes[k];
    const Value& v = model_.values[model_.inputs[k]];
    const std::string desc = "input '" + inputs_[k].name + "': expected shape " + shape_str(inputs_[k].shape) +
                             ", got " + shape_str(s);
    if (s.size() > kMaxRank) input_error(desc + " (rank above " + str(kMaxRank) + ")");
    uint64_t n = std::max<size_t>(1, element_size(v.dtype));
    for (size_t d : s) {
      if (d != 0 && n > kMaxTensorBytes / d) input_error(desc + " (too large)");
      n *= d;
    }
    if (s != inputs_[k].shape) changed += (changed.empty() ? "" : "; ") + desc;
    shapes[model_.inputs[k]] = s;
  }
  for (size_t i = 0; i < model_.nodes.size(); ++i) {
    try {
      infer_node_shapes(model_, i, shapes);
    } catch (const Error& e) {
      input_error(changed + ", which the graph cannot take: " + e.what());
    }
  }
  std::shared_ptr<const Plan> plan = make_plan(std::move(shapes));
  std::lock_guard<std::mutex> lk(cache_mutex_);
  auto ins = cache_.emplace(input_shapes, plan);
  if (!ins.second) return ins.first->second;
  cache_order_.push_back(input_shapes);
  if (cache_order_.size() > kPlanCacheSize) {
    cache_.erase(cache_order_.front());
    cache_order_.erase(cache_order_.begin());
  }
  return plan;
}

// With webxnn metadata, only the dims named in dyn_dims may differ from the declared ones (1..max); without
// it (ExecuTorch payloads) every declared dim is an upper bound.
void Program::check_input_shapes(const std::vector<Shape>& input_shapes) const {
  for (size_t k = 0; k < input_shapes.size(); ++k) {
    const Shape& s = input_shapes[k];
    const TensorInfo& info = inputs_[k];
    const Shape& want = info.shape;
    const std::string desc = "input '" + info.name + "': expected shape " + shape_str(want) + ", got " + shape_str(s);
    if (s.size() != want.size()) input_error(desc + " (rank " + str(want.size()) + " expected, got " + str(s.size()) + ")");
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] == want[d]) continue;
      if (!info.is_dynamic[d]) {
        input_error(desc + ": axis " + str(d) + " is fixed at " + str(want[d]) + " but got " + str(s[d]));
      }
      if (s[d] > want[d] || (model_.has_wx_metadata && s[d] < 1)) {
        const std::string nm = info.dynamic[d].empty() ? "" : " ('" + info.dynamic[d] + "')";
        input_error(desc + ": axis " + str(d) + nm + " may be " + (model_.has_wx_metadata ? "1" : "0") + ".." +
                    str(want[d]) + " but got " + str(s[d]));
      }
    }
  }
}

std::vector<Shape> Program::output_shapes(const Plan& plan) const {
  std::vector<Shape> r;
  for (uint32_t v : model_.outputs) r.push_back(plan.shapes[v]);
  return r;
}

size_t Program::output_bytes(const Plan& plan, size_t k) const {
  return numel(plan.shapes[model_.outputs[k]]) * public_dtype_size(outputs_[k].dtype);
}

// ---------------------------------------------------------------------------------------------------------
// Execution

AlignedBuffer Program::acquire_arena(size_t bytes) const {
  {
    std::lock_guard<std::mutex> lk(arena_mutex_);
    for (size_t k = 0; k < free_arenas_.size(); ++k) {
      if (free_arenas_[k].size() >= bytes) {
        AlignedBuffer b = std::move(free_arenas_[k]);
        free_arenas_.erase(free_arenas_.begin() + static_cast<std::ptrdiff_t>(k));
        return b;
      }
    }
  }
  return AlignedBuffer(bytes, false, /*huge_pages=*/true);
}

void Program::release_arena(AlignedBuffer buf) const {
  constexpr size_t kMaxFreeArenas = 4;
  std::lock_guard<std::mutex> lk(arena_mutex_);
  if (free_arenas_.size() < kMaxFreeArenas) free_arenas_.push_back(std::move(buf));
}

void Program::run(const Plan& plan, const void* const* inputs, void* const* outputs, uint64_t* step_ns) const {
  const size_t nv = model_.values.size();
  // The arena comes from (and goes back to) a small cache: a fresh multi-megabyte allocation per run would
  // be mapped and page-faulted anew every time.
  struct ArenaLease {
    const Program& p;
    AlignedBuffer buf;
    ~ArenaLease() { p.release_arena(std::move(buf)); }
  } lease{*this, acquire_arena(plan.arena_bytes)};
  uint8_t* arena = lease.buf.data();
  std::vector<void*> ptrs(nv, nullptr);
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = model_.values[v];
    if (val.is_constant) ptrs[v] = const_cast<uint8_t*>(val.data);  // kernels only read constants
    else if (plan.offsets[v] != Plan::kNotInArena) ptrs[v] = arena + plan.offsets[v];
  }
  for (size_t k = 0; k < model_.outputs.size(); ++k) ptrs[model_.outputs[k]] = outputs[k];
  for (size_t k = 0; k < model_.inputs.size(); ++k) ptrs[model_.inputs[k]] = const_cast<void*>(inputs[k]);
  for (size_t v = 0; v < nv; ++v) {
    if (plan.alias[v] != kNoValue) ptrs[v] = ptrs[plan.alias[v]];
  }
  SerialParallel serial;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& st = plan.steps[s];
    Parallel& par = st.serial ? static_cast<Parallel&>(serial) : *pool_;
    if (!step_ns) {
      exec_node(st.node, plan, ptrs.data(), par, &st);
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    exec_node(st.node, plan, ptrs.data(), par, &st);
    const auto t1 = std::chrono::steady_clock::now();
    step_ns[s] += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  }
  // An input that is also an output (flags 3) is copied through.
  for (size_t k = 0; k < model_.outputs.size(); ++k) {
    const uint32_t v = model_.outputs[k];
    if (model_.values[v].flags & kFlagExternalInput) {
      const size_t bytes = output_bytes(plan, k);
      if (bytes && outputs[k] != ptrs[v]) std::memcpy(outputs[k], ptrs[v], bytes);
    }
  }
}

void Program::exec_node(size_t i, const Plan& plan, void* const* ptrs, Parallel& par, const Step* step) const {
  const Node& nd = model_.nodes[i];
  const KernelTable& K = *kernels_;
  auto in_ptr = [&](size_t k) -> const void* {
    return (k < nd.inputs.size() && nd.inputs[k] != kNoValue) ? ptrs[nd.inputs[k]] : nullptr;
  };
  auto inf = [&](size_t k) { return static_cast<const float*>(in_ptr(k)); };
  auto in_shape = [&](size_t k) -> const Shape& { return plan.shapes[nd.inputs[k]]; };
  const Shape& out_shape = plan.shapes[nd.outputs[0]];
  void* out = ptrs[nd.outputs[0]];
  float* outf = static_cast<float*>(out);
  const Value& out_val = model_.values[nd.outputs[0]];
  const size_t esize = std::max<size_t>(1, element_size(out_val.dtype));
  // A fused step (see plan_steps) writes its consumer's output: a residual Add's (with the Add's clamp) or an
  // activation's (this node's clamp, then the activation as the kernel's post-op).
  const Node* into = step && step->into != kNoValue ? &model_.nodes[step->into] : nullptr;
  const float* residual =
      into && step->residual != kNoValue ? static_cast<const float*>(ptrs[step->residual]) : nullptr;
  float* fused_out = into ? static_cast<float*>(ptrs[into->outputs[0]]) : outf;
  Activation fused_act = residual ? into->act : nd.act;
  if (into && !residual) fused_act.post = post_op_of(into->type);

  // Weights: packed at load, or (non-constant filter or bias) packed now into a per-run buffer.
  const void* packed = i < packed_ptr_.size() ? packed_ptr_[i] : nullptr;
  AlignedBuffer run_packed;
  if (packs_weights(nd.type) && needs_run_packing(i)) {
    pack_node(i, in_shape(1), in_ptr(1), in_ptr(2), run_packed);
    packed = run_packed.data();
  }
  if (is_wx_node(nd.type)) {
    exec_wx(i, plan, ptrs, par);
    return;
  }

  BinaryOp bop;
  if (is_binary(nd.type, bop)) {
    const Collapsed c = collapse_binary(in_shape(0), in_shape(1), out_shape);
    Activation act;
    if (nd.type == NodeType::kAdd || nd.type == NodeType::kSubtract || nd.type == NodeType::kMultiply ||
        nd.type == NodeType::kDiv) {
      act = nd.act;
    }
    const float* a = inf(0);
    const float* b = inf(1);
    // The kernel takes up to kMaxBinaryRank dims; loop over any leading ones beyond that.
    const size_t lead = c.rank > kMaxBinaryRank ? c.rank - kMaxBinaryRank : 0;
    BinaryShape s;
    s.rank = c.rank - lead;
    size_t inner = 1;
    for (size_t d = 0; d < s.rank; ++d) {
      s.out_dims[d] = c.out[lead + d];
      s.a_strides[d] = c.as[lead + d];
      s.b_strides[d] = c.bs[lead + d];
      inner *= s.out_dims[d];
    }
    size_t outer = 1;
    for (size_t d = 0; d < lead; ++d) outer *= c.out[d];
    for (size_t o = 0; o < outer; ++o) {
      size_t rem = o, ao = 0, bo = 0;
      for (size_t d = lead; d-- > 0;) {
        const size_t idx = rem % c.out[d];
        rem /= c.out[d];
        ao += idx * c.as[d];
        bo += idx * c.bs[d];
      }
      K.binary(bop, s, a + ao, b + bo, outf + o * inner, act, par);
    }
    return;
  }
  if (is_unary_fp32(nd.type)) {
    UnaryParams p;
    p.alpha = nd.alpha;
    if (nd.type == NodeType::kClamp) p.act = nd.act;
    K.unary(unary_op_of(nd.type), numel(out_shape), inf(0), outf, p, par);
    return;
  }

  switch (nd.type) {
    case NodeType::kFullyConnected: {
      const Shape& x = in_shape(0);
      const size_t Kd = x.back();
      const size_t N = out_shape.back();
      const size_t M = numel(x) / Kd;
      if (residual) {
        K.gemm_residual(M, N, Kd, inf(0), Kd, packed, residual, N, fused_out, N, fused_act, par);
      } else if (out_val.dtype == DType::kFp32) {
        K.gemm(M, N, Kd, inf(0), Kd, packed, fused_out, N, fused_act, par);
      } else {
        const int8_t lo = quantize_bound(nd.act.min, out_val.quant, true);
        const int8_t hi = quantize_bound(nd.act.max, out_val.quant, false);
        K.qs8_gemm(M, N, Kd, static_cast<const int8_t*>(in_ptr(0)), Kd, packed,
                   static_cast<int8_t*>(out), N, lo, hi, par);
      }
      return;
    }
    case NodeType::kBatchMatrixMultiply: {
      const Shape& a = in_shape(0);
      const Shape& b = in_shape(1);
      const bool nk = nd.flags & kFlagTransposeWeights;
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
        K.batch_matmul(nb, M, N, Kd, inf(0), na == 1 && nb != 1 ? 0 : a_mat, inf(1), nbb == 1 && nb != 1 ? 0 : b_mat,
                       nk, outf, par);
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
        K.batch_matmul(1, M, N, Kd, inf(0) + ai * a_mat, 0, inf(1) + bi * b_mat, 0, nk, outf + o * c_mat, par);
      }
      return;
    }
    case NodeType::kConv2d: case NodeType::kDepthwiseConv2d: case NodeType::kConvTranspose2d: {
      const Shape& x = in_shape(0);
      ConvParams p = nd.conv;
      p.act = fused_act;
      if (step && step->ahead != kNoValue) {
        p.ahead = {static_cast<const char*>(packed_ptr_[step->ahead]) + step->ahead_offset, step->ahead_bytes};
      }
      if (step && (step->pre != kNoValue || step->dw != kNoValue)) {
        // A fused block (see plan_steps): [expand ->] depthwise [-> this project conv, + residual].
        const bool project_step = step->dw != kNoValue;  // else this node is the depthwise
        const Node& dn = project_step ? model_.nodes[step->dw] : nd;
        PointwiseConv expand, project;
        const float* src = static_cast<const float*>(ptrs[dn.inputs[0]]);
        if (step->pre != kNoValue) {
          const Node& pw = model_.nodes[step->pre];
          expand.channels = plan.shapes[pw.inputs[0]][3];
          expand.packed = packed_ptr_[step->pre];
          expand.act = pw.act;
          if (step->pre_act != kNoValue) expand.act.post = post_op_of(model_.nodes[step->pre_act].type);
          src = static_cast<const float*>(ptrs[pw.inputs[0]]);
        }
        ConvParams dp = p;
        const void* dw_packed = packed;
        if (project_step) {
          dp = dn.conv;
          dp.act = dn.act;
          if (step->dw_act != kNoValue) dp.act.post = post_op_of(model_.nodes[step->dw_act].type);
          dw_packed = packed_ptr_[step->dw];
          project.channels = out_shape[3];
          project.packed = packed;
          project.act = fused_act;
        }
        const Shape& dx = plan.shapes[dn.inputs[0]];
        const Shape& dy = plan.shapes[dn.outputs[0]];
        K.dwconv2d_fused(step->pre != kNoValue ? &expand : nullptr, dp, dx[0], dx[1], dx[2], src, dy[1], dy[2],
                         dw_packed, project_step ? &project : nullptr, project_step ? residual : nullptr,
                         fused_out, par);
        return;
      }
      const float* src = inf(0);
      size_t N = x[0], H = x[1], W = x[2];
      if (step && step->transpose != kNoValue) {  // the planes the fused image transpose would have read
        const uint32_t planes = model_.nodes[step->transpose].inputs[0];
        const Shape& s = plan.shapes[planes];
        src = static_cast<const float*>(ptrs[planes]);
        N = s[0], H = s[2], W = s[3];
        p.input_nchw = true;
      }
      if (residual) {
        K.conv2d_residual(p, N, H, W, src, out_shape[1], out_shape[2], packed, residual, fused_out, par);
        return;
      }
      auto fn = nd.type == NodeType::kConv2d ? K.conv2d
                : nd.type == NodeType::kDepthwiseConv2d ? K.dwconv2d : K.deconv2d;
      fn(p, N, H, W, src, out_shape[1], out_shape[2], packed, fused_out, par);
      return;
    }
    case NodeType::kMaxPooling2d: case NodeType::kAvgPooling2d: {
      const Shape& x = in_shape(0);
      auto fn = nd.type == NodeType::kMaxPooling2d ? K.max_pool2d : K.avg_pool2d;
      fn(nd.pool, x[0], x[1], x[2], x[3], inf(0), out_shape[1], out_shape[2], outf, par);
      return;
    }
    case NodeType::kGlobalAvgPooling2d: {
      const Shape& x = in_shape(0);
      const size_t r = x.size();
      const size_t C = x[r - 1], HW = x[r - 3] * x[r - 2];
      size_t N = 1;
      for (size_t d = 0; d + 3 < r; ++d) N *= x[d];
      K.global_avg_pool(N, HW, C, inf(0), outf, nd.act, par);
      return;
    }
    case NodeType::kSoftmax: {
      const size_t cols = out_shape.back();
      K.softmax(numel(out_shape) / cols, cols, inf(0), outf, par);
      return;
    }
    case NodeType::kConvert: {
      const size_t n = numel(out_shape);
      const Value& xin = model_.values[nd.inputs[0]];
      wx::ET ea, eb;
      if (wx_et(xin.dtype, ea) && wx_et(out_val.dtype, eb)) {
        wx::convert(ea, eb, n, in_ptr(0), out, par);
      } else if (out_val.dtype == DType::kQint8) {
        K.quantize_qs8(n, inf(0), static_cast<int8_t*>(out), out_val.quant.scale, out_val.quant.zero_point);
      } else {
        const Value& x = model_.values[nd.inputs[0]];
        K.dequantize_qs8(n, static_cast<const int8_t*>(in_ptr(0)), outf, x.quant.scale, x.quant.zero_point);
      }
      return;
    }
    case NodeType::kCopy: case NodeType::kStaticReshape:
      std::memcpy(out, in_ptr(0), numel(out_shape) * esize);
      return;
    case NodeType::kStaticTranspose: {
      const Shape& x = in_shape(0);
      if (x.empty()) {
        std::memcpy(out, in_ptr(0), esize);
        return;
      }
      size_t perm[kMaxRank];
      for (size_t d = 0; d < x.size(); ++d) perm[d] = nd.ints_a[d];
      // The graph-boundary layout change of an image (NCHW <-> NHWC with a few channels) has its own loop.
      static const uint32_t kToNhwc[4] = {0, 2, 3, 1}, kToNchw[4] = {0, 3, 1, 2};
      if (x.size() == 4 && (std::equal(kToNhwc, kToNhwc + 4, nd.ints_a.begin()) ||
                            std::equal(kToNchw, kToNchw + 4, nd.ints_a.begin()))) {
        const bool to_nhwc = nd.ints_a[1] == 2;
        const size_t c = to_nhwc ? x[1] : x[3];
        const size_t pixels = x[1] * x[2] * x[3] / c;
        if (esize == 4 && K.image_layout_f32(x[0], c, pixels, !to_nhwc, static_cast<const float*>(in_ptr(0)),
                                             static_cast<float*>(out), par)) {
          return;
        }
        if (wx::transpose_few_channels(esize, x[0], c, pixels, !to_nhwc, in_ptr(0), out, par)) return;
      }
      transpose_bytes(esize, x.size(), x.data(), perm, in_ptr(0), out, par);
      return;
    }
    case NodeType::kStaticSlice: {
      const Shape& x = in_shape(0);
      if (x.empty()) {
        std::memcpy(out, in_ptr(0), esize);
        return;
      }
      size_t off[kMaxRank];
      for (size_t d = 0; d < x.size(); ++d) off[d] = nd.ints_a[d];
      slice_bytes(esize, x.size(), x.data(), off, out_shape.data(), in_ptr(0), out);
      return;
    }
    case NodeType::kStaticConstantPad: {
      const Shape& x = in_shape(0);
      if (x.empty()) {
        std::memcpy(out, in_ptr(0), esize);
        return;
      }
      size_t pre[kMaxRank], post[kMaxRank];
      for (size_t d = 0; d < x.size(); ++d) {
        pre[d] = nd.ints_a[d];
        post[d] = nd.ints_b[d];
      }
      uint8_t fill[8] = {};
      const float v = nd.alpha;
      switch (out_val.dtype) {
        case DType::kFp32: std::memcpy(fill, &v, 4); break;
        case DType::kQint8: case DType::kQuint8: {
          const double lo = out_val.dtype == DType::kQint8 ? -128 : 0, hi = out_val.dtype == DType::kQint8 ? 127 : 255;
          double q = std::nearbyint(double(v) / out_val.quant.scale) + out_val.quant.zero_point;
          q = std::isnan(q) ? 0 : std::min(hi, std::max(lo, q));
          if (out_val.dtype == DType::kQint8) fill[0] = static_cast<uint8_t>(static_cast<int8_t>(q));
          else fill[0] = static_cast<uint8_t>(q);
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
          const double q = std::isnan(v) ? 0 : std::min(2147483647.0, std::max(-2147483648.0, std::trunc(double(v))));
          const int32_t iv = static_cast<int32_t>(q);
          std::memcpy(fill, &iv, 4);
          break;
        }
        default: {
          wx::ET et;
          if (wx_et(out_val.dtype, et)) wx::fill_value(et, v, fill);
          break;
        }
      }
      pad_bytes(esize, x.size(), x.data(), pre, post, fill, in_ptr(0), out);
      return;
    }
    case NodeType::kStaticResizeBilinear2D: {
      wx::ET et;
      wx_et(out_val.dtype, et);
      wx::resize_bilinear_nhwc(et, nd.flags, in_shape(0), out_shape, in_ptr(0), out, par);
      return;
    }
    case NodeType::kConcatenate2: case NodeType::kConcatenate3: case NodeType::kConcatenate4:
    case NodeType::kConcatenate5: {
      const size_t n = nd.inputs.size();
      const void* ins[5];
      size_t inner[5];
      size_t outer = 1;
      for (size_t d = 0; d < nd.axis; ++d) outer *= out_shape[d];
      for (size_t k = 0; k < n; ++k) {
        const Shape& s = in_shape(k);
        size_t b = esize;
        for (size_t d = nd.axis; d < s.size(); ++d) b *= s[d];
        ins[k] = in_ptr(k);
        inner[k] = b;
      }
      concat_bytes(n, ins, inner, outer, out);
      return;
    }
    default:
      fail(StatusCode::kInternal, model_.node_label(i) + ": no executor for this node type");
  }
}

// A WXNormalize the kernel table's fused row kernel can take: the axes are the trailing dims (any order) and
// scale/bias are absent or flat vectors over exactly those dims.
bool Program::fused_normalize(size_t i, const Plan& plan) const {
  const Node& nd = model_.nodes[i];
  if (!kernels_->normalize || nd.ints_a.empty()) return false;
  const Shape& x = plan.shapes[nd.inputs[0]];
  const size_t r = x.size(), k = nd.ints_a.size();
  std::vector<bool> seen(r, false);
  for (uint32_t a : nd.ints_a) {
    if (a < r - k) return false;
    seen[a] = true;
  }
  size_t cols = 1;
  for (size_t d = r - k; d < r; ++d) cols *= x[d];
  if (cols == 0) return false;
  for (size_t p = 1; p <= 2; ++p) {
    if (nd.inputs[p] == kNoValue) continue;
    Shape s = plan.shapes[nd.inputs[p]];
    while (!s.empty() && s.front() == 1) s.erase(s.begin());
    if (s.size() > k || numel(s) != cols) return false;
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] != x[r - s.size() + d]) return false;
    }
  }
  return true;
}

void Program::exec_wx(size_t i, const Plan& plan, void* const* ptrs, Parallel& par) const {
  const Node& nd = model_.nodes[i];
  auto in_ptr = [&](size_t k) -> const void* {
    return (k < nd.inputs.size() && nd.inputs[k] != kNoValue) ? ptrs[nd.inputs[k]] : nullptr;
  };
  auto in_shape = [&](size_t k) -> const Shape& { return plan.shapes[nd.inputs[k]]; };
  auto et = [&](uint32_t v) {
    wx::ET t = wx::ET::kF32;
    wx_et(model_.values[v].dtype, t);
    return t;
  };
  const Shape& os = plan.shapes[nd.outputs[0]];
  void* out = ptrs[nd.outputs[0]];
  const wx::ET ot = et(nd.outputs[0]);
  const size_t esize = wx::et_size(ot);
  const wx::ET it0 = et(nd.inputs[0]);
  auto mask = [&](size_t rank) {
    std::vector<bool> m(rank, false);
    for (uint32_t a : nd.ints_a) m[a] = true;
    return m;
  };
  using T = NodeType;
  switch (nd.type) {
    case T::kWXUnary: {
      // fp32 ops the kernel table vectorizes go there (the WX kernel evaluates in double, one at a time).
      UnaryOp op;
      if (it0 == wx::ET::kF32 && ot == wx::ET::kF32 && wx_unary_fp32(nd.wx_op, op)) {
        UnaryParams p;
        p.alpha = static_cast<float>(nd.dalpha);
        p.beta = static_cast<float>(nd.dbeta);
        kernels_->unary(op, numel(os), static_cast<const float*>(in_ptr(0)), static_cast<float*>(out), p, par);
        return;
      }
    }
      wx::unary(nd.wx_op, nd.dalpha, nd.dbeta, it0, ot, numel(os), in_ptr(0), out, par);
      return;
    case T::kWXBinary:
      wx::binary(nd.wx_op, it0, ot, in_shape(0), in_shape(1), os, in_ptr(0), in_ptr(1), out, par);
      return;
    case T::kWXReduce:
      wx::reduce(nd.wx_op, it0, ot, in_shape(0), mask(in_shape(0).size()), in_ptr(0), out, par);
      return;
    case T::kWXGather:
      wx::gather(esize, in_shape(0), nd.axis, et(nd.inputs[1]), in_shape(1), in_ptr(0), in_ptr(1), out, par);
      return;
    case T::kWXGatherElements:
      wx::gather_elements(esize, in_shape(0), nd.axis, et(nd.inputs[1]), in_shape(1), in_ptr(0), in_ptr(1), out,
                          par);
      return;
    case T::kWXGatherND:
      wx::gather_nd(esize, in_shape(0), et(nd.inputs[1]), in_shape(1), in_ptr(0), in_ptr(1), out, par);
      return;
    case T::kWXScatterElements:
      wx::scatter_elements(esize, in_shape(0), nd.axis, et(nd.inputs[1]), in_shape(1), in_ptr(0), in_ptr(1),
                           in_ptr(2), out);
      return;
    case T::kWXScatterND:
      wx::scatter_nd(esize, in_shape(0), et(nd.inputs[1]), in_shape(1), in_ptr(0), in_ptr(1), in_ptr(2), out);
      return;
    case T::kWXWhere:
      wx::where(esize, in_shape(0), in_shape(1), in_shape(2), os, static_cast<const uint8_t*>(in_ptr(0)),
                in_ptr(1), in_ptr(2), out, par);
      return;
    case T::kWXExpand:
      wx::expand(esize, in_shape(0), os, in_ptr(0), out, par);
      return;
    case T::kWXTile:
      wx::tile(esize, in_shape(0), os, in_ptr(0), out, par);
      return;
    case T::kWXReverse:
      wx::reverse(esize, in_shape(0), mask(in_shape(0).size()), in_ptr(0), out, par);
      return;
    case T::kWXCumulativeSum:
      wx::cumulative_sum(ot, in_shape(0), nd.axis, nd.flag_a, nd.flag_b, in_ptr(0), out, par);
      return;
    case T::kWXTriangular:
      wx::triangular(esize, in_shape(0), nd.flag_a, nd.diagonal, in_ptr(0), out, par);
      return;
    case T::kWXPad: {
      uint8_t fill[8] = {};
      wx::fill_value(ot, nd.dalpha, fill);
      wx::pad(esize, in_shape(0), nd.ints_a, os, nd.wx_op, fill, in_ptr(0), out, par);
      return;
    }
    case T::kWXSlice:
      wx::strided_slice(esize, in_shape(0), nd.ints_a, nd.ints_b, os, in_ptr(0), out, par);
      return;
    case T::kWXNormalize: {
      static const Shape kNone;
      if (ot == wx::ET::kF32 && fused_normalize(i, plan)) {
        const Shape& x = in_shape(0);
        size_t cols = 1;
        for (size_t d = x.size() - nd.ints_a.size(); d < x.size(); ++d) cols *= x[d];
        kernels_->normalize(numel(x) / cols, cols, static_cast<const float*>(in_ptr(0)),
                            static_cast<const float*>(in_ptr(1)), static_cast<const float*>(in_ptr(2)), nd.alpha,
                            static_cast<float*>(out), par);
        return;
      }
      wx::normalize(ot, in_shape(0), mask(in_shape(0).size()), nd.alpha, in_ptr(1),
                    in_ptr(1) ? in_shape(1) : kNone, in_ptr(2), in_ptr(2) ? in_shape(2) : kNone, in_ptr(0), out,
                    par);
      return;
    }
    case T::kWXResample2d: {
      const size_t axes[2] = {nd.ints_a[0], nd.ints_a[1]};
      const float scales[2] = {nd.floats[0], nd.floats[1]};
      wx::resample2d(ot, nd.wx_op, in_shape(0), os, axes, scales, in_ptr(0), out, par);
      return;
    }
    case T::kWXPool2d: {
      const Shape& x = in_shape(0);
      wx::pool2d(nd.wx_op, ot, nd.pool, x[0], x[1], x[2], x[3], in_ptr(0), os[1], os[2], out, par);
      return;
    }
    case T::kWXQuantize: {
      static const Shape kNone;
      const bool has_zp = in_ptr(2) != nullptr;
      wx::quantize(nd.wx_op, it0, ot, in_shape(0), et(nd.inputs[1]), in_shape(1), in_ptr(1),
                   has_zp ? et(nd.inputs[2]) : wx::ET::kI32, has_zp ? in_shape(2) : kNone, in_ptr(2), in_ptr(0), out,
                   par);
      return;
    }
    default:
      fail(StatusCode::kInternal, model_.node_label(i) + ": no executor for this node type");
  }
}

}  // namespace webxnn
