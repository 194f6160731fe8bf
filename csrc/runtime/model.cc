#include "runtime/model.h"

#include "runtime/status.h"

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

bool dtype_known(int16_t raw) { return (raw >= 1 && raw <= 14) || (raw >= 128 && raw <= 132); }

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kInvalid: return "invalid";
    case DType::kFp32: return "fp32";
    case DType::kFp16: return "fp16";
    case DType::kQint8: return "qint8";
    case DType::kQuint8: return "quint8";
    case DType::kQint32: return "qint32";
    case DType::kQcint8: return "qcint8";
    case DType::kQcint32: return "qcint32";
    case DType::kQcint4: return "qcint4";
    case DType::kQdint8: return "qdint8";
    case DType::kQbint4: return "qbint4";
    case DType::kQpint8: return "qpint8";
    case DType::kInt32: return "int32";
    case DType::kPfp32: return "pfp32";
    case DType::kBf16: return "bf16";
    case DType::kWxInt8: return "int8";
    case DType::kWxUint8: return "uint8";
    case DType::kWxUint32: return "uint32";
    case DType::kWxInt64: return "int64";
    case DType::kWxUint64: return "uint64";
  }
  return "unknown";
}

size_t element_size(DType t) {
  switch (t) {
    case DType::kFp32: case DType::kQint32: case DType::kQcint32: case DType::kInt32: case DType::kPfp32:
    case DType::kWxUint32:
      return 4;
    case DType::kFp16: case DType::kBf16:
      return 2;
    case DType::kQint8: case DType::kQuint8: case DType::kQcint8: case DType::kQdint8: case DType::kQpint8:
    case DType::kWxInt8: case DType::kWxUint8:
      return 1;
    case DType::kWxInt64: case DType::kWxUint64:
      return 8;
    default:
      return 0;
  }
}

const char* node_type_name(uint8_t raw) {
  static const char* const kNames[] = {
      "NONE", "XNNAdd", "XNNFullyConnected", "XNNSoftmax", "XNNSigmoid", "XNNStaticTranspose", "XNNClamp",
      "XNNConv2d", "XNNDiv", "XNNStaticResizeBilinear2D", "XNNStaticConstantPad", "XNNAvgPooling2d",
      "XNNMinimum", "XNNDepthwiseConv2d", "XNNMaxPooling2d", "XNNMultiply", "XNNSubtract", "XNNFloor",
      "XNNConvert", "XNNGlobalAvgPooling2d", "XNNStaticReshape", "XNNArgMaxPooling2d", "XNNSquareRoot",
      "XNNCeiling", "XNNHardswish", "XNNLeakyReLU", "XNNMaximum", "XNNNegate", "XNNSquare", "XNNELU",
      "XNNAbs", "XNNPReLU", "XNNConcatenate2", "XNNConcatenate3", "XNNConcatenate4", "XNNStaticSlice",
      "XNNScaledDotProductAttention", "XNNBatchMatrixMultiply", "XNNConcatenate5", "XNNConvTranspose2d",
      "XNNReciprocalSquareRoot", "XNNLog", "XNNGelu", "XNNTanh", "XNNExp", "XNNSin", "XNNCopy", "XNNCos",
  };
  if (raw < sizeof(kNames) / sizeof(kNames[0])) return kNames[raw];
  switch (raw) {
    case 128: return "WXUnary";
    case 129: return "WXBinary";
    case 130: return "WXReduce";
    case 131: return "WXGather";
    case 132: return "WXGatherElements";
    case 133: return "WXGatherND";
    case 134: return "WXScatterElements";
    case 135: return "WXScatterND";
    case 136: return "WXWhere";
    case 137: return "WXExpand";
    case 138: return "WXTile";
    case 139: return "WXReverse";
    case 140: return "WXCumulativeSum";
    case 141: return "WXTriangular";
    case 142: return "WXPad";
    case 143: return "WXSlice";
    case 144: return "WXNormalize";
    case 145: return "WXResample2d";
    case 146: return "WXPool2d";
    case 147: return "WXQuantize";
    default: return nullptr;
  }
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
