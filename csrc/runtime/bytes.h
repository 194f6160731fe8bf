// Reading untrusted blobs (runtime/loader.cc's .xnn, runtime/pte.cc's .pte): little-endian header fields, and
// the one way their flatbuffers are made readable and verified before anything is read from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "runtime/memory.h"

namespace webxnn {

inline uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t rd32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
inline uint64_t rd64(const uint8_t* p) { return uint64_t(rd32(p)) | (uint64_t(rd32(p + 4)) << 32); }

// flatbuffers reads scalars in place: `data` when it is `align`-aligned, else an aligned copy of its `size`
// bytes, which `keepalive` then owns.
inline const uint8_t* aligned_flatbuffer(const uint8_t* data, size_t size, size_t align,
                                         std::vector<std::shared_ptr<void>>* keepalive) {
  if (reinterpret_cast<uintptr_t>(data) % align == 0) return data;
  auto copy = std::make_shared<AlignedBuffer>(size);
  std::memcpy(copy->data(), data, size);
  keepalive->push_back(copy);
  return copy->data();
}

// Whether the `size` bytes at `fb` (aligned) are a well-formed flatbuffer of root `Root` with file identifier
// `identifier` (null: any). The limits bound the verifier's own work on a hostile blob; real graphs are far
// below them.
template <typename Root>
bool verify_flatbuffer(const uint8_t* fb, size_t size, const char* identifier) {
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 64;
  opts.max_tables = 1000000;
  flatbuffers::Verifier verifier(fb, size, opts);
  return verifier.VerifyBuffer<Root>(identifier);
}

}  // namespace webxnn
