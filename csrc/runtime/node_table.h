// What a node type is to the runtime: one row of function pointers and traits per XNodeUnion value. Each
// family file in nodes/ fills the rows of its node types (register_<family>, listed once in
// nodes/families.def); node_table() builds the table on first use. The loader, the shape pass, the support
// check, the packer, the planner and the executor iterate over nodes and call through it: nothing else
// dispatches on a node's type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"
#include "runtime/model.h"
#include "runtime/plan.h"

namespace webxnn {

class NodeDecoder;     // nodes/common.h
class ShapeInference;  // nodes/common.h
class SupportCheck;    // nodes/common.h

// Planning traits: how a node takes part in fusion and storage sharing (bits of NodeDef::traits).
enum NodeTrait : uint32_t {
  kPacksWeights = 1u << 0,      // inputs 1 (filter) and 2 (bias) are packed (at load when constant)
  kView = 1u << 1,              // the output is the input's bytes: it may share the input's storage
  kResidualAdd = 1u << 2,       // a sum a conv / FC making one operand may write in its epilogue
  kTakesResidual = 1u << 3,     // may add a residual to its output tiles (gemm_residual, conv2d_residual;
                                // int8: where NodeDef::q8_residual says)
  kTakesActivation = 1u << 4,   // may apply an activation's post_op to its output tiles
  kBlockConv = 1u << 5,  // when pointwise: a fused block's expand or project, the reader of an image
  // transpose's planes, a prefetcher of later weights
  kBlockDepthwise = 1u << 6,  // the depthwise middle of a fused block (dwconv2d_fused)
  kTranspose = 1u << 7,  // a StaticTranspose: NCHW -> NHWC a kBlockConv node may read through; any that a
  // kStridedMatmul node reads or writes through
  kPrefetched = 1u << 8,  // its packed weights may be fetched ahead by the kBlockConv steps before it
  // (additive) packs a table of its own at load (pack_size / pack with no filter or bias; size 0: none for this
  // node): the qint8 nodes' 256-entry lookup tables. Unlike kPacksWeights, it may still fold.
  kPacksTable = 1u << 9,
  // reads its operands and writes its output at any strides (batch_matmul's MatStrides): the transposes
  // around it run inside its step (strided_matrices.h)
  kStridedMatmul = 1u << 10,
};

// What one step's executor sees. Built per step on the stack: no allocation.
struct ExecArgs {
  const Model& m;
  const KernelTable& k;
  const Plan& plan;
  void* const* ptrs;  // per value
  const void* const* packed;  // per node: weights packed at load, or null (packed by the step itself)
  Parallel& par;
};

// The weights of one kPacksWeights node: filter (input 1) and bias (input 2, may be null); for a kPacksTable
// node, empty dims and null.
struct PackArgs {
  const Model& m;
  const KernelTable& k;
  size_t node;
  const Shape& filter_dims;
  const void* filter;
  const void* bias;
};

using DecodeFn = void (*)(const NodeDecoder& d, const void* table, Node& nd);
using ShapesFn = void (*)(ShapeInference& s);
using CheckFn = void (*)(const SupportCheck& c);
using ExecFn = void (*)(const ExecArgs& a, size_t node, const Step* step);

struct NodeDef {
  // Fills the node's inputs, outputs and parameters from its flatbuffer table (null: not a node this runtime
  // knows; the loader says so).
  DecodeFn decode = nullptr;
  // Checks parameters against the input shapes and sets the output shapes (null: unsupported).
  ShapesFn shapes = nullptr;
  // Throws Error(kUnsupported) for datatypes or features this runtime cannot run (null: no such node runs).
  CheckFn check = nullptr;
  // kPacksWeights, kPacksTable: the packed size, and the packing into a buffer of that size.
  size_t (*pack_size)(const PackArgs& a) = nullptr;
  void (*pack)(const PackArgs& a, void* dst) = nullptr;
  // Element-wise nodes: may the output take over the storage of an input no later step reads?
  bool (*in_place)(const Model& m, const Node& nd) = nullptr;
  // kTakesResidual nodes with int8 operands: whether the node's int8 kernel has a residual epilogue
  // (qgemm_residual, qconv2d_residual) to run a qint8 Add of its output in (null: none has).
  bool (*q8_residual)(const Model& m, const Node& nd) = nullptr;
  // GEMM-like nodes: multiply-adds of one run (the small-step rule); null: judged by the bytes it touches.
  double (*macs)(const Model& m, const Plan& plan, const Node& nd) = nullptr;
  // Runs the node (step: its plan step with the fusions it carries; null when folding constants).
  ExecFn exec = nullptr;
  uint32_t traits = 0;
  PostOp post_op = PostOp::kNone;  // an activation a kTakesActivation producer can apply for it
  uint8_t op = 0;  // the family's kernel op for this type (a UnaryOp, BinaryOp, ...)

  bool has(uint32_t trait) const { return (traits & trait) != 0; }
};

// Indexed by the raw XNodeUnion value (every uint8_t is a valid index; unknown values have empty rows).
using NodeTable = std::array<NodeDef, 256>;

const NodeTable& node_table();
inline const NodeDef& node_def(NodeType t) { return node_table()[static_cast<uint8_t>(t)]; }
inline const NodeDef& node_def(const Node& nd) { return node_def(nd.type); }

// The row of `type`, for a family's register function; a type claimed twice is a bug (aborts at first use).
NodeDef& claim(NodeTable& table, NodeType type);
// claim() with the four functions every node that runs has; the caller adds packing, planning and op fields.
NodeDef& define_node(NodeTable& table, NodeType type, DecodeFn decode, ShapesFn shapes, CheckFn check,
                     ExecFn exec);

}  // namespace webxnn
