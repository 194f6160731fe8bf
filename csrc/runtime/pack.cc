// Weight packing at load: every kPacksWeights node with constant filter and bias gets its packed weights (the
// kernel table's tile layout, bias interleaved) once, in one buffer shared by all of them; so does every
// kPacksTable node's table.
#include <algorithm>

#include "runtime/node_table.h"
#include "runtime/program.h"

namespace webxnn {

// A non-constant filter or bias is packed by the step itself, every run.
bool Program::needs_run_packing(size_t i) const {
  const Node& nd = model_.nodes[i];
  if (!node_def(nd.type).has(kPacksWeights)) return false;
  for (size_t k = 1; k < nd.inputs.size(); ++k) {
    if (nd.inputs[k] != kNoValue && !model_.values[nd.inputs[k]].is_constant) return true;
  }
  return false;
}

// One buffer (huge-page backed when large: fewer page faults at load and TLB misses at run time), one slice per
// node, the nodes packed in parallel on the pool, biggest first.
void Program::pack_weights() {
  const size_t nn = model_.nodes.size();
  packed_ptr_.assign(nn, nullptr);
  packed_size_.assign(nn, 0);
  std::vector<size_t> offset(nn, 0);
  auto args = [&](size_t i) {
    const Node& nd = model_.nodes[i];
    auto cdata = [&](size_t k) -> const void* {
      return (k < nd.inputs.size() && nd.inputs[k] != kNoValue) ? model_.values[nd.inputs[k]].data : nullptr;
    };
    static const Shape kNoFilter;
    const bool filter = nd.inputs.size() > 1 && nd.inputs[1] != kNoValue;
    return PackArgs{model_,   *kernels_, i, filter ? model_.values[nd.inputs[1]].dims : kNoFilter,
                    cdata(1), cdata(2)};
  };
  size_t total = 0;
  std::vector<size_t> order;
  for (size_t i = 0; i < nn; ++i) {
    const Node& nd = model_.nodes[i];
    const NodeDef& d = node_def(nd.type);
    if (nd.folded || !(d.has(kPacksWeights) || d.has(kPacksTable)) || needs_run_packing(i)) continue;
    packed_size_[i] = d.pack_size(args(i));
    if (packed_size_[i] == 0) continue;  // a kPacksTable node without a table (fp32)
    offset[i] = total;
    total += align_up(std::max<size_t>(packed_size_[i], 1), kArenaAlignment);
    order.push_back(i);
  }
  packed_all_ = AlignedBuffer(total, false, /*huge_pages=*/true);
  for (size_t i : order) packed_ptr_[i] = packed_all_.data() + offset[i];
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return packed_size_[a] > packed_size_[b]; });
  pool_->run(order.size(), [&](size_t t) {
    const size_t i = order[t];
    node_def(model_.nodes[i].type).pack(args(i), packed_all_.data() + offset[i]);
  });
}

}  // namespace webxnn
