// Shared pieces of the WX reference kernels: element-type dispatch, value traits, index helpers, chunked
// parallel loops. Private to csrc/kernels/wx.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/wx/wx.h"

namespace webxnn {
namespace wx {

struct Half {
  uint16_t bits;
};

// Traits: C is the type values are computed in (float for fp16; int64/uint64 for integers would lose the
// wrap-around of narrow types only on store, which static_cast provides).
template <class T>
struct Tr {
  using C = T;
  static C ld(T v) { return v; }
  static T st(C c) { return c; }
};
template <>
struct Tr<Half> {
  using C = float;
  static float ld(Half v) { return f16_to_f32(v.bits); }
  static Half st(float c) { return Half{f32_to_f16(c)}; }
};

template <class T>
constexpr bool is_float_v = std::is_same<T, float>::value || std::is_same<T, Half>::value;

// Calls f(T{}) with T the C++ type of `t`.
template <class F>
void dispatch(ET t, F&& f) {
  switch (t) {
    case ET::kF32: f(float{}); break;
    case ET::kF16: f(Half{}); break;
    case ET::kI8: f(int8_t{}); break;
    case ET::kU8: f(uint8_t{}); break;
    case ET::kI32: f(int32_t{}); break;
    case ET::kU32: f(uint32_t{}); break;
    case ET::kI64: f(int64_t{}); break;
    case ET::kU64: f(uint64_t{}); break;
  }
}

// Value of element i of an array of type t as double / int64 (used for indices, scales, zero points).
double load_double(ET t, const void* p, size_t i);
int64_t load_index(ET t, const void* p, size_t i);

// Double -> T: floats round (to nearest even through float), integers truncate toward zero and saturate.
template <class T>
T from_double(double v) {
  if constexpr (std::is_same<T, float>::value) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same<T, Half>::value) {
    return Half{f32_to_f16(static_cast<float>(v))};
  } else {
    if (std::isnan(v)) return T(0);
    v = std::trunc(v);
    if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}
template <class T>
double to_double(T v) {
  if constexpr (std::is_same<T, Half>::value) {
    return f16_to_f32(v.bits);
  } else {
    return static_cast<double>(v);
  }
}

inline size_t numel(const Dims& d) {
  size_t n = 1;
  for (size_t x : d) n *= x;
  return n;
}

// Row-major strides (elements).
inline Dims strides_of(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t k = d.size(); k-- > 1;) s[k - 1] = s[k] * d[k];
  return s;
}

// Strides of `in` broadcast (right-aligned) into rank r: 0 along broadcast dims.
inline Dims bcast_strides(const Dims& in, size_t r) {
  Dims s(r, 0);
  const Dims st = strides_of(in);
  const size_t off = r - in.size();
  for (size_t k = 0; k < in.size(); ++k) s[off + k] = in[k] == 1 ? 0 : st[k];
  return s;
}

// Runs fn(begin, end) over [0, n) in chunks of at least `grain` items.
template <class F>
void parallel_for(Parallel& par, size_t n, size_t grain, F&& fn) {
  if (n == 0) return;
  const size_t max_tasks = std::max<size_t>(1, par.threads() * 4);
  size_t tasks = std::min(max_tasks, (n + grain - 1) / std::max<size_t>(grain, 1));
  if (tasks <= 1) {
    fn(size_t(0), n);
    return;
  }
  const size_t chunk = (n + tasks - 1) / tasks;
  tasks = (n + chunk - 1) / chunk;
  par.run(tasks, [&](size_t t) {
    const size_t b = t * chunk;
    const size_t e = std::min(n, b + chunk);
    if (b < e) fn(b, e);
  });
}

// Odometer over dims `o` with up to 3 strided operands; offsets advance incrementally.
template <size_t K>
struct Odometer {
  Dims dims;
  Dims idx;
  Dims strides[K];
  size_t off[K] = {};

  Odometer(const Dims& o, const Dims* const* st) : dims(o), idx(o.size(), 0) {
    for (size_t k = 0; k < K; ++k) strides[k] = *st[k];
  }
  void seek(size_t linear) {
    for (size_t k = 0; k < K; ++k) off[k] = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      idx[d] = dims[d] ? linear % dims[d] : 0;
      linear = dims[d] ? linear / dims[d] : 0;
      for (size_t k = 0; k < K; ++k) off[k] += idx[d] * strides[k][d];
    }
  }
  void next() {
    for (size_t d = dims.size(); d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < K; ++k) off[k] += strides[k][d];
      if (idx[d] < dims[d]) return;
      for (size_t k = 0; k < K; ++k) off[k] -= strides[k][d] * dims[d];
      idx[d] = 0;
    }
  }
};

// Clamps index v (negative counts from the end) into [0, n). n must be > 0.
inline size_t clamp_index(int64_t v, size_t n) {
  const int64_t ni = static_cast<int64_t>(n);
  if (v < 0) v += ni;
  if (v < 0) v = 0;
  if (v >= ni) v = ni - 1;
  return static_cast<size_t>(v);
}

}  // namespace wx
}  // namespace webxnn
