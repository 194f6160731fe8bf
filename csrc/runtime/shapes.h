// Per-node parameter checks and shape inference (each node type's rule lives in its family file, nodes/).
#pragma once

#include <vector>

#include "runtime/model.h"

namespace webxnn {

// Computes the output shapes of node `i` from shapes[] of its inputs and stores them in shapes[] of its
// outputs. Checks the node's parameters against the shapes (kernel sizes, strides, permutations, channel
// counts, ...). Throws Error(kFormat) naming the node on any inconsistency, Error(kUnsupported) for node
// types whose shapes this runtime cannot infer.
void infer_node_shapes(const Model& m, size_t i, std::vector<Shape>& shapes);

// Numpy-style broadcast of two shapes; false when they do not broadcast.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);

// Product of dims (callers have bounded every shape by kMaxTensorBytes).
size_t numel(const Shape& s);

}  // namespace webxnn
