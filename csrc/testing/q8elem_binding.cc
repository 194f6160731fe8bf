// webxnn._testing.kernels' qint8 element-wise, pooling and lookup entries (table.def's qadd, qmul, qmax_pool2d,
// qavg_pool2d, qglobal_avg_pool, qlut) on int8 numpy arrays, for their tests and bench/. Every entry takes
// isa="scalar"|"avx2"|"best" and threads=N; the timed ones (time_*) return `repeat` wall times in seconds.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "testing/bindings.h"
#include "testing/kernel_args.h"

namespace py = pybind11;

namespace webxnn {
namespace {

using namespace testing;  // kernel_args.h

std::vector<size_t> dims_of(const py::array& a) {
  return std::vector<size_t>(a.shape(), a.shape() + a.ndim());
}

// out = qadd / qmul(a, b), numpy broadcasting; out_is_a: computed in place into a copy of a (a's shape must be
// the output's).
py::array qbinary(const std::string& op, const I8Arr& a, const I8Arr& b, const QElemParams& q, bool out_is_a,
                  const std::string& isa, size_t threads, const Timing& tm) {
  const char* w = "qbinary";
  if (op != "add" && op != "mul") bad(w, "op must be add or mul");
  const auto sa = dims_of(a), sb = dims_of(b);
  BinaryShape s;
  if (!make_binary_shape(sa.size(), sa.data(), sb.size(), sb.data(), &s)) bad(w, "shapes do not broadcast");
  const size_t r = std::max(sa.size(), sb.size());
  std::vector<py::ssize_t> out_shape(r);
  for (size_t i = 0; i < r; ++i) {
    const size_t da = i + sa.size() >= r ? sa[i + sa.size() - r] : 1;
    const size_t db = i + sb.size() >= r ? sb[i + sb.size() - r] : 1;
    out_shape[i] = static_cast<py::ssize_t>(da == 1 ? db : da);
  }
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  py::array_t<int8_t> out(out_shape);
  const int8_t* pa = a.data();
  if (out_is_a) {
    if (static_cast<size_t>(out.size()) != static_cast<size_t>(a.size())) bad(w, "out_is_a needs a's shape");
    std::copy(a.data(), a.data() + a.size(), out.mutable_data());
    pa = out.data();
  }
  const auto fn = op == "add" ? t.qadd : t.qmul;
  py::gil_scoped_release nogil;
  run_timed(tm, par, [&] { fn(s, pa, b.data(), out.mutable_data(), q, par); });
  return std::move(out);
}

PoolParams pool_params(const char* w, const std::vector<uint32_t>& window,
                       const std::vector<uint32_t>& stride, const std::vector<uint32_t>& pads,
                       const std::vector<uint32_t>& dilation) {
  if (window.size() != 2 || stride.size() != 2 || pads.size() != 4 || dilation.size() != 2)
    bad(w, "window, stride, dilation: 2 values; pads: 4 (top, right, bottom, left)");
  PoolParams p;
  p.pool_h = window[0];
  p.pool_w = window[1];
  p.stride_h = stride[0];
  p.stride_w = stride[1];
  p.pad_top = pads[0];
  p.pad_right = pads[1];
  p.pad_bottom = pads[2];
  p.pad_left = pads[3];
  p.dilation_h = dilation[0];
  p.dilation_w = dilation[1];
  return p;
}

py::array qpool(const std::string& op, const I8Arr& x, const std::vector<uint32_t>& window,
                const std::vector<uint32_t>& stride, const std::vector<uint32_t>& pads,
                const std::vector<uint32_t>& dilation, const QElemParams& q, const std::string& isa,
                size_t threads) {
  const char* w = "qpool";
  if (x.ndim() != 4) bad(w, "x must be NHWC");
  const PoolParams p = pool_params(w, window, stride, pads, dilation);
  const size_t N = x.shape(0), H = x.shape(1), W = x.shape(2), C = x.shape(3);
  const long eh = long(p.dilation_h) * (long(p.pool_h) - 1) + 1,
             ew = long(p.dilation_w) * (long(p.pool_w) - 1) + 1;
  const long ph = long(H) + p.pad_top + p.pad_bottom - eh, pw = long(W) + p.pad_left + p.pad_right - ew;
  if (ph < 0 || pw < 0 || p.stride_h == 0 || p.stride_w == 0) bad(w, "window larger than the padded input");
  const size_t OH = size_t(ph) / p.stride_h + 1, OW = size_t(pw) / p.stride_w + 1;
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  py::array_t<int8_t> out(
      std::vector<py::ssize_t>{py::ssize_t(N), py::ssize_t(OH), py::ssize_t(OW), py::ssize_t(C)});
  py::gil_scoped_release nogil;
  if (op == "max") {
    t.qmax_pool2d(p, N, H, W, C, x.data(), OH, OW, out.mutable_data(), q.out_min, q.out_max, par);
  } else {
    t.qavg_pool2d(p, N, H, W, C, x.data(), OH, OW, out.mutable_data(), q, par);
  }
  return std::move(out);
}

py::array qglobal_avg_pool(const I8Arr& x, const QElemParams& q, const std::string& isa, size_t threads,
                           const Timing& tm) {
  const char* w = "qglobal_avg_pool";
  if (x.ndim() != 4) bad(w, "x must be NHWC");
  const size_t N = x.shape(0), HW = x.shape(1) * x.shape(2), C = x.shape(3);
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  py::array_t<int8_t> out(std::vector<py::ssize_t>{py::ssize_t(N), py::ssize_t(C)});
  py::gil_scoped_release nogil;
  run_timed(tm, par, [&] { t.qglobal_avg_pool(N, HW, C, x.data(), out.mutable_data(), q, par); });
  return std::move(out);
}

py::array qlut(const I8Arr& x, const I8Arr& table, bool in_place, const std::string& isa, size_t threads,
               const Timing& tm) {
  const char* w = "qlut";
  if (table.ndim() != 1 || table.size() != 256) bad(w, "table must have 256 entries");
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  py::array_t<int8_t> out(dims_of(x));
  const int8_t* in = x.data();
  if (in_place) {
    std::copy(x.data(), x.data() + x.size(), out.mutable_data());
    in = out.data();
  }
  py::gil_scoped_release nogil;
  run_timed(tm, par, [&] { t.qlut(size_t(x.size()), in, out.mutable_data(), table.data(), par); });
  return std::move(out);
}

}  // namespace

void bind_q8elem(py::module_& m) {
  const auto isa = py::arg("isa") = std::string("best");
  const auto thr = py::arg("threads") = size_t{1};
  const auto quant = [](float as, int32_t az, float bs, int32_t bz, float os, int32_t oz, int32_t lo,
                        int32_t hi) { return qelem_params(as, az, bs, bz, os, oz, lo, hi); };
  m.def(
      "qbinary",
      [=](const std::string& op, const I8Arr& a, const I8Arr& b, float a_scale, int32_t a_zp, float b_scale,
          int32_t b_zp, float out_scale, int32_t out_zp, int32_t out_min, int32_t out_max, bool out_is_a,
          const std::string& isa, size_t threads) {
        return qbinary(op, a, b, quant(a_scale, a_zp, b_scale, b_zp, out_scale, out_zp, out_min, out_max),
                       out_is_a, isa, threads, Timing{});
      },
      py::arg("op"), py::arg("a"), py::arg("b"), py::arg("a_scale"), py::arg("a_zp"), py::arg("b_scale"),
      py::arg("b_zp"), py::arg("out_scale"), py::arg("out_zp"), py::arg("out_min") = -128,
      py::arg("out_max") = 127, py::arg("out_is_a") = false, isa, thr,
      "qadd (op='add') or qmul ('mul') of int8 arrays, numpy broadcasting");
  m.def(
      "qpool",
      [=](const std::string& op, const I8Arr& x, const std::vector<uint32_t>& window,
          const std::vector<uint32_t>& stride, const std::vector<uint32_t>& pads,
          const std::vector<uint32_t>& dilation, float a_scale, int32_t a_zp, float out_scale, int32_t out_zp,
          int32_t out_min, int32_t out_max, const std::string& isa, size_t threads) {
        return qpool(op, x, window, stride, pads, dilation,
                     quant(a_scale, a_zp, 1.f, 0, out_scale, out_zp, out_min, out_max), isa, threads);
      },
      py::arg("op"), py::arg("x"), py::arg("window"), py::arg("stride"), py::arg("pads"),
      py::arg("dilation") = std::vector<uint32_t>{1, 1}, py::arg("a_scale") = 1.f, py::arg("a_zp") = 0,
      py::arg("out_scale") = 1.f, py::arg("out_zp") = 0, py::arg("out_min") = -128, py::arg("out_max") = 127,
      isa, thr, "qmax_pool2d (op='max') or qavg_pool2d ('avg'), NHWC int8; pads (top, right, bottom, left)");
  m.def(
      "qglobal_avg_pool",
      [=](const I8Arr& x, float a_scale, int32_t a_zp, float out_scale, int32_t out_zp, int32_t out_min,
          int32_t out_max, const std::string& isa, size_t threads) {
        return qglobal_avg_pool(x, quant(a_scale, a_zp, 1.f, 0, out_scale, out_zp, out_min, out_max), isa,
                                threads, Timing{});
      },
      py::arg("x"), py::arg("a_scale"), py::arg("a_zp"), py::arg("out_scale"), py::arg("out_zp"),
      py::arg("out_min") = -128, py::arg("out_max") = 127, isa, thr, "[N,H,W,C] int8 -> [N,C]");
  m.def(
      "qlut",
      [](const I8Arr& x, const I8Arr& table, bool in_place, const std::string& isa, size_t threads) {
        return qlut(x, table, in_place, isa, threads, Timing{});
      },
      py::arg("x"), py::arg("table"), py::arg("in_place") = false, isa, thr,
      "table[uint8(x)] for an int8 table of 256 entries");
  // Timed entries for bench/: the residual-add shape (two same-shape operands) and a global average pool.
  m.def(
      "time_qadd",
      [](size_t n, const std::string& isa, size_t threads, size_t repeat) {
        I8Arr a(std::vector<py::ssize_t>{py::ssize_t(n)}), b(std::vector<py::ssize_t>{py::ssize_t(n)});
        for (size_t i = 0; i < n; ++i) {
          a.mutable_data()[i] = static_cast<int8_t>(i * 7);
          b.mutable_data()[i] = static_cast<int8_t>(i * 13);
        }
        std::vector<double> times;
        qbinary("add", a, b, qelem_params(0.05f, 3, 0.04f, -5, 0.07f, 1, -128, 127), false, isa, threads,
                Timing{repeat, &times});
        return times;
      },
      py::arg("n"), isa, thr, py::arg("repeat") = size_t{10},
      "wall times (s) of `repeat` qadd calls of n elements");
  m.def(
      "time_qglobal_avg_pool",
      [](size_t hw, size_t c, const std::string& isa, size_t threads, size_t repeat) {
        I8Arr x(std::vector<py::ssize_t>{1, py::ssize_t(hw), 1, py::ssize_t(c)});
        for (size_t i = 0; i < hw * c; ++i) x.mutable_data()[i] = static_cast<int8_t>(i * 7);
        std::vector<double> times;
        qglobal_avg_pool(x, qelem_params(0.05f, 3, 1.f, 0, 0.02f, -4, -128, 127), isa, threads,
                         Timing{repeat, &times});
        return times;
      },
      py::arg("hw"), py::arg("c"), isa, thr, py::arg("repeat") = size_t{10},
      "wall times (s) of `repeat` qglobal_avg_pool calls over [1, hw, 1, c]");
}

}  // namespace webxnn
