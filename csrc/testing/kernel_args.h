// What every kernel binding of webxnn._testing.kernels shares (kernels_binding.cc, qs8_binding.cc,
// q8elem_binding.cc, ...): numpy argument types, the InputError naming the entry, the table for an isa name, a
// cached ThreadPool per thread count, 64-byte aligned packed weights, qint8 element-wise quantization, and the
// timing loops of the benchmark entries and peak probes; the shape, clamp and post-op helpers of the fp32 entries.
// Inline, so the pools are one set for the whole module.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/internal.h"
#include "kernels/kernels.h"
#include "kernels/thread_pool.h"

namespace webxnn {
namespace testing {

using FArr = pybind11::array_t<float, pybind11::array::c_style | pybind11::array::forcecast>;
using I8Arr = pybind11::array_t<int8_t, pybind11::array::c_style | pybind11::array::forcecast>;
using I32Arr = pybind11::array_t<int32_t, pybind11::array::c_style | pybind11::array::forcecast>;

// The quantization of a qint8 element-wise kernel call (table.def's QElemParams), field by field.
inline QElemParams qelem_params(float a_scale, int32_t a_zp, float b_scale, int32_t b_zp, float out_scale,
                                int32_t out_zp, int32_t out_min, int32_t out_max) {
  QElemParams q;
  q.a_scale = a_scale;
  q.a_zero_point = a_zp;
  q.b_scale = b_scale;
  q.b_zero_point = b_zp;
  q.out_scale = out_scale;
  q.out_zero_point = out_zp;
  q.out_min = out_min;
  q.out_max = out_max;
  return q;
}

// Raises webxnn.errors.InputError("kernels.<where>: <what>").
[[noreturn]] inline void bad(const std::string& where, const std::string& what) {
  pybind11::object cls = pybind11::module_::import("webxnn.errors").attr("InputError");
  PyErr_SetObject(cls.ptr(), pybind11::str("kernels." + where + ": " + what).ptr());
  throw pybind11::error_already_set();
}

// A window's (height, width) pair, and pads (top, right, bottom, left), as the conv and pool entries take them.
using Pair = std::pair<uint32_t, uint32_t>;
using Pads = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;

// Output length of a window of k taps (dilation d, stride s) over `in` padded by pa and pb.
inline size_t conv_out(const char* w, size_t in, size_t pa, size_t pb, size_t k, size_t s, size_t d) {
  const size_t eff = d * (k - 1) + 1;
  if (in + pa + pb < eff) bad(w, "window larger than the padded input");
  return (in + pa + pb - eff) / s + 1;
}

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// The keyword arguments most fp32 entries take, with their defaults (`const auto [isa, thr, mn, mx] =
// F32EntryArgs{};` in a bind function), and the geometry defaults of the conv and pool entries.
struct F32EntryArgs {
  pybind11::arg_v isa = pybind11::arg("isa") = "scalar";
  pybind11::arg_v threads = pybind11::arg("threads") = size_t{1};
  pybind11::arg_v min = pybind11::arg("min") = -kInf;
  pybind11::arg_v max = pybind11::arg("max") = kInf;
};
inline const Pads kNoPads{0, 0, 0, 0};
inline const Pair kOnes{1, 1};

// An array's shape, and as text "(2, 3)" for messages.
inline std::vector<size_t> shape_of(const pybind11::array& a) {
  std::vector<size_t> s(static_cast<size_t>(a.ndim()));
  for (size_t i = 0; i < s.size(); ++i)
    s[i] = static_cast<size_t>(a.shape(static_cast<pybind11::ssize_t>(i)));
  return s;
}

inline std::string shape_str(const std::vector<size_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

inline void need_ndim(const char* where, const char* name, const pybind11::array& a, pybind11::ssize_t nd) {
  if (a.ndim() != nd)
    bad(where,
        std::string(name) + " must be " + std::to_string(nd) + "-D, got shape " + shape_str(shape_of(a)));
}

template <typename T>
pybind11::array_t<T> make_out(const std::vector<size_t>& shape) {
  std::vector<pybind11::ssize_t> s(shape.begin(), shape.end());
  return pybind11::array_t<T>(s);
}

// The clamp [mn, mx], then the post-op named `post` (gemm, conv2d and dwconv2d only).
inline Activation act_of(const char* w, float mn, float mx, const std::string& post = "none") {
  Activation a;
  a.min = mn;
  a.max = mx;
  if (post == "hardswish")
    a.post = PostOp::kHardswish;
  else if (post == "sigmoid")
    a.post = PostOp::kSigmoid;
  else if (post == "gelu")
    a.post = PostOp::kGelu;
  else if (post != "none")
    bad(w, "post must be none, hardswish, sigmoid or gelu, not '" + post + "'");
  return a;
}

inline const KernelTable& table_for(const char* where, const std::string& isa) {
  const KernelTable* t = kernels_by_name(isa.c_str());
  if (!t)
    bad(where, "unknown or unsupported isa '" + isa +
                   "' (scalar, avx2, avxvnni, avx512vnni, vnni-emu in testing builds, best; tables() lists "
                   "what runs here)");
  return *t;
}

inline Parallel& pool_for(const char* where, size_t threads) {
  static SerialParallel serial;
  static std::mutex mu;
  static std::map<size_t, std::unique_ptr<ThreadPool>> pools;
  if (threads == 0 || threads > 256) bad(where, "threads must be in [1, 256]");
  if (threads == 1) return serial;
  std::lock_guard<std::mutex> lk(mu);
  auto& p = pools[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

// 64-byte aligned scratch (packed weights).
struct Aligned {
  void* p = nullptr;
  explicit Aligned(size_t bytes) : p(internal::aligned_alloc64(bytes)) {}
  ~Aligned() { internal::aligned_free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
};

// Benchmark support: when `times` is non-null the kernel call (packing excluded) runs once to warm up, then
// `repeat` more times, each wall time in seconds appended to *times.
struct Timing {
  size_t repeat = 0;
  std::vector<double>* times = nullptr;
};

// Without a pool: calls of serial kernels (or of a pool the caller holds a ThreadPool::Session on).
template <typename Fn>
void run_timed(const Timing& tm, Fn&& fn) {
  fn();
  if (!tm.times) return;
  for (size_t i = 0; i < tm.repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    tm.times->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

// The calls run inside one ThreadPool::Session, as the ops of a Program::run do: the workers poll between
// them instead of sleeping.
template <typename Fn>
void run_timed(const Timing& tm, Parallel& par, Fn&& fn) {
  auto* pool = dynamic_cast<ThreadPool*>(&par);
  std::optional<ThreadPool::Session> session;
  if (pool) session.emplace(*pool);
  run_timed(tm, std::forward<Fn>(fn));
}

// The peak probes' timing: the median wall time (s) of `repeat` (at least 1) runs of `per_thread` on each of
// `threads` workers of par at once, after a warm-up run; the GIL is released meanwhile.
template <typename Fn>
double median_run_seconds(Parallel& par, size_t threads, size_t repeat, Fn&& per_thread) {
  std::vector<double> times;
  {
    pybind11::gil_scoped_release nogil;
    auto* pool = dynamic_cast<ThreadPool*>(&par);
    std::optional<ThreadPool::Session> session;
    if (pool) session.emplace(*pool);
    for (size_t r = 0; r < std::max<size_t>(repeat, 1) + 1; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      par.run(threads, [&](size_t) { per_thread(); });
      if (r) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace testing
}  // namespace webxnn
