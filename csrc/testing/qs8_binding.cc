// webxnn._testing.kernels' int8 entries — numpy-level access to the int8 GEMM and IGEMM convolution kernels
// (table.def's qgemm, qconv2d), for their tests and bench/: the two (with residual=: qgemm_residual,
// qconv2d_residual), their timed entries, the int8 peak probe.
// Every entry takes isa="scalar"|"avx2"|"vnni-emu"|...|"best" (kernels.tables() lists them) and threads=N; bad
// arguments raise webxnn.errors.InputError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernels/internal.h"
#include "kernels/kernels.h"
#include "testing/bindings.h"
#include "testing/kernel_args.h"

namespace py = pybind11;

namespace webxnn {
namespace {

using namespace testing;  // kernel_args.h

QType qtype(const char* w, const std::string& name, const char* what) {
  if (name == "uint8") return QType::kU8;
  if (name == "int8") return QType::kS8;
  bad(w, std::string(what) + " must be uint8 or int8, not " + name);
}

// The quantization of a call: A's dtype gives its type.
QGemmQuant quant_of(const char* w, const py::array& A, const FArr& w_scales, size_t N, float a_scale,
                    int32_t a_zp, float out_scale, int32_t out_zp, const std::string& out_dtype) {
  const size_t ns = static_cast<size_t>(w_scales.size());
  if (w_scales.ndim() != 1 || (ns != 1 && ns != N)) bad(w, "w_scales must be [N] or [1]");
  QGemmQuant q;
  q.a_type = qtype(w, py::str(A.dtype()).cast<std::string>(), "A");
  q.a_zero_point = a_zp;
  q.a_scale = a_scale;
  q.w_scales = w_scales.data();
  q.w_scale_count = ns;
  q.out_type = qtype(w, out_dtype, "out_dtype");
  q.out_zero_point = out_zp;
  q.out_scale = out_scale;
  return q;
}

// The requantized output array: u8 or s8 as q says.
py::array out_array(const QGemmQuant& q, std::vector<py::ssize_t> shape) {
  if (q.out_type == QType::kU8) return py::array_t<uint8_t>(shape);
  return py::array_t<int8_t>(shape);
}

// The residual Add of qgemm_residual / qconv2d_residual (residual null: none): the residual's int8 array and
// quantization, and the sum's (the Add's output) quantization and clamp. Operand a (the product's output) is
// filled in by the call.
struct Residual {
  std::optional<I8Arr> r;
  float r_scale = 1.f, sum_scale = 1.f;
  int32_t r_zp = 0, sum_zp = 0, sum_min = -128, sum_max = 127;
};

// The Add's parameters for a product quantized as q; checks R's shape (dims, C-contiguous).
QElemParams add_params(const char* w, const Residual& res, const QGemmQuant& q,
                       const std::vector<py::ssize_t>& dims) {
  if (q.out_type != QType::kS8) bad(w, "a residual needs out_dtype int8");
  const I8Arr& r = *res.r;
  if (static_cast<size_t>(r.ndim()) != dims.size() || !std::equal(dims.begin(), dims.end(), r.shape()))
    bad(w, "residual must have the output's shape");
  return qelem_params(q.out_scale, q.out_zero_point, res.r_scale, res.r_zp, res.sum_scale, res.sum_zp,
                      res.sum_min, res.sum_max);
}

// C = qgemm(A[:, :K], B) into an [M, ldc] array prefilled with `fill` (columns past N must stay untouched).
// A is uint8 or int8 [M, lda >= K]; B int8 [N, K] (b_is_nk) or [K, N]. With a residual [M, ldc]:
// qgemm_residual, C = qadd(the product, residual).
py::array qgemm(const py::array& A, const I8Arr& B, const std::optional<I32Arr>& bias, const FArr& w_scales,
                float a_scale, int32_t a_zp, float out_scale, int32_t out_zp, const std::string& out_dtype,
                int32_t out_min, int32_t out_max, bool b_is_nk, std::optional<size_t> k_arg,
                std::optional<size_t> ldc_arg, int fill, const std::string& isa, size_t threads,
                const Timing& tm, const Residual& res = Residual{}) {
  const char* w = "qgemm";
  if (A.ndim() != 2 || B.ndim() != 2) bad(w, "A and B must be 2-D");
  if (!(A.flags() & py::array::c_style)) bad(w, "A must be C-contiguous");
  const size_t M = A.shape(0), lda = A.shape(1), K = k_arg.value_or(lda);
  const size_t N = b_is_nk ? B.shape(0) : B.shape(1), bk = b_is_nk ? B.shape(1) : B.shape(0);
  if (K > lda || bk != K) bad(w, "K mismatch between A, B and k");
  const size_t ldc = ldc_arg.value_or(N);
  if (ldc < N) bad(w, "ldc < N");
  if (bias && (bias->ndim() != 1 || static_cast<size_t>(bias->shape(0)) != N)) bad(w, "bias must be [N]");
  const QGemmQuant q = quant_of(w, A, w_scales, N, a_scale, a_zp, out_scale, out_zp, out_dtype);
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  py::array C = out_array(q, {static_cast<py::ssize_t>(M), static_cast<py::ssize_t>(ldc)});
  std::fill_n(static_cast<uint8_t*>(C.mutable_data()), M * ldc, static_cast<uint8_t>(fill));
  const QElemParams add =
      res.r ? add_params(w, res, q, {static_cast<py::ssize_t>(M), static_cast<py::ssize_t>(ldc)})
            : QElemParams{};
  Aligned packed(t.qgemm_packed_size(K, N));
  {
    py::gil_scoped_release nogil;
    t.qgemm_pack(K, N, B.data(), b_is_nk, bias ? bias->data() : nullptr, q, packed.p);
    run_timed(tm, par, [&] {
      if (res.r) {
        t.qgemm_residual(M, N, K, A.data(), lda, packed.p, res.r->data(), ldc, C.mutable_data(), ldc, out_min,
                         out_max, add, par);
      } else {
        t.qgemm(M, N, K, A.data(), lda, packed.p, C.mutable_data(), ldc, out_min, out_max, par);
      }
    });
  }
  return C;
}

// The geometry of a qconv2d / qdwconv2d call: pads (top, right, bottom, left), strides, dilations and a
// kh x kw filter over an H x W input; sets OH, OW.
ConvParams q_geometry(const char* w, const std::vector<uint32_t>& pads, const std::vector<uint32_t>& strides,
                      const std::vector<uint32_t>& dil, size_t kh, size_t kw, size_t H, size_t W, size_t* OH,
                      size_t* OW) {
  if (pads.size() != 4 || strides.size() != 2 || dil.size() != 2)
    bad(w, "pads has 4 values, strides and dilations 2");
  ConvParams p;
  p.pad_top = pads[0];
  p.pad_right = pads[1];
  p.pad_bottom = pads[2];
  p.pad_left = pads[3];
  p.kernel_h = static_cast<uint32_t>(kh);
  p.kernel_w = static_cast<uint32_t>(kw);
  p.stride_h = strides[0];
  p.stride_w = strides[1];
  p.dilation_h = dil[0];
  p.dilation_w = dil[1];
  if (!p.stride_h || !p.stride_w || !p.dilation_h || !p.dilation_w)
    bad(w, "strides and dilations must be >= 1");
  const size_t eh = (p.kernel_h - 1) * size_t{p.dilation_h} + 1,
               ew = (p.kernel_w - 1) * size_t{p.dilation_w} + 1;
  if (H + p.pad_top + p.pad_bottom < eh || W + p.pad_left + p.pad_right < ew)
    bad(w, "filter larger than input");
  *OH = (H + p.pad_top + p.pad_bottom - eh) / p.stride_h + 1;
  *OW = (W + p.pad_left + p.pad_right - ew) / p.stride_w + 1;
  return p;
}

// out = qconv2d(x, filter): x NHWC uint8 or int8, filter OHWI int8, pads (top, right, bottom, left). With a
// residual (the output's shape): qconv2d_residual, out = qadd(the conv, residual).
py::array qconv2d(const py::array& x, const I8Arr& f, const std::optional<I32Arr>& bias, const FArr& w_scales,
                  float a_scale, int32_t a_zp, float out_scale, int32_t out_zp, const std::string& out_dtype,
                  int32_t out_min, int32_t out_max, const std::vector<uint32_t>& pads,
                  const std::vector<uint32_t>& strides, const std::vector<uint32_t>& dil, uint32_t groups,
                  const std::string& isa, size_t threads, const Timing& tm, bool planes = false,
                  const Residual& res = Residual{}) {
  const char* w = "qconv2d";
  if (x.ndim() != 4 || f.ndim() != 4) bad(w, "x must be NHWC and filter OHWI (4-D)");
  if (!(x.flags() & py::array::c_style)) bad(w, "x must be C-contiguous");
  if (groups == 0 || x.shape(3) % groups || f.shape(0) % groups) bad(w, "groups must divide C and OC");
  const size_t N = x.shape(0), H = x.shape(1), W = x.shape(2), C = x.shape(3) / groups;
  const size_t OC = f.shape(0) / groups;
  if (static_cast<size_t>(f.shape(3)) != C) bad(w, "filter channels != input channels / groups");
  size_t OH = 0, OW = 0;
  ConvParams p = q_geometry(w, pads, strides, dil, f.shape(1), f.shape(2), H, W, &OH, &OW);
  p.groups = groups;
  p.group_input_channels = static_cast<uint32_t>(C);
  p.group_output_channels = static_cast<uint32_t>(OC);
  const size_t GOC = groups * OC;
  if (bias && (bias->ndim() != 1 || static_cast<size_t>(bias->shape(0)) != GOC)) bad(w, "bias must be [OC]");
  const QGemmQuant q = quant_of(w, x, w_scales, GOC, a_scale, a_zp, out_scale, out_zp, out_dtype);
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  const std::vector<py::ssize_t> out_dims{static_cast<py::ssize_t>(N), static_cast<py::ssize_t>(OH),
                                          static_cast<py::ssize_t>(OW), static_cast<py::ssize_t>(GOC)};
  py::array out = out_array(q, out_dims);
  const QElemParams add = res.r ? add_params(w, res, q, out_dims) : QElemParams{};
  if (res.r && planes) bad(w, "a residual reads NHWC only (qconv2d_residual never reads planes)");
  Aligned packed(t.qconv2d_packed_size(p));
  // planes: the kernel reads an NCHW copy of x (p.input_nchw) where the table reads planes for p.
  ConvParams rp = p;
  rp.input_nchw = planes && t.qconv2d_reads_nchw(p);
  std::vector<uint8_t> nchw(rp.input_nchw ? N * H * W * C * groups : 0);
  const uint8_t* xs = static_cast<const uint8_t*>(x.data());
  const size_t IC = C * groups;
  for (size_t i = 0; i < nchw.size(); ++i) {  // i = ((n * IC + c) * H + y) * W + xx
    const size_t xx = i % W, y = i / W % H, c = i / (W * H) % IC, n = i / (W * H * IC);
    nchw[i] = xs[((n * H + y) * W + xx) * IC + c];
  }
  const void* src = rp.input_nchw ? static_cast<const void*>(nchw.data()) : x.data();
  {
    py::gil_scoped_release nogil;
    t.qconv2d_pack(p, f.data(), bias ? bias->data() : nullptr, q, packed.p);
    run_timed(tm, par, [&] {
      if (res.r) {
        t.qconv2d_residual(rp, N, H, W, src, OH, OW, packed.p, res.r->data(), out.mutable_data(), out_min,
                           out_max, add, par);
      } else {
        t.qconv2d(rp, N, H, W, src, OH, OW, packed.p, out.mutable_data(), out_min, out_max, par);
      }
    });
  }
  return out;
}

// out = qdwconv2d(x, filter): x NHWC uint8 or int8 [N, H, W, C], filter 1HWO int8 [1, kh, kw, C * m].
py::array qdwconv2d(const py::array& x, const I8Arr& f, const std::optional<I32Arr>& bias,
                    const FArr& w_scales, float a_scale, int32_t a_zp, float out_scale, int32_t out_zp,
                    const std::string& out_dtype, int32_t out_min, int32_t out_max,
                    const std::vector<uint32_t>& pads, const std::vector<uint32_t>& strides,
                    const std::vector<uint32_t>& dil, const std::string& isa, size_t threads,
                    const Timing& tm) {
  const char* w = "qdwconv2d";
  if (x.ndim() != 4 || f.ndim() != 4 || f.shape(0) != 1) bad(w, "x must be NHWC and filter 1HWO (4-D)");
  if (!(x.flags() & py::array::c_style)) bad(w, "x must be C-contiguous");
  const size_t N = x.shape(0), H = x.shape(1), W = x.shape(2), C = x.shape(3), OC = f.shape(3);
  if (C == 0 || OC % C) bad(w, "filter channels must be a multiple of the input channels");
  size_t OH = 0, OW = 0;
  ConvParams p = q_geometry(w, pads, strides, dil, f.shape(1), f.shape(2), H, W, &OH, &OW);
  p.groups = static_cast<uint32_t>(C);
  p.group_input_channels = 1;
  p.group_output_channels = static_cast<uint32_t>(OC / C);
  if (bias && (bias->ndim() != 1 || static_cast<size_t>(bias->shape(0)) != OC))
    bad(w, "bias must be [C * m]");
  const QGemmQuant q = quant_of(w, x, w_scales, OC, a_scale, a_zp, out_scale, out_zp, out_dtype);
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  py::array out = out_array(q, {static_cast<py::ssize_t>(N), static_cast<py::ssize_t>(OH),
                                static_cast<py::ssize_t>(OW), static_cast<py::ssize_t>(OC)});
  Aligned packed(t.qdwconv2d_packed_size(p));
  {
    py::gil_scoped_release nogil;
    t.qdwconv2d_pack(p, f.data(), bias ? bias->data() : nullptr, q, packed.p);
    run_timed(tm, par, [&] {
      t.qdwconv2d(p, N, H, W, x.data(), OH, OW, packed.p, out.mutable_data(), out_min, out_max, par);
    });
  }
  return out;
}

// Table `isa`'s int8 multiply step as a peak loop: the loop, its ops per step and its instructions (vpdpbusd
// chains for a VNNI table, else AVX2's three-instruction step). The one place that decides it.
struct Int8PeakStep {
  int32_t (*loop)(size_t);
  double ops_per_step;
  const char* what;
};

Int8PeakStep int8_peak_step(const char* w, const std::string& isa) {
#if !defined(WEBXNN_HAVE_X86)
  bad(w, "built without the x86 kernels");
#else
  if (!cpu_features().avx2) bad(w, "this CPU has no AVX2");
  const std::string table = table_for(w, isa).name;
  if (table == "avx512vnni")  // zmm: 64 multiply-adds per vpdpbusd
    return {internal::avx512vnni_peak_loop, 128.0 * internal::kVnniPeakChains, "vpdpbusd zmm"};
  if (table == "avxvnni") return {internal::avxvnni_peak_loop, 64.0 * internal::kVnniPeakChains, "vpdpbusd"};
  return {internal::int8_peak_loop, 640.0, "vpmaddubsw + vpmaddwd + vpaddd"};
#endif
}

// GOP/s (2 ops per multiply-add) of `threads` cores each running int8_peak_step(isa)'s loop; median of
// `repeat` runs.
double peak_int8(size_t threads, size_t iters, size_t repeat, const std::string& isa) {
  const char* w = "peak_int8";
  const Int8PeakStep step = int8_peak_step(w, isa);
  Parallel& par = pool_for(w, threads);
  volatile int32_t sink = 0;
  const double t = median_run_seconds(par, threads, repeat, [&] { sink = sink + step.loop(iters); });
  return step.ops_per_step * static_cast<double>(iters) * static_cast<double>(threads) / t * 1e-9;
}

}  // namespace

void bind_qs8(py::module_& m) {
  const auto thr = py::arg("threads") = size_t{1};
  const auto rep = py::arg("repeat") = size_t{10};
  m.def(
      "qgemm",
      [](const py::array& A, const I8Arr& B, const std::optional<I32Arr>& bias, const FArr& w_scales,
         float a_scale, int32_t a_zp, float out_scale, int32_t out_zp, const std::string& out_dtype,
         int32_t out_min, int32_t out_max, bool b_is_nk, std::optional<size_t> k, std::optional<size_t> ldc,
         int fill, const std::string& isa, size_t threads, const std::optional<I8Arr>& residual,
         float r_scale, int32_t r_zp, float sum_scale, int32_t sum_zp, int32_t sum_min, int32_t sum_max) {
        return qgemm(A, B, bias, w_scales, a_scale, a_zp, out_scale, out_zp, out_dtype, out_min, out_max,
                     b_is_nk, k, ldc, fill, isa, threads, Timing{},
                     Residual{residual, r_scale, sum_scale, r_zp, sum_zp, sum_min, sum_max});
      },
      py::arg("A"), py::arg("B"), py::arg("bias"), py::arg("w_scales"), py::arg("a_scale"),
      py::arg("a_zero_point"), py::arg("out_scale"), py::arg("out_zero_point"), py::arg("out_dtype") = "int8",
      py::arg("out_min") = -1024, py::arg("out_max") = 1024, py::arg("b_is_nk") = true,
      py::arg("k") = py::none(), py::arg("ldc") = py::none(), py::arg("fill") = 0, py::arg("isa") = "scalar",
      thr, py::arg("residual") = py::none(), py::arg("r_scale") = 1.f, py::arg("r_zero_point") = 0,
      py::arg("sum_scale") = 1.f, py::arg("sum_zero_point") = 0, py::arg("sum_min") = -128,
      py::arg("sum_max") = 127,
      "C = requantized A[:, :k] x B (B [N, K] when b_is_nk); C is [M, ldc], columns past N keep `fill`; with "
      "residual (int8 [M, ldc]): qgemm_residual, C = qadd(that, residual) with the residual's (r_) and the "
      "sum's (sum_) quantization and clamp");
  m.def(
      "qconv2d",
      [](const py::array& x, const I8Arr& f, const std::optional<I32Arr>& bias, const FArr& w_scales,
         float a_scale, int32_t a_zp, float out_scale, int32_t out_zp, const std::string& out_dtype,
         int32_t out_min, int32_t out_max, const std::vector<uint32_t>& pads,
         const std::vector<uint32_t>& strides, const std::vector<uint32_t>& dil, uint32_t groups,
         const std::string& isa, size_t threads, bool planes, const std::optional<I8Arr>& residual,
         float r_scale, int32_t r_zp, float sum_scale, int32_t sum_zp, int32_t sum_min, int32_t sum_max) {
        return qconv2d(x, f, bias, w_scales, a_scale, a_zp, out_scale, out_zp, out_dtype, out_min, out_max,
                       pads, strides, dil, groups, isa, threads, Timing{}, planes,
                       Residual{residual, r_scale, sum_scale, r_zp, sum_zp, sum_min, sum_max});
      },
      py::arg("x"), py::arg("filter"), py::arg("bias"), py::arg("w_scales"), py::arg("a_scale"),
      py::arg("a_zero_point"), py::arg("out_scale"), py::arg("out_zero_point"), py::arg("out_dtype") = "int8",
      py::arg("out_min") = -1024, py::arg("out_max") = 1024,
      py::arg("pads") = std::vector<uint32_t>{0, 0, 0, 0}, py::arg("strides") = std::vector<uint32_t>{1, 1},
      py::arg("dilations") = std::vector<uint32_t>{1, 1}, py::arg("groups") = uint32_t{1},
      py::arg("isa") = "scalar", thr, py::arg("planes") = false, py::arg("residual") = py::none(),
      py::arg("r_scale") = 1.f, py::arg("r_zero_point") = 0, py::arg("sum_scale") = 1.f,
      py::arg("sum_zero_point") = 0, py::arg("sum_min") = -128, py::arg("sum_max") = 127,
      "NHWC int8 convolution (IGEMM), filter OHWI [groups * OC, kh, kw, C / groups]; pads (top, right, bottom, "
      "left); quantization as qgemm; planes: the kernel reads an NCHW copy of x where the table reads planes "
      "(qconv2d_reads_nchw); residual (int8, the output's shape): qconv2d_residual, as qgemm's");
  // Timed entries (bench/): u8 or s8 activations (A's dtype) at fixed scales, s8 output clamped to its range.
  m.def(
      "time_qgemm",
      [](const py::array& A, const I8Arr& B, const FArr& w_scales, const std::string& isa, size_t threads,
         size_t repeat) {
        std::vector<double> times;
        qgemm(A, B, std::nullopt, w_scales, 0.02f, A.dtype().kind() == 'u' ? 128 : 0, 0.5f, 0, "int8", -128,
              127, true, std::nullopt, std::nullopt, 0, isa, threads, Timing{repeat, &times});
        return times;
      },
      py::arg("A"), py::arg("B"), py::arg("w_scales"), py::arg("isa") = "best", thr, rep,
      "wall times (s) of `repeat` qgemm calls after a warm-up one; B is [N, K]");
  m.def(
      "time_qconv2d",
      [](const py::array& x, const I8Arr& f, const FArr& w_scales, const std::vector<uint32_t>& pads,
         const std::vector<uint32_t>& strides, const std::string& isa, size_t threads, size_t repeat,
         bool planes) {
        std::vector<double> times;
        qconv2d(x, f, std::nullopt, w_scales, 0.02f, x.dtype().kind() == 'u' ? 128 : 0, 0.5f, 0, "int8", -128,
                127, pads, strides, {1, 1}, 1, isa, threads, Timing{repeat, &times}, planes);
        return times;
      },
      py::arg("x"), py::arg("filter"), py::arg("w_scales"),
      py::arg("pads") = std::vector<uint32_t>{0, 0, 0, 0}, py::arg("strides") = std::vector<uint32_t>{1, 1},
      py::arg("isa") = "best", thr, rep, py::arg("planes") = false,
      "wall times (s) of `repeat` qconv2d calls after a warm-up one (planes: as qconv2d's)");
  m.def(
      "qdwconv2d",
      [](const py::array& x, const I8Arr& f, const std::optional<I32Arr>& bias, const FArr& w_scales,
         float a_scale, int32_t a_zp, float out_scale, int32_t out_zp, const std::string& out_dtype,
         int32_t out_min, int32_t out_max, const std::vector<uint32_t>& pads,
         const std::vector<uint32_t>& strides, const std::vector<uint32_t>& dil, const std::string& isa,
         size_t threads) {
        return qdwconv2d(x, f, bias, w_scales, a_scale, a_zp, out_scale, out_zp, out_dtype, out_min, out_max,
                         pads, strides, dil, isa, threads, Timing{});
      },
      py::arg("x"), py::arg("filter"), py::arg("bias"), py::arg("w_scales"), py::arg("a_scale"),
      py::arg("a_zero_point"), py::arg("out_scale"), py::arg("out_zero_point"), py::arg("out_dtype") = "int8",
      py::arg("out_min") = -1024, py::arg("out_max") = 1024,
      py::arg("pads") = std::vector<uint32_t>{0, 0, 0, 0}, py::arg("strides") = std::vector<uint32_t>{1, 1},
      py::arg("dilations") = std::vector<uint32_t>{1, 1}, py::arg("isa") = "scalar", thr,
      "NHWC int8 depthwise convolution, filter 1HWO [1, kh, kw, C * m]; quantization as qgemm");
  m.def(
      "time_qdwconv2d",
      [](const py::array& x, const I8Arr& f, const FArr& w_scales, const std::vector<uint32_t>& pads,
         const std::vector<uint32_t>& strides, const std::string& isa, size_t threads, size_t repeat) {
        std::vector<double> times;
        qdwconv2d(x, f, std::nullopt, w_scales, 0.02f, x.dtype().kind() == 'u' ? 128 : 0, 0.5f, 0, "int8",
                  -128, 127, pads, strides, {1, 1}, isa, threads, Timing{repeat, &times});
        return times;
      },
      py::arg("x"), py::arg("filter"), py::arg("w_scales"),
      py::arg("pads") = std::vector<uint32_t>{0, 0, 0, 0}, py::arg("strides") = std::vector<uint32_t>{1, 1},
      py::arg("isa") = "best", thr, rep, "wall times (s) of `repeat` qdwconv2d calls after a warm-up one");
  m.def("peak_int8", &peak_int8, thr, py::arg("iters") = size_t{2000000}, py::arg("repeat") = size_t{5},
        py::arg("isa") = "best",
        "GOP/s of independent chains of table `isa`'s int8 multiply step per thread: 12 vpdpbusd on a VNNI "
        "table, else 10 vpmaddubsw + vpmaddwd + vpaddd (the int8 peak that table can reach)");
  m.def(
      "int8_peak_step",
      [](const std::string& isa) { return std::string(int8_peak_step("int8_peak_step", isa).what); },
      py::arg("isa") = "best", "The instructions peak_int8 chains for table `isa`.");
}

}  // namespace webxnn
