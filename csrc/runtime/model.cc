#include "runtime/model.h"

#include <cstring>

#include "runtime/status.h"
#include "xnngraph_generated.h"

namespace webxnn {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kFormat: return "format error";
    case StatusCode::kInput: return "input error";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kIO: return "i/o error";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kInternal: return "internal error";
  }
  return "error";
}

namespace {

namespace fb = fb_xnnpack;

// DType mirrors XNNDatatype number for number (kernels and planners switch over it without the generated
// header); a schema change that moves one fails here.
#define WX_SAME_DTYPE(ours, schema) \
  static_assert(static_cast<int16_t>(DType::ours) == static_cast<int16_t>(fb::XNNDatatype::schema), #ours)
WX_SAME_DTYPE(kInvalid, xnn_datatype_invalid);
WX_SAME_DTYPE(kFp32, xnn_datatype_fp32);
WX_SAME_DTYPE(kFp16, xnn_datatype_fp16);
WX_SAME_DTYPE(kQint8, xnn_datatype_qint8);
WX_SAME_DTYPE(kQuint8, xnn_datatype_quint8);
WX_SAME_DTYPE(kQint32, xnn_datatype_qint32);
WX_SAME_DTYPE(kQcint8, xnn_datatype_qcint8);
WX_SAME_DTYPE(kQcint32, xnn_datatype_qcint32);
WX_SAME_DTYPE(kQcint4, xnn_datatype_qcint4);
WX_SAME_DTYPE(kQdint8, xnn_datatype_qdint8);
WX_SAME_DTYPE(kQbint4, xnn_datatype_qbint4);
WX_SAME_DTYPE(kQpint8, xnn_datatype_qpint8);
WX_SAME_DTYPE(kInt32, xnn_datatype_int32);
WX_SAME_DTYPE(kPfp32, xnn_datatype_pfp32);
WX_SAME_DTYPE(kBf16, xnn_datatype_bf16);
WX_SAME_DTYPE(kWxInt8, wx_datatype_int8);
WX_SAME_DTYPE(kWxUint8, wx_datatype_uint8);
WX_SAME_DTYPE(kWxUint32, wx_datatype_uint32);
WX_SAME_DTYPE(kWxInt64, wx_datatype_int64);
WX_SAME_DTYPE(kWxUint64, wx_datatype_uint64);
static_assert(static_cast<int16_t>(fb::XNNDatatype::MAX) == static_cast<int16_t>(DType::kWxUint64),
              "a datatype was added to the schema: add it to DType (model.h) and element_size");
#undef WX_SAME_DTYPE

// The schema's name of a datatype ("xnn_datatype_fp32"), "" when it has none.
const char* schema_dtype_name(int16_t raw) {
  return fb::EnumNameXNNDatatype(static_cast<fb::XNNDatatype>(raw));
}

}  // namespace

bool dtype_known(int16_t raw) { return raw != 0 && *schema_dtype_name(raw) != '\0'; }

// The schema's name without its prefix: "fp32", "qint8", "int8" (wx_datatype_int8), ...
const char* dtype_name(DType t) {
  const char* s = schema_dtype_name(static_cast<int16_t>(t));
  if (!*s) return "unknown";
  for (const char* prefix : {"xnn_datatype_", "wx_datatype_"}) {
    const size_t n = std::strlen(prefix);
    if (std::strncmp(s, prefix, n) == 0) return s + n;
  }
  return s;
}

size_t element_size(DType t) {
  switch (t) {
    case DType::kFp32:
    case DType::kQint32:
    case DType::kQcint32:
    case DType::kInt32:
    case DType::kPfp32:
    case DType::kWxUint32: return 4;
    case DType::kFp16:
    case DType::kBf16: return 2;
    case DType::kQint8:
    case DType::kQuint8:
    case DType::kQcint8:
    case DType::kQdint8:
    case DType::kQpint8:
    case DType::kWxInt8:
    case DType::kWxUint8: return 1;
    case DType::kWxInt64:
    case DType::kWxUint64: return 8;
    default: return 0;
  }
}

const char* node_type_name(uint8_t raw) {
  const char* s = fb::EnumNameXNodeUnion(static_cast<fb::XNodeUnion>(raw));
  return *s ? s : nullptr;
}

std::string Model::node_label(size_t node) const {
  std::string s = "node " + std::to_string(node);
  if (node < nodes.size()) {
    const char* n = node_type_name(static_cast<uint8_t>(nodes[node].type));
    s += std::string(" (") + (n ? n : "?") + ")";
    if (node < node_sources.size() && !node_sources[node].empty()) s += " [from " + node_sources[node] + "]";
  }
  return s;
}

std::string Model::value_label(uint32_t value_index) const {
  if (value_index < values.size()) return "value " + std::to_string(values[value_index].id);
  return "value #" + std::to_string(value_index);
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

}  // namespace webxnn
