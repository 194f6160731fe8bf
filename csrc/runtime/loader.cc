#include "runtime/loader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "runtime/bytes.h"
#include "runtime/memory.h"
#include "runtime/node_table.h"
#include "runtime/nodes/common.h"
#include "runtime/status.h"
#include "xnngraph_generated.h"

namespace webxnn {
namespace {

constexpr size_t kHeaderSize = 30;

std::string printable4(const uint8_t* p) {
  std::string s;
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    const uint8_t c = p[i];
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      s += static_cast<char>(c);
    } else {
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 15];
    }
  }
  return s;
}

struct Segments {
  const uint8_t* fb = nullptr;
  size_t fb_offset = 0;
  size_t fb_size = 0;
  const uint8_t* consts = nullptr;
  uint64_t const_offset = 0;
  uint64_t const_size = 0;
  bool has_header = false;
};

Segments parse_header(const uint8_t* data, size_t size) {
  Segments s;
  if (size < 8) {
    format_error("blob is " + str(size) +
                 " bytes, too short for an XNNGraph payload (at least 8 bytes needed)");
  }
  if (std::memcmp(data + 4, "XH00", 4) != 0) {
    // No XNNHeader: the whole payload is a bare flatbuffer with constants in constant_buffer.
    s.fb = data;
    s.fb_size = size;
    return s;
  }
  s.has_header = true;
  if (size < kHeaderSize) {
    format_error("header: truncated: the XH00 header needs " + str(kHeaderSize) + " bytes but the blob has " +
                 str(size));
  }
  const uint16_t header_len = rd16(data + 8);
  const uint32_t fb_off = rd32(data + 10);
  const uint32_t fb_size = rd32(data + 14);
  const uint32_t c_off = rd32(data + 18);
  const uint64_t c_size = rd64(data + 22);
  if (header_len < kHeaderSize) {
    format_error("header: header length at byte 8 is " + str(header_len) + ", expected at least 30");
  }
  if (fb_off < header_len) {
    format_error("header: flatbuffer_offset at byte 10 is " + str(fb_off) + ", which overlaps the " +
                 str(header_len) + "-byte header");
  }
  if (fb_size < 8) {
    format_error("header: flatbuffer_size at byte 14 is " + str(fb_size) + ", too small for a flatbuffer");
  }
  if (uint64_t(fb_off) + fb_size > size) {
    format_error("header: the flatbuffer (flatbuffer_offset " + str(fb_off) +
                 " at byte 10, flatbuffer_size " + str(fb_size) + " at byte 14) ends at byte " +
                 str(uint64_t(fb_off) + fb_size) + ", past the end of the " + str(size) + "-byte blob");
  }
  if (uint64_t(c_off) < uint64_t(fb_off) + fb_size) {
    format_error("header: constant_data_offset at byte 18 is " + str(c_off) +
                 ", which overlaps the flatbuffer ending at byte " + str(uint64_t(fb_off) + fb_size));
  }
  if (c_off > size || c_size > uint64_t(size) - c_off) {
    format_error("header: the constant segment (constant_data_offset " + str(c_off) +
                 " at byte 18, constant_data_size " + str(c_size) + " at byte 22) ends past the end of the " +
                 str(size) + "-byte blob");
  }
  s.fb = data + fb_off;
  s.fb_offset = fb_off;
  s.fb_size = fb_size;
  s.consts = data + c_off;
  s.const_offset = c_off;
  s.const_size = c_size;
  return s;
}

// Bytes of a tensor of `dims`, or throws when the product overflows or exceeds kMaxTensorBytes.
uint64_t tensor_bytes(DType t, const Shape& dims, const std::string& what) {
  const bool four_bit = (t == DType::kQcint4 || t == DType::kQbint4);
  const uint64_t esize = four_bit ? 1 : element_size(t);
  uint64_t n = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    uint64_t d = dims[i];
    if (four_bit && i + 1 == dims.size()) d = (d + 1) / 2;
    if (d != 0 && n > kMaxTensorBytes / d) {
      format_error(what + ": dims " + shape_str(dims) + " hold more than 2^40 bytes");
    }
    n *= d;
  }
  if (n != 0 && esize > kMaxTensorBytes / n) {
    format_error(what + ": dims " + shape_str(dims) + " hold more than 2^40 bytes");
  }
  n *= esize;
  if (n > kMaxTensorBytes) format_error(what + ": dims " + shape_str(dims) + " hold more than 2^40 bytes");
  return n;
}

bool finite_positive(float x) { return std::isfinite(x) && x > 0.f; }

// Scales kept in constant data (`scale_buffer_idx`, what ExecuTorch writes today): `n` of them as fp32 or bf16
// (told apart by the entry's size, 4n or 2n bytes). `load(idx, &size)` returns the entry's bytes.
template <typename Load>
std::vector<float> constant_scales(Load&& load, uint32_t idx, size_t n, const std::string& what) {
  size_t size = 0;
  const uint8_t* p = load(idx, &size);
  std::vector<float> out(n);
  if (size == 4 * n) {
    if (n) std::memcpy(out.data(), p, 4 * n);
  } else if (size == 2 * n) {
    for (size_t i = 0; i < n; ++i) {
      const uint32_t bits = uint32_t(rd16(p + 2 * i)) << 16;
      std::memcpy(&out[i], &bits, 4);
    }
  } else {
    format_error(what + ": scale_buffer_idx " + str(idx) + " holds " + str(size) + " bytes, but " + str(n) +
                 " scales need " + str(4 * n) + " (fp32) or " + str(2 * n) + " (bf16)");
  }
  return out;
}

template <typename Load>
QuantParams decode_quant(const fb::XNNQuantizedTensorValue* q, const fb::XNNTensorValue* tv, Load&& load,
                         const std::string& what) {
  QuantParams p;
  const auto type = q->quant_params_type();
  if (type == fb::XNNQuantParams::NONE) return p;
  if (!q->quant_params()) format_error(what + ": quant_params table is missing");
  switch (type) {
    case fb::XNNQuantParams::PerTensorQuant: {
      const auto* t = q->quant_params_as_PerTensorQuant();
      p.kind = QuantParams::Kind::kPerTensor;
      p.scale = t->scale();
      p.zero_point = t->zero_point();
      if (!finite_positive(p.scale))
        format_error(what + ": quantization scale " + std::to_string(p.scale) +
                     " is not a finite positive number");
      break;
    }
    case fb::XNNQuantParams::PerChannelQuant: {
      const auto* t = q->quant_params_as_PerChannelQuant();
      p.kind = QuantParams::Kind::kPerChannel;
      p.channel_dim = t->channel_dim();
      if (t->scale_buffer_idx() != 0) {
        // one scale per channel of channel_dim (a bad channel_dim is reported by check_quant)
        const auto* dims = tv->dims();
        const size_t cd = static_cast<size_t>(p.channel_dim);
        const size_t n = (dims && p.channel_dim >= 0 && cd < dims->size()) ? dims->Get(cd) : 0;
        p.scales = constant_scales(load, t->scale_buffer_idx(), n, what);
      } else {
        if (!t->scale()) format_error(what + ": per-channel quantization has no scale vector");
        p.scales.assign(t->scale()->begin(), t->scale()->end());
      }
      for (size_t i = 0; i < p.scales.size(); ++i) {
        if (!finite_positive(p.scales[i])) {
          format_error(what + ": per-channel scale[" + str(i) + "] = " + std::to_string(p.scales[i]) +
                       " is not a finite positive number");
        }
      }
      break;
    }
    case fb::XNNQuantParams::PerChannelGroupQuant: {
      const auto* t = q->quant_params_as_PerChannelGroupQuant();
      p.kind = QuantParams::Kind::kPerChannelGroup;
      p.channel_dim = t->channel_dim();
      p.group_size = t->group_size();
      if (t->scale_buffer_idx() != 0) {
        p.scales = constant_scales(load, t->scale_buffer_idx(), t->num_scales(), what);
      } else if (t->scale()) {
        p.scales.assign(t->scale()->begin(), t->scale()->end());
      }
      break;
    }
    case fb::XNNQuantParams::PerTokenDynamicQuant: {
      p.kind = QuantParams::Kind::kPerToken;
      p.num_nonbatch_dims = q->quant_params_as_PerTokenDynamicQuant()->num_nonbatch_dims();
      break;
    }
    default: format_error(what + ": unknown quantization params type " + str(static_cast<unsigned>(type)));
  }
  return p;
}

// Checks that a value's datatype and quantization parameters agree.
void check_quant(const Value& v, const std::string& what) {
  using K = QuantParams::Kind;
  const K k = v.quant.kind;
  auto need = [&](K want, const char* name) {
    if (k != want)
      format_error(what + ": datatype " + dtype_name(v.dtype) + " needs " + name + " parameters");
  };
  switch (v.dtype) {
    case DType::kQint8:
    case DType::kQuint8:
    case DType::kQint32: need(K::kPerTensor, "PerTensorQuant"); break;
    case DType::kQcint8:
    case DType::kQcint32:
    case DType::kQcint4: need(K::kPerChannel, "PerChannelQuant"); break;
    case DType::kQdint8: need(K::kPerToken, "PerTokenDynamicQuant"); break;
    case DType::kQbint4: need(K::kPerChannelGroup, "PerChannelGroupQuant"); break;
    default: break;
  }
  if (k == K::kPerChannel) {
    if (v.quant.channel_dim < 0 || size_t(v.quant.channel_dim) >= v.dims.size()) {
      format_error(what + ": channel_dim " + std::to_string(v.quant.channel_dim) +
                   " is out of range for rank " + str(v.dims.size()));
    }
    if (v.quant.scales.size() != v.dims[size_t(v.quant.channel_dim)]) {
      format_error(what + ": " + str(v.quant.scales.size()) + " per-channel scales but dim " +
                   std::to_string(v.quant.channel_dim) + " has " + str(v.dims[size_t(v.quant.channel_dim)]) +
                   " channels");
    }
  }
}

class Decoder {
 public:
  Decoder(const uint8_t* data, size_t size, const NamedData* named)
      : data_(data), size_(size), named_(named) {}

  Model run() {
    seg_ = parse_header(data_, size_);
    model_.has_header = seg_.has_header;
    const std::string fb_where = "flatbuffer at byte " + str(seg_.fb_offset);
    const uint8_t* ident = seg_.fb + 4;
    if (std::memcmp(ident, "XN00", 4) != 0 && std::memcmp(ident, "XN01", 4) != 0) {
      format_error(fb_where + ": file identifier is '" + printable4(ident) +
                   "', expected 'XN00' or 'XN01' (not an XNNGraph payload)");
    }
    model_.identifier.assign(reinterpret_cast<const char*>(ident), 4);
    if (seg_.fb_size >= std::numeric_limits<int32_t>::max()) {
      format_error(fb_where + ": flatbuffer of " + str(seg_.fb_size) + " bytes is larger than 2 GiB");
    }
    const uint8_t* fbp = aligned_flatbuffer(seg_.fb, seg_.fb_size, 8, &model_.keepalive);
    if (!verify_flatbuffer<fb::XNNGraph>(fbp, seg_.fb_size, nullptr)) {
      format_error(fb_where + " (" + str(seg_.fb_size) +
                   " bytes) failed flatbuffers verification: an offset, size or alignment is out of bounds");
    }
    graph_ = flatbuffers::GetRoot<fb::XNNGraph>(fbp);
    decode_values();
    decode_externs();
    decode_metadata();
    decode_nodes();
    check_dataflow();
    return std::move(model_);
  }

 private:
  std::string vwhat(size_t i, uint32_t id, bool id_known) const {
    return id_known ? "value " + str(id) : "xvalues[" + str(i) + "]";
  }

  void decode_values() {
    const auto* xv = graph_->xvalues();
    const size_t n = xv ? xv->size() : 0;
    model_.values.resize(n);
    id_to_index_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const fb::XValue* x = xv->Get(static_cast<flatbuffers::uoffset_t>(i));
      const fb::XNNTensorValue* tv = nullptr;
      const fb::XNNQuantizedTensorValue* qv = nullptr;
      switch (x->xvalue_union_type()) {
        case fb::XValueUnion::XNNTensorValue: tv = x->xvalue_union_as_XNNTensorValue(); break;
        case fb::XValueUnion::XNNQuantizedTensorValue:
          qv = x->xvalue_union_as_XNNQuantizedTensorValue();
          if (qv) tv = qv->tensor_value();
          break;
        default:
          format_error(vwhat(i, 0, false) + ": unknown XValue type " +
                       str(static_cast<unsigned>(x->xvalue_union_type())));
      }
      if (!tv) format_error(vwhat(i, 0, false) + ": tensor value table is missing");
      Value& v = model_.values[i];
      v.id = tv->id_out();
      const std::string what = vwhat(i, v.id, true);
      if (v.id == kNoValue) format_error(what + " (xvalues[" + str(i) + "]): id_out 0xFFFFFFFF is reserved");
      if (!id_to_index_.emplace(v.id, static_cast<uint32_t>(i)).second) {
        format_error(what + ": id_out " + str(v.id) + " is used by xvalues[" + str(id_to_index_[v.id]) +
                     "] and xvalues[" + str(i) + "]");
      }
      const int16_t raw = static_cast<int16_t>(tv->datatype());
      if (!dtype_known(raw)) format_error(what + ": unknown datatype " + std::to_string(raw));
      v.dtype = static_cast<DType>(raw);
      if (static_cast<int16_t>(tv->dq_datatype()) != 0) {
        unsupported(what + ": the legacy dq_datatype field is not supported");
      }
      if (tv->dims()) {
        if (tv->dims()->size() > kMaxRank) {
          format_error(what + ": rank " + str(tv->dims()->size()) + " exceeds the maximum of " +
                       str(kMaxRank));
        }
        v.dims.assign(tv->dims()->begin(), tv->dims()->end());
      }
      const uint64_t nbytes = tensor_bytes(v.dtype, v.dims, what);
      v.flags = tv->flags();
      if (v.flags & ~(kFlagExternalInput | kFlagExternalOutput)) {
        format_error(what + ": flags 0x" + hex(v.flags) +
                     " has bits other than external input (0x1) and external output (0x2)");
      }
      v.external_id = tv->external_id();
      if (qv) {
        auto load = [&](uint32_t idx, size_t* size) {
          const std::string swhat = what + " scale_buffer_idx " + str(idx);
          return constant_entry(idx, size, swhat);
        };
        v.quant = decode_quant(qv, tv, load, what);
      }
      check_quant(v, what);
      const uint32_t cidx = tv->constant_buffer_idx();
      if (cidx != 0) {
        if (v.flags)
          format_error(what + ": a constant (constant_buffer_idx " + str(cidx) + ") cannot be external");
        // Its row parameters are computed at run time by Convert (plan.h: qd8_params): no stored form.
        if (v.dtype == DType::kQdint8) unsupported(what + ": a qdint8 value cannot be a constant");
        resolve_constant(v, cidx, nbytes, what);
      }
    }
  }

  static std::string hex(uint32_t x) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%x", x);
    return buf;
  }

  void resolve_constant(Value& v, uint32_t cidx, uint64_t nbytes, const std::string& what) {
    size_t size = 0;
    const uint8_t* ptr = constant_entry(cidx, &size, what);
    if (size != nbytes) {
      format_error(what + ": constant data has " + str(size) + " bytes but " + dtype_name(v.dtype) + " " +
                   shape_str(v.dims) + " needs " + str(nbytes));
    }
    // Kernels read constants as typed arrays: copy the rare misaligned one.
    const size_t align = std::max<size_t>(1, element_size(v.dtype));
    if (reinterpret_cast<uintptr_t>(ptr) % align != 0) {
      auto copy = std::make_shared<AlignedBuffer>(size);
      if (size) std::memcpy(copy->data(), ptr, size);
      ptr = copy->data();
      model_.keepalive.push_back(copy);
    }
    v.is_constant = true;
    v.data = ptr;
    v.data_size = size;
  }

  // The bytes of constant entry `cidx` (constant_data with an XH00 header, else constant_buffer).
  const uint8_t* constant_entry(uint32_t cidx, size_t* out_size, const std::string& what) {
    const uint8_t* ptr = nullptr;
    uint64_t size = 0;
    if (seg_.has_header) {
      const auto* cd = graph_->constant_data();
      const size_t n = cd ? cd->size() : 0;
      if (cidx >= n) {
        format_error(what + ": constant_buffer_idx " + str(cidx) + " is out of range (constant_data has " +
                     str(n) + " entries)");
      }
      const fb::ConstantDataOffset* e = cd->Get(cidx);
      if (flatbuffers::IsFieldPresent(e, fb::ConstantDataOffset::VT_NAMED_KEY)) {
        const std::string key = e->named_key() ? e->named_key()->str() : std::string();
        if (!named_) {
          unsupported(what + ": constant data lives in a named-data map (named_key '" + key +
                      "', ExecuTorch >= 0.6): load the .pte file it came from, which holds the named data");
        }
        const auto it = named_->find(key);
        if (it == named_->end()) {
          format_error(what + ": named_key '" + key + "' is not in the .pte's named data");
        }
        if (e->size() > it->second.size) {
          format_error(what + ": named data '" + key + "' has " + str(it->second.size) +
                       " bytes, the entry says " + str(e->size()));
        }
        *out_size = static_cast<size_t>(e->size());
        return it->second.data;
      }
      const uint64_t off = e->offset();
      size = e->size();
      if (off > seg_.const_size || size > seg_.const_size - off) {
        format_error(what + ": constant_data[" + str(cidx) + "] (offset " + str(off) + ", size " + str(size) +
                     ") is outside the " + str(seg_.const_size) + "-byte constant segment at byte " +
                     str(seg_.const_offset));
      }
      ptr = seg_.consts + off;
    } else {
      const auto* cb = graph_->constant_buffer();
      const size_t n = cb ? cb->size() : 0;
      if (cidx >= n) {
        format_error(what + ": constant_buffer_idx " + str(cidx) +
                     " is out of range (blob has no XH00 header and constant_buffer has " + str(n) +
                     " entries)");
      }
      const auto* storage = cb->Get(cidx)->storage();
      if (!storage) format_error(what + ": constant_buffer[" + str(cidx) + "] has no storage");
      ptr = storage->data();
      size = storage->size();
    }
    *out_size = static_cast<size_t>(size);
    return ptr;
  }

  void decode_externs() {
    model_.num_externs = graph_->num_externs();
    if (model_.num_externs > kMaxExterns) {
      format_error("graph: num_externs " + str(model_.num_externs) + " exceeds the maximum of " +
                   str(kMaxExterns));
    }
    std::unordered_map<uint32_t, uint32_t> seen;
    std::vector<std::pair<uint32_t, uint32_t>> ins, outs;
    for (size_t i = 0; i < model_.values.size(); ++i) {
      const Value& v = model_.values[i];
      if (!v.flags) continue;
      const std::string what = "value " + str(v.id);
      if (v.external_id >= model_.num_externs) {
        format_error(what + ": external_id " + str(v.external_id) + " is not below num_externs " +
                     str(model_.num_externs));
      }
      auto it = seen.find(v.external_id);
      if (it != seen.end()) {
        format_error(what + ": external_id " + str(v.external_id) + " is also used by value " +
                     str(model_.values[it->second].id));
      }
      seen.emplace(v.external_id, static_cast<uint32_t>(i));
      if (v.flags & kFlagExternalInput) ins.emplace_back(v.external_id, static_cast<uint32_t>(i));
      if (v.flags & kFlagExternalOutput) outs.emplace_back(v.external_id, static_cast<uint32_t>(i));
    }
    std::sort(ins.begin(), ins.end());
    std::sort(outs.begin(), outs.end());
    for (auto& p : ins) model_.inputs.push_back(p.second);
    for (auto& p : outs) model_.outputs.push_back(p.second);
    if (model_.outputs.empty()) format_error("graph: no value is flagged as an external output");
  }

  static std::vector<std::string> names(
      const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
    std::vector<std::string> r;
    if (!v) return r;
    for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i) r.push_back(v->Get(i)->str());
    return r;
  }

  void decode_metadata() {
    const auto* md = graph_->webxnn();
    std::vector<std::string> in_names, out_names;
    if (md) {
      if (md->producer()) model_.producer = md->producer()->str();
      in_names = names(md->input_names());
      out_names = names(md->output_names());
      model_.node_sources = names(md->node_sources());
      const size_t n_nodes = graph_->xnodes() ? graph_->xnodes()->size() : 0;
      if (model_.node_sources.size() != n_nodes) model_.node_sources.clear();
      if (md->input_names() && in_names.size() != model_.inputs.size()) {
        format_error("webxnn metadata: " + str(in_names.size()) + " input names but the graph has " +
                     str(model_.inputs.size()) + " external inputs");
      }
      if (md->output_names() && out_names.size() != model_.outputs.size()) {
        format_error("webxnn metadata: " + str(out_names.size()) + " output names but the graph has " +
                     str(model_.outputs.size()) + " external outputs");
      }
      model_.has_wx_metadata = true;
      if (const auto* dd = md->dyn_dims()) {
        for (flatbuffers::uoffset_t k = 0; k < dd->size(); ++k) {
          const fb::WXDynDim* d = dd->Get(k);
          const std::string where = "webxnn metadata: dyn_dims[" + str(k) + "]";
          DynDim dy;
          dy.input = d->input();
          dy.axis = d->axis();
          dy.max_size = d->max_size();
          if (d->name()) dy.name = d->name()->str();
          if (dy.input >= model_.inputs.size()) {
            format_error(where + ": input " + str(dy.input) + " is out of range (the graph has " +
                         str(model_.inputs.size()) + " inputs)");
          }
          const Value& v = model_.values[model_.inputs[dy.input]];
          if (dy.axis >= v.dims.size()) {
            format_error(where + ": axis " + str(dy.axis) + " is out of range for input " + str(dy.input) +
                         " of rank " + str(v.dims.size()));
          }
          if (dy.max_size == 0 || v.dims[dy.axis] != dy.max_size) {
            format_error(where + ": max_size " + str(dy.max_size) +
                         " must be > 0 and equal the declared dim " + str(v.dims[dy.axis]));
          }
          for (const DynDim& o : model_.dyn_dims) {
            if (o.input == dy.input && o.axis == dy.axis) format_error(where + ": duplicate (input, axis)");
          }
          model_.dyn_dims.push_back(std::move(dy));
        }
      }
    }
    if (in_names.empty()) {
      for (size_t i = 0; i < model_.inputs.size(); ++i) in_names.push_back("input" + str(i));
    }
    if (out_names.empty()) {
      for (size_t i = 0; i < model_.outputs.size(); ++i) out_names.push_back("output" + str(i));
    }
    std::unordered_set<std::string> uniq;
    for (const auto* list : {&in_names, &out_names}) {
      for (const auto& n : *list) {
        if (n.empty()) format_error("webxnn metadata: an input or output name is empty");
        if (n.find('\0') != std::string::npos) format_error("webxnn metadata: a name contains a NUL byte");
        if (list == &in_names && !uniq.insert(n).second) {
          format_error("webxnn metadata: input name '" + n + "' appears twice");
        }
      }
    }
    uniq.clear();
    for (const auto& n : out_names) {
      if (!uniq.insert(n).second) format_error("webxnn metadata: output name '" + n + "' appears twice");
    }
    model_.input_names = std::move(in_names);
    model_.output_names = std::move(out_names);
  }

  // ---- nodes ----
  void decode_nodes() {
    const auto* xn = graph_->xnodes();
    const size_t n = xn ? xn->size() : 0;
    model_.nodes.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const fb::XNode* x = xn->Get(static_cast<flatbuffers::uoffset_t>(i));
      const uint8_t raw = static_cast<uint8_t>(x->xnode_union_type());
      const char* tname = node_type_name(raw);
      if (raw == 0) format_error("node " + str(i) + ": node has no operation (union type NONE)");
      if (!tname) format_error("node " + str(i) + ": unknown node type (XNodeUnion value " + str(raw) + ")");
      const void* obj = x->xnode_union();
      if (!obj) format_error("node " + str(i) + " (" + tname + "): node table is missing");
      Node& nd = model_.nodes[i];
      nd.type = static_cast<NodeType>(raw);
      if (const auto* mm = x->output_min_max()) {
        const float lo = mm->output_min(), hi = mm->output_max();
        if (std::isnan(lo) || std::isnan(hi) || lo > hi) {
          format_error("node " + str(i) + " (" + tname + "): output_min_max (" + std::to_string(lo) + ", " +
                       std::to_string(hi) + ") is not a valid range");
        }
        nd.has_output_min_max = true;
        nd.act.min = lo;
        nd.act.max = hi;
      }
      const NodeDef& def = node_def(nd.type);
      if (!def.decode)
        format_error("node " + str(i) + ": unknown node type (XNodeUnion value " + str(raw) + ")");
      def.decode(NodeDecoder(i, tname, id_to_index_, model_.values), obj, nd);
    }
  }

  // Every input is a graph input, a constant or an earlier node's output; nothing is written twice; graph
  // outputs are produced. Nodes run in blob order, so a cycle shows up as a use before definition.
  void check_dataflow() {
    const size_t nv = model_.values.size();
    std::vector<int64_t> producer(nv, -1);  // node index, or -2 for graph inputs and constants
    for (size_t v = 0; v < nv; ++v) {
      const Value& val = model_.values[v];
      if (val.is_constant || (val.flags & kFlagExternalInput)) producer[v] = -2;
    }
    for (size_t i = 0; i < model_.nodes.size(); ++i) {
      const Node& nd = model_.nodes[i];
      for (uint32_t in : nd.inputs) {
        if (in == kNoValue) continue;
        if (producer[in] == -1) {
          format_error(model_.node_label(i) + ": reads " + model_.value_label(in) +
                       " before it is defined (it is not a graph input, a constant or an earlier node's "
                       "output; nodes must be in topological order, without cycles)");
        }
      }
      for (uint32_t out : nd.outputs) {
        const Value& val = model_.values[out];
        if (val.is_constant)
          format_error(model_.node_label(i) + ": writes constant " + model_.value_label(out));
        if (val.flags & kFlagExternalInput) {
          format_error(model_.node_label(i) + ": writes graph input " + model_.value_label(out));
        }
        if (producer[out] >= 0) {
          format_error(model_.node_label(i) + ": writes " + model_.value_label(out) +
                       ", already produced by " + model_.node_label(static_cast<size_t>(producer[out])));
        }
        producer[out] = static_cast<int64_t>(i);
      }
    }
    for (uint32_t out : model_.outputs) {
      if (producer[out] == -1) {
        format_error("graph output " + model_.value_label(out) + " is never produced by any node");
      }
    }
  }

  const uint8_t* data_;
  size_t size_;
  const NamedData* named_;
  Segments seg_;
  const fb::XNNGraph* graph_ = nullptr;
  Model model_;
  std::unordered_map<uint32_t, uint32_t> id_to_index_;
};

}  // namespace

Model decode_blob(const uint8_t* data, size_t size, const NamedData* named) {
  return Decoder(data, size, named).run();
}

}  // namespace webxnn
