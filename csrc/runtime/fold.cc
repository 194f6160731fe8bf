// Constant folding at load: a node whose inputs are all constants runs once, and its outputs become constants
// (nodes that pack weights are left to the packer).
#include "runtime/node_table.h"
#include "runtime/program.h"

namespace webxnn {

namespace {
constexpr size_t kMaxFoldBytes = size_t(64) << 20;  // larger constant results are computed per run instead
}  // namespace

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
    if (nd.inputs.empty() || node_def(nd.type).has(kPacksWeights)) continue;
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

}  // namespace webxnn
