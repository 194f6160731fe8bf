// A plan: the steps one run executes and where every value lives, for one tuple of input shapes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/model.h"
#include "runtime/run_mode.h"
#include "runtime/shapes.h"

namespace webxnn {

constexpr size_t kTensorSlack = 16;  // readable bytes after every arena tensor (and folded constant)

// A qdint8 value (PerTokenDynamicQuant) is its int8 data, then -- at the first 16-byte boundary after it -- one
// RowQuant (kernels.h: zero point, scale) per row, rows being the product of the dims before the last
// num_nonbatch_dims (at least the last dim is inside a row). Convert fp32 -> qdint8 writes both; the node that
// reads it (FullyConnected) finds the parameters through qd8_params. They share the value's one arena slot,
// so lifetimes, folding and copies need nothing more.
inline size_t qd8_params_offset(size_t elements) { return (elements + 15) / 16 * 16; }
inline size_t qd8_rows(const Value& v, const Shape& s) {
  const size_t inner = std::min<size_t>(s.size(), std::max<int32_t>(v.quant.num_nonbatch_dims, 1));
  size_t rows = 1;
  for (size_t d = 0; d + inner < s.size(); ++d) rows *= s[d];
  return rows;
}
inline RowQuant* qd8_params(void* data, const Shape& s) {
  return reinterpret_cast<RowQuant*>(static_cast<uint8_t*>(data) + qd8_params_offset(numel(s)));
}

// Bytes of value v at shape s (4-bit types count a byte per element; qdint8 adds its row parameters).
inline size_t value_bytes(const Value& v, const Shape& s) {
  if (v.dtype == DType::kQdint8) return qd8_params_offset(numel(s)) + qd8_rows(v, s) * sizeof(RowQuant);
  return numel(s) * storage_size(v.dtype);
}

// One unit of work of a plan: a node, or a Conv2d / FullyConnected with the Add that consumes it fused into
// its epilogue (fp32: out = clamp(conv(x) + bias + residual); int8: out = qadd(the conv's qint8 output,
// residual), bit for bit the two steps).
struct Step {
  uint32_t node = 0;  // the node run
  // A fused consumer whose output this step writes: an Add (residual: the conv / FC output plus `residual`)
  // or an activation (HardSwish / Sigmoid / Gelu, applied as the kernel's Activation::post).
  uint32_t into = kNoValue;
  uint32_t residual = kNoValue;  // fused residual: the value added (never overlaps the output)
  bool serial = false;  // too small to be worth waking the pool: run on the calling thread
  // A fused producer: the pointwise Conv2d whose output this DepthwiseConv2d step (or `dw`) reads; the kernel
  // computes those expanded rows as it needs them (KernelTable::dwconv2d_fused), and the tensor never
  // materializes.
  uint32_t pre = kNoValue;
  uint32_t pre_act =
      kNoValue;  // the HardSwish / Sigmoid / Gelu between `pre` and this step (MobileNetV3), if any
  // A fused depthwise producer: the DepthwiseConv2d whose output this pointwise Conv2d step (the block's
  // project) reads, computed row by row inside the step; its own expand, if fused, is `pre`.
  uint32_t dw = kNoValue;
  uint32_t dw_act = kNoValue;  // the HardSwish / Sigmoid / Gelu between `dw` and this step, if any
  // A fused layout change: the StaticTranspose (NCHW -> NHWC) making this Conv2d step's input; the conv reads
  // the transpose's input planes in place (ConvParams::input_nchw) and the transpose never runs.
  uint32_t transpose = kNoValue;
  // Fused layout changes of a BatchMatrixMultiply step: the StaticTransposes making its operands A and B, read
  // in place at strides (strided_matrices.h), and never run. (A transpose of its output is `into`.)
  uint32_t operand_transpose[2] = {kNoValue, kNoValue};
  // A later FullyConnected step whose packed weights (ahead_bytes of them from ahead_offset) this pointwise
  // Conv2d step pulls toward the cache while it computes (ConvParams::ahead; see plan_ahead).
  uint32_t ahead = kNoValue;
  size_t ahead_offset = 0, ahead_bytes = 0;
};

// Shapes and memory for one tuple of input shapes.
//  * Values that need memory of their own live in one arena, placed by lifetime (greedy by size).
//  * A StaticReshape / Copy output shares its input's storage (no step runs for it); an element-wise node
//    writes over an input that no later step reads (in place). Such values form one storage group.
//  * A group rooted at a graph input, constant or graph output is not in the arena: its values take that
//    root's pointer (`alias`), and nothing ever writes into it in place.
struct Plan {
  std::vector<Shape> shapes;  // per value
  std::vector<size_t> offsets;  // per value: arena offset, or kNotInArena
  std::vector<uint32_t> alias;  // per value: the external value whose pointer it takes, or kNoValue
  std::vector<Step> steps;  // in execution order
  std::vector<uint32_t> aliased_nodes;  // nodes that need no step (their output shares storage)
  size_t arena_bytes = 0;
  // Workers or the caller alone, from this plan's measured run times (run() is const; this is its only state).
  mutable RunMode run_mode;
  static constexpr size_t kNotInArena = ~size_t(0);
};

}  // namespace webxnn
