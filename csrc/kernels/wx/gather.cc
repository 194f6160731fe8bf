// WX indexing kernels: gather, gatherElements, gatherND, scatterElements, scatterND. Every index is clamped
// into range (negative counts from the end) before it is used, so hostile indices never read or write out of
// bounds. A gather over a zero-size axis has nothing to read and writes zeros.
#include <cstring>

#include "kernels/wx/common.h"

namespace webxnn {
namespace wx {

void gather(size_t esize, const Dims& x, size_t axis, ET it, const Dims& idx, const void* px, const void* pi,
            void* py, Parallel& par) {
  size_t pre = 1, post = 1;
  for (size_t d = 0; d < axis; ++d) pre *= x[d];
  for (size_t d = axis + 1; d < x.size(); ++d) post *= x[d];
  const size_t n = x[axis], ni = numel(idx);
  const size_t row = post * esize;
  const uint8_t* bx = static_cast<const uint8_t*>(px);
  uint8_t* by = static_cast<uint8_t*>(py);
  if (n == 0) {
    std::memset(py, 0, pre * ni * row);
    return;
  }
  parallel_for(par, pre * ni, std::max<size_t>(1, 4096 / std::max<size_t>(1, row)), [&](size_t b, size_t e) {
    for (size_t w = b; w < e; ++w) {
      const size_t p = w / ni, k = w % ni;
      const size_t j = clamp_index(load_index(it, pi, k), n);
      std::memcpy(by + w * row, bx + (p * n + j) * row, row);
    }
  });
}

void gather_elements(size_t esize, const Dims& x, size_t axis, ET it, const Dims& idx, const void* px,
                     const void* pi, void* py, Parallel& par) {
  const Dims xs = strides_of(x);
  const size_t n = x[axis];
  const uint8_t* bx = static_cast<const uint8_t*>(px);
  uint8_t* by = static_cast<uint8_t*>(py);
  const size_t total = numel(idx);
  if (n == 0) {
    std::memset(py, 0, total * esize);
    return;
  }
  Dims xs_no_axis = xs;
  xs_no_axis[axis] = 0;
  const Dims* st[1] = {&xs_no_axis};
  parallel_for(par, total, 1024, [&](size_t b, size_t e) {
    Odometer<1> od(idx, st);
    od.seek(b);
    for (size_t i = b; i < e; ++i, od.next()) {
      const size_t j = clamp_index(load_index(it, pi, i), n);
      std::memcpy(by + i * esize, bx + (od.off[0] + j * xs[axis]) * esize, esize);
    }
  });
}

void gather_nd(size_t esize, const Dims& x, ET it, const Dims& idx, const void* px, const void* pi, void* py,
               Parallel& par) {
  const size_t k = idx.empty() ? 0 : idx.back();
  const size_t tuples = idx.empty() ? 1 : numel(Dims(idx.begin(), idx.end() - 1));
  const Dims xs = strides_of(x);
  size_t slice = esize;
  for (size_t d = k; d < x.size(); ++d) slice *= x[d];
  bool empty_axis = false;
  for (size_t d = 0; d < k; ++d) empty_axis = empty_axis || x[d] == 0;
  const uint8_t* bx = static_cast<const uint8_t*>(px);
  uint8_t* by = static_cast<uint8_t*>(py);
  if (empty_axis) {
    std::memset(py, 0, tuples * slice);
    return;
  }
  parallel_for(par, tuples, 64, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; ++t) {
      size_t off = 0;
      for (size_t d = 0; d < k; ++d) off += clamp_index(load_index(it, pi, t * k + d), x[d]) * xs[d];
      std::memcpy(by + t * slice, bx + off * esize, slice);
    }
  });
}

void scatter_elements(size_t esize, const Dims& x, size_t axis, ET it, const Dims& idx, const void* px,
                      const void* pi, const void* pu, void* py) {
  const size_t total_x = numel(x);
  if (py != px) std::memcpy(py, px, total_x * esize);
  const size_t n = x[axis];
  if (n == 0) return;
  const Dims xs = strides_of(x);
  Dims xs_no_axis = xs;
  xs_no_axis[axis] = 0;
  const Dims* st[1] = {&xs_no_axis};
  const uint8_t* bu = static_cast<const uint8_t*>(pu);
  uint8_t* by = static_cast<uint8_t*>(py);
  const size_t total = numel(idx);
  Odometer<1> od(idx, st);
  // Sequential: when two indices collide, the later update wins (deterministic).
  for (size_t i = 0; i < total; ++i, od.next()) {
    const size_t j = clamp_index(load_index(it, pi, i), n);
    std::memcpy(by + (od.off[0] + j * xs[axis]) * esize, bu + i * esize, esize);
  }
}

void scatter_nd(size_t esize, const Dims& x, ET it, const Dims& idx, const void* px, const void* pi,
                const void* pu, void* py) {
  if (py != px) std::memcpy(py, px, numel(x) * esize);
  const size_t k = idx.empty() ? 0 : idx.back();
  const size_t tuples = idx.empty() ? 1 : numel(Dims(idx.begin(), idx.end() - 1));
  for (size_t d = 0; d < k; ++d) {
    if (x[d] == 0) return;
  }
  const Dims xs = strides_of(x);
  size_t slice = esize;
  for (size_t d = k; d < x.size(); ++d) slice *= x[d];
  const uint8_t* bu = static_cast<const uint8_t*>(pu);
  uint8_t* by = static_cast<uint8_t*>(py);
  for (size_t t = 0; t < tuples; ++t) {
    size_t off = 0;
    for (size_t d = 0; d < k; ++d) off += clamp_index(load_index(it, pi, t * k + d), x[d]) * xs[d];
    std::memcpy(by + off * esize, bu + t * slice, slice);
  }
}

}  // namespace wx
}  // namespace webxnn
