// The runtime's own model of a verified blob. The loader decodes the flatbuffer into these structs once;
// planning and execution never touch flatbuffers again. Value references inside a Model are indices into
// Model::values (not the serialized id_out).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace fb_xnnpack {
enum class XNodeUnion : uint8_t;  // xnngraph_generated.h
}  // namespace fb_xnnpack

namespace webxnn {

constexpr uint32_t kNoValue = 0xFFFFFFFFu;  // XNN_INVALID_VALUE_ID: an absent optional input
constexpr size_t kMaxRank = 8;              // WX_MAX_RANK
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 40;
constexpr uint32_t kMaxExterns = 4096;

constexpr uint32_t kFlagExternalInput = 0x1;
constexpr uint32_t kFlagExternalOutput = 0x2;
// node flags (XNNPACK's)
constexpr uint32_t kFlagTransposeWeights = 0x1;  // FullyConnected filter [I, O]; BMM: B is [N, K]
constexpr uint32_t kFlagTensorflowSamePadding = 0x4;
constexpr uint32_t kFlagKeepDims = 0x40;
// WXGather, WXGatherElements, WXGatherND (webxnn); without flags out-of-range ids are clamped (WebNN's rule).
// Checked: ids read straight from a graph input must lie in 0..n-1, else the run is an input error naming the
// input, element, value and range (ExecuTorch's embedding refuses such ids). Checked | wrap: -n..n-1, the
// negatives counting from the end (ONNX). Wrap alone is a format error. n: the indexed dim's size (GatherND:
// dim j for position j of the indices' last dim). Ids computed inside the graph are never checked.
constexpr uint32_t kFlagCheckedIndices = 0x1;
constexpr uint32_t kFlagIndicesWrap = 0x2;

// XNNDatatype values (schema/xnngraph.fbs; model.cc checks every number against the generated enum).
enum class DType : int16_t {
  kInvalid = 0,
  kFp32 = 1,
  kFp16 = 2,
  kQint8 = 3,
  kQuint8 = 4,
  kQint32 = 5,
  kQcint8 = 6,
  kQcint32 = 7,
  kQcint4 = 8,
  kQdint8 = 9,
  kQbint4 = 10,
  kQpint8 = 11,
  kInt32 = 12,
  kPfp32 = 13,
  kBf16 = 14,
  kWxInt8 = 128,
  kWxUint8 = 129,
  kWxUint32 = 130,
  kWxInt64 = 131,
  kWxUint64 = 132,
};

bool dtype_known(int16_t raw);
const char* dtype_name(DType t);  // "fp32", "qint8", ...
// Bytes per element; 0 for the 4-bit types (see constant_nbytes).
size_t element_size(DType t);
// Bytes an element takes in a dense tensor at run time: element_size, or one for the 4-bit types (a byte each).
inline size_t storage_size(DType t) { return element_size(t) ? element_size(t) : 1; }

// A node's type is the schema's XNodeUnion value. Declared here without its enumerators so this header (which
// the bindings include) stays free of the generated code; the runtime's own files include
// xnngraph_generated.h for the names.
using NodeType = fb_xnnpack::XNodeUnion;

// "XNNConv2d", ...; nullptr for a value that is not in the schema.
const char* node_type_name(uint8_t raw);

struct QuantParams {
  enum class Kind : uint8_t { kNone, kPerTensor, kPerChannel, kPerChannelGroup, kPerToken };
  Kind kind = Kind::kNone;
  float scale = 0.f;  // per tensor
  int32_t zero_point = 0;
  std::vector<float> scales;  // per channel (group)
  int32_t channel_dim = 0;
  int32_t group_size = 0;
  int32_t num_nonbatch_dims = 0;
};

using Shape = std::vector<size_t>;

struct Value {
  uint32_t id = 0;  // the serialized id_out
  DType dtype = DType::kInvalid;
  Shape dims;
  bool is_constant = false;
  const uint8_t* data = nullptr;  // constants: in the blob (or an aligned copy), never null when is_constant
  size_t data_size = 0;
  uint32_t external_id = kNoValue;
  uint32_t flags = 0;
  QuantParams quant;
};

struct Node {
  NodeType type{};  // NONE
  std::vector<uint32_t> inputs;  // value indices; kNoValue for an absent optional input (bias)
  std::vector<uint32_t> outputs;  // value indices
  uint32_t flags = 0;
  bool has_output_min_max = false;
  Activation act;  // from output_min_max
  ConvParams conv;  // Conv2d, DepthwiseConv2d, ConvTranspose2d
  PoolParams pool;  // pooling
  std::vector<uint32_t> ints_a;  // perm / new_shape / offsets / pre_paddings / axes
  std::vector<uint32_t> ints_b;  // sizes / post_paddings
  uint32_t axis = 0;  // concat
  float alpha = 0.f, beta = 0.f;  // LeakyReLU slope, ELU alpha, WX params; pad: alpha = padding value
  uint32_t new_height = 0, new_width = 0;
  uint16_t wx_op = 0;  // WX*Op enums; pad/resample mode; pool op; quantize op
  bool keep_dims = false;
  bool flag_a = false, flag_b = false;  // cumulative sum exclusive/reversed; triangular upper
  int32_t diagonal = 0;  // triangular
  double dalpha = 0.0, dbeta = 0.0;  // WXUnary alpha/beta, WXPad value (full precision)
  std::vector<float> floats;  // resample scales
  bool folded = false;  // evaluated at load (all inputs constant); skipped by run()
};

// A dynamic input dimension from the webxnn metadata.
struct DynDim {
  uint32_t input = 0;  // input index in extern order
  uint32_t axis = 0;
  std::string name;
  uint32_t max_size = 0;
};

// A decoded, structurally verified graph (shapes and parameters are checked by the planner).
struct Model {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<uint32_t> inputs;  // value indices, in external-id order
  std::vector<uint32_t> outputs;  // value indices, in external-id order
  std::vector<std::string> input_names, output_names;
  std::vector<std::string> node_sources;  // webxnn metadata, may be empty
  uint32_t num_externs = 0;
  std::string identifier;  // "XN00" / "XN01"
  std::string producer;
  bool has_header = true;
  bool has_wx_metadata = false;  // webxnn metadata present: declared input dims are exact except dyn_dims
  std::vector<DynDim> dyn_dims;
  // Storage that constant pointers may point into (aligned copies), kept alive with the model.
  std::vector<std::shared_ptr<void>> keepalive;

  // "node 3 (XNNConv2d)" plus the webnn source when known.
  std::string node_label(size_t node) const;
  // "value 7" (the serialized id).
  std::string value_label(uint32_t value_index) const;
};

std::string shape_str(const Shape& s);

}  // namespace webxnn
