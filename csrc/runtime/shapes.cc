#include "runtime/shapes.h"

#include <algorithm>

#include "runtime/nodes/common.h"

namespace webxnn {

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
    if (da == db || db == 1)
      out[k] = da;
    else if (da == 1)
      out[k] = db;
    else
      return false;
  }
  return true;
}

void infer_node_shapes(const Model& m, size_t i, std::vector<Shape>& shapes) {
  const NodeDef& d = node_def(m.nodes[i].type);
  if (!d.shapes) unsupported(m.node_label(i) + ": this node type is not supported by this runtime");
  ShapeInference s(m, i, shapes);
  d.shapes(s);
}

}  // namespace webxnn
