#include "runtime/pte.h"

#include <cstring>
#include <limits>

#include "program_generated.h"
#include "runtime/bytes.h"
#include "runtime/memory.h"
#include "runtime/nodes/common.h"
#include "runtime/status.h"

namespace webxnn {
namespace {

namespace pb = webxnn_pte;

constexpr size_t kExtendedHeaderSize = 32;  // "eh00", u32 length, u64 program_size, segment_base, data_size

// Instruction kinds the schema knows (0 = NONE, where an instruction of a kind it does not know also counts).
constexpr size_t kInstructionKinds = static_cast<size_t>(pb::InstructionArguments::MAX) + 1;

const char* instruction_name(size_t t) {
  return t == 0 ? "unknown instruction"
                : pb::EnumNameInstructionArguments(static_cast<pb::InstructionArguments>(t));
}

// What a method holds, for the refusal message: delegates, operators, instruction counts.
std::string describe_plan(const pb::ExecutionPlan* plan, bool* ok) {
  std::string name = plan->name() ? plan->name()->str() : "";
  std::string out = "method '" + name + "':";
  const auto* dels = plan->delegates();
  const size_t nd = dels ? dels->size() : 0;
  bool good = nd == 1;
  for (size_t i = 0; i < nd; ++i) {
    const auto* id = dels->Get(static_cast<flatbuffers::uoffset_t>(i))->id();
    const std::string s = id ? id->str() : "";
    out += (i ? ", " : " delegates ") + s;
    if (s.find("Xnnpack") == std::string::npos && s.find("xnnpack") == std::string::npos) good = false;
  }
  size_t counts[kInstructionKinds] = {};
  if (const auto* chains = plan->chains()) {
    for (const auto* chain : *chains) {
      if (!chain->instructions()) continue;
      for (const auto* ins : *chain->instructions()) {
        const auto t = static_cast<size_t>(ins->instr_args_type());
        ++counts[t < kInstructionKinds ? t : 0];
      }
    }
  }
  const auto* ops = plan->operators();
  if (ops && ops->size()) {
    out += "; " + str(ops->size()) + " non-delegated operator(s):";
    for (size_t i = 0; i < ops->size() && i < 8; ++i) {
      const auto* op = ops->Get(static_cast<flatbuffers::uoffset_t>(i));
      out += std::string(i ? ", " : " ") + (op->name() ? op->name()->str() : "?");
      if (op->overload() && op->overload()->size()) out += "." + op->overload()->str();
    }
    if (ops->size() > 8) out += ", ...";
  }
  for (size_t t = 0; t < kInstructionKinds; ++t) {
    if (!counts[t] || t == static_cast<size_t>(pb::InstructionArguments::DelegateCall)) continue;
    out += "; " + str(counts[t]) + " " + instruction_name(t);
  }
  if (counts[static_cast<size_t>(pb::InstructionArguments::DelegateCall)] > 1) good = false;
  for (size_t t = 0; t < kInstructionKinds; ++t) {
    if (counts[t] && t != static_cast<size_t>(pb::InstructionArguments::DelegateCall)) good = false;
  }
  *ok = good;
  return out;
}

}  // namespace

bool is_pte(const uint8_t* data, size_t size) { return size >= 8 && std::memcmp(data + 4, "ET12", 4) == 0; }

PtePayload open_pte(const uint8_t* data, size_t size) {
  PtePayload out;
  if (!is_pte(data, size)) format_error(".pte: bytes 4..8 are not 'ET12' (not an ExecuTorch program)");
  uint64_t program_size = size, segment_base = 0;
  bool has_segments = false;
  if (size >= 8 + kExtendedHeaderSize && std::memcmp(data + 8, "eh00", 4) == 0) {
    const uint32_t hlen = rd32(data + 12);
    program_size = rd64(data + 16);
    segment_base = rd64(data + 24);
    has_segments = true;
    if (hlen < kExtendedHeaderSize)
      format_error(".pte extended header: length " + str(hlen) + " at byte 12 < 32");
    if (program_size < 8 || program_size > size) {
      format_error(".pte extended header: program_size " + str(program_size) +
                   " (byte 16) is past the end of the " + str(size) + "-byte file");
    }
    if (segment_base > size) {
      format_error(".pte extended header: segment_base_offset " + str(segment_base) +
                   " (byte 24) is past the end of the " + str(size) + "-byte file");
    }
  }
  if (program_size >= std::numeric_limits<int32_t>::max())
    format_error(".pte: program flatbuffer larger than 2 GiB");
  const uint8_t* fb = aligned_flatbuffer(data, program_size, 16, &out.keepalive);
  if (!verify_flatbuffer<pb::Program>(fb, program_size, "ET12")) {
    format_error(".pte: the program flatbuffer (" + str(program_size) +
                 " bytes) failed verification: an offset, size or alignment is out of bounds");
  }
  const pb::Program* program = flatbuffers::GetRoot<pb::Program>(fb);
  const auto* plans = program->execution_plan();
  const size_t np = plans ? plans->size() : 0;
  std::string contents;
  bool ok = np == 1;
  for (size_t i = 0; i < np; ++i) {
    bool plan_ok = false;
    contents +=
        (i ? " | " : "") + describe_plan(plans->Get(static_cast<flatbuffers::uoffset_t>(i)), &plan_ok);
    ok = ok && plan_ok;
  }
  if (np == 0) contents = "none";
  if (!ok) {
    unsupported(
        ".pte: webxnn runs ExecuTorch programs that are one method making one XnnpackBackend delegate "
        "call; this one has " +
        str(np) + " method(s): " + contents +
        ". Export the model to ONNX and compile that, or partition it wholly to XNNPACK");
  }
  const auto* segments = program->segments();
  auto segment = [&](uint32_t idx, const std::string& what) -> NamedBytes {
    const size_t ns = segments ? segments->size() : 0;
    if (idx >= ns)
      format_error(what + ": segment index " + str(idx) + " is past the " + str(ns) + " segments");
    if (!has_segments) format_error(what + ": data is in a segment but the .pte has no extended header");
    const auto* s = segments->Get(idx);
    const uint64_t off = s->offset(), len = s->size();
    if (off > size - segment_base || len > size - segment_base - off) {
      format_error(what + ": segment " + str(idx) + " (offset " + str(off) + ", size " + str(len) +
                   ") runs past the end of the " + str(size) + "-byte file");
    }
    return {data + segment_base + off, static_cast<size_t>(len)};
  };
  const auto* dele = plans->Get(0)->delegates()->Get(0);
  const auto* ref = dele->processed();
  if (!ref) format_error(".pte: the XnnpackBackend delegate has no processed data");
  if (ref->location() == pb::DataLocation::INLINE) {
    const auto* inl = program->backend_delegate_data();
    const size_t n = inl ? inl->size() : 0;
    if (ref->index() >= n) {
      format_error(".pte: backend_delegate_data index " + str(ref->index()) + " is past the " + str(n) +
                   " entries");
    }
    const auto* d = inl->Get(ref->index())->data();
    out.data = d ? d->data() : fb;
    out.size = d ? d->size() : 0;
  } else if (ref->location() == pb::DataLocation::SEGMENT) {
    const NamedBytes b = segment(ref->index(), ".pte: XnnpackBackend payload");
    out.data = b.data;
    out.size = b.size;
  } else {
    format_error(".pte: unknown delegate data location " + str(static_cast<unsigned>(ref->location())));
  }
  if (const auto* named = program->named_data()) {
    for (size_t i = 0; i < named->size(); ++i) {
      const auto* nd = named->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (!nd->key()) format_error(".pte: named_data[" + str(i) + "] has no key");
      out.named[nd->key()->str()] =
          segment(nd->segment_index(), ".pte: named_data '" + nd->key()->str() + "'");
    }
  }
  return out;
}

}  // namespace webxnn
