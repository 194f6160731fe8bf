// The fusion decisions of one plan (plan_fusion.cc): which nodes run inside another node's step, so that the
// tensor between them never materializes. The storage planning (plan.cc) then works on the steps they leave.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "runtime/plan.h"

namespace webxnn {

struct Fusions {
  // Per node i, the step that runs at its position unless fused_into[i] is set: node i with the producers it
  // reads inside its step (pre, dw, transpose); or, when i is a fused consumer (into == i), its producer's
  // step writing i's output.
  std::vector<Step> at;
  std::vector<uint32_t> fused_into;  // per node: the node whose step runs it, or kNoValue
  std::vector<bool> elided;  // per value: read only inside a fused step, never stored
};

// A 1x1, stride-1, unpadded convolution of one group (a GEMM over pixels): a fused block's expand or project,
// a prefetcher of later weights (plan_ahead).
bool is_pointwise(const ConvParams& c);

}  // namespace webxnn
