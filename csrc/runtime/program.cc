// Loading a Program: decode and verify the blob, infer and check shapes, check support, fold constants,
// pack weights, plan for the declared input shapes; and plans for other input shapes later.
#include "runtime/program.h"

#include <algorithm>

#include "runtime/loader.h"
#include "runtime/node_table.h"
#include "runtime/nodes/common.h"
#include "runtime/shapes.h"
#include "runtime/shared_pool.h"
#include "runtime/status.h"

namespace webxnn {
namespace {

constexpr size_t kPlanCacheSize = 8;  // plans for non-declared input shapes

bool public_dtype_of(DType t, PublicDType& out) {
  switch (t) {
    case DType::kFp32: out = PublicDType::kFloat32; return true;
    case DType::kFp16: out = PublicDType::kFloat16; return true;
    case DType::kQint8:
    case DType::kWxInt8: out = PublicDType::kInt8; return true;
    case DType::kQuint8:
    case DType::kWxUint8: out = PublicDType::kUint8; return true;
    case DType::kInt32:
    case DType::kQint32: out = PublicDType::kInt32; return true;
    case DType::kWxUint32: out = PublicDType::kUint32; return true;
    case DType::kWxInt64: out = PublicDType::kInt64; return true;
    case DType::kWxUint64: out = PublicDType::kUint64; return true;
    default: return false;
  }
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
    case PublicDType::kFloat32:
    case PublicDType::kInt32:
    case PublicDType::kUint32: return 4;
    case PublicDType::kFloat16: return 2;
    case PublicDType::kInt8:
    case PublicDType::kUint8: return 1;
    case PublicDType::kInt64:
    case PublicDType::kUint64: return 8;
  }
  return 0;
}

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
  if (is_pte(blob_->data(), blob_->size())) {  // an ExecuTorch program: its XnnpackBackend payload
    PtePayload pte = open_pte(blob_->data(), blob_->size());
    model_ = decode_blob(pte.data, pte.size, &pte.named);
    for (auto& k : pte.keepalive) model_.keepalive.push_back(std::move(k));
  } else {
    model_ = decode_blob(blob_->data(), blob_->size());
  }
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
      info.is_dynamic.assign(v.dims.size(),
                             !model_.has_wx_metadata && pass == 0);  // ExecuTorch: upper bounds
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
  for (size_t i = 0; i < model_.nodes.size(); ++i) {
    const Node& nd = model_.nodes[i];
    const bool gather = nd.type == NodeType::WXGather || nd.type == NodeType::WXGatherElements ||
                        nd.type == NodeType::WXGatherND;
    if (!gather || !(nd.flags & kFlagCheckedIndices)) continue;
    // The ids' graph input, through views (a reshape keeps each id's flat index) of the same dtype.
    uint32_t v = nd.inputs[1];
    for (int64_t p = producer_[v]; p >= 0; p = producer_[v]) {
      const Node& from = model_.nodes[static_cast<size_t>(p)];
      if (!node_def(from.type).has(kView) || model_.values[from.inputs[0]].dtype != model_.values[v].dtype)
        break;
      v = from.inputs[0];
    }
    for (size_t k = 0; k < model_.inputs.size(); ++k)
      if (model_.inputs[k] == v) checked_gathers_.emplace_back(i, k);
  }

  shared_pool_ = opts.shared_pool;
  if (opts.shared_pool)
    pool_ = webxnn::shared_pool();
  else
    pool_ = std::make_shared<ThreadPool>(opts.threads, ThreadPool::resolve_spin_us(opts.spin_us));
  pack_weights();
  base_plan_ = make_plan(std::move(shapes));
}

void Program::check_supported(size_t i) const {
  const NodeDef& d = node_def(model_.nodes[i].type);
  if (!d.check) unsupported(model_.node_label(i) + ": this node type is not supported by the runtime yet");
  d.check(SupportCheck(model_, i));
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
    const std::string desc = "input '" + inputs_[k].name + "': expected shape " +
                             shape_str(inputs_[k].shape) + ", got " + shape_str(s);
    if (s.size() > kMaxRank) input_error(desc + " (rank above " + str(kMaxRank) + ")");
    uint64_t n = storage_size(v.dtype);
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
    const std::string desc =
        "input '" + info.name + "': expected shape " + shape_str(want) + ", got " + shape_str(s);
    if (s.size() != want.size()) {
      input_error(desc + " (rank " + str(want.size()) + " expected, got " + str(s.size()) + ")");
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] == want[d]) continue;
      if (!info.is_dynamic[d]) {
        input_error(desc + ": axis " + str(d) + " is fixed at " + str(want[d]) + " but got " + str(s[d]));
      }
      if (s[d] > want[d] || (model_.has_wx_metadata && s[d] < 1)) {
        const std::string nm = info.dynamic[d].empty() ? "" : " ('" + info.dynamic[d] + "')";
        input_error(desc + ": axis " + str(d) + nm + " may be " + (model_.has_wx_metadata ? "1" : "0") +
                    ".." + str(want[d]) + " but got " + str(s[d]));
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

}  // namespace webxnn
