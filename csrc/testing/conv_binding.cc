// webxnn._testing.kernels' fp32 convolution entries — numpy-level access to table.def's conv2d, dwconv2d
// (alone, fused with its expand, or the whole MobileNet block) and deconv2d, for their tests and bench/, and
// their timed entries. Every entry takes isa="scalar"|"avx2"|...|"best" and threads=N; bad arguments raise
// webxnn.errors.InputError naming the function and the problem.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "testing/bindings.h"
#include "testing/kernel_args.h"

namespace py = pybind11;

namespace webxnn {
namespace {

using namespace testing;  // kernel_args.h

void set_geometry(const char* w, ConvParams& p, const Pads& pads, const Pair& strides, const Pair& dil) {
  std::tie(p.pad_top, p.pad_right, p.pad_bottom, p.pad_left) = pads;
  p.stride_h = strides.first;
  p.stride_w = strides.second;
  p.dilation_h = dil.first;
  p.dilation_w = dil.second;
  if (!p.stride_h || !p.stride_w || !p.dilation_h || !p.dilation_w)
    bad(w, "strides and dilations must be >= 1");
}

// Whether a conv's x is NCHW ("nchw") rather than NHWC ("nhwc").
bool nchw_layout(const char* w, const std::string& layout) {
  if (layout != "nhwc" && layout != "nchw") bad(w, "layout must be 'nhwc' or 'nchw', not '" + layout + "'");
  return layout == "nchw";
}

// The ConvParams of a dense (grouped) conv or transposed conv from the binding's arguments: x [N,H,W,IC]
// ([N,IC,H,W] when nchw), filter OHWI [OC, kh, kw, IC/groups], bias [OC]; everything checked, with `w` naming
// the function.
ConvParams dense_conv_params(const char* w, const FArr& x, const FArr& f, const std::optional<FArr>& bias,
                             const Pads& pads, const Pair& strides, const Pair& dil, uint32_t groups,
                             Activation act, bool nchw = false) {
  need_ndim(w, "x", x, 4);
  need_ndim(w, "filter", f, 4);
  ConvParams p;
  set_geometry(w, p, pads, strides, dil);
  p.input_nchw = nchw;
  const size_t IC = x.shape(nchw ? 1 : 3), OC = f.shape(0);
  if (groups == 0 || OC % groups) bad(w, "output channels must be a multiple of groups");
  if (IC != groups * static_cast<size_t>(f.shape(3))) bad(w, "x channels != groups * filter input channels");
  if (f.shape(1) == 0 || f.shape(2) == 0) bad(w, "empty kernel");
  if (bias && (bias->ndim() != 1 || static_cast<size_t>(bias->shape(0)) != OC)) bad(w, "bias must be [OC]");
  p.kernel_h = f.shape(1);
  p.kernel_w = f.shape(2);
  p.groups = groups;
  p.group_input_channels = f.shape(3);
  p.group_output_channels = OC / groups;
  p.act = act;
  return p;
}

py::array conv2d_t(const FArr& x, const FArr& f, const std::optional<FArr>& bias, const Pads& pads,
                   const Pair& strides, const Pair& dil, uint32_t groups, Activation act,
                   const std::string& isa, size_t threads, const Timing& tm,
                   const std::optional<FArr>& residual = std::nullopt, bool nchw = false,
                   const std::optional<FArr>& ahead = std::nullopt) {
  const char* w = "conv2d";
  ConvParams p = dense_conv_params(w, x, f, bias, pads, strides, dil, groups, act, nchw);
  if (ahead) p.ahead = {ahead->data(), static_cast<size_t>(ahead->nbytes())};
  const size_t N = x.shape(0), H = x.shape(nchw ? 2 : 1), W = x.shape(nchw ? 3 : 2), OC = f.shape(0);
  const size_t OH = conv_out(w, H, p.pad_top, p.pad_bottom, p.kernel_h, p.stride_h, p.dilation_h);
  const size_t OW = conv_out(w, W, p.pad_left, p.pad_right, p.kernel_w, p.stride_w, p.dilation_w);
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  if (residual && shape_of(*residual) != std::vector<size_t>{N, OH, OW, OC})
    bad(w, "residual must have the output's shape " + shape_str({N, OH, OW, OC}));
  auto out = make_out<float>({N, OH, OW, OC});
  Aligned packed(t.conv2d_packed_size(p));
  {
    py::gil_scoped_release nogil;
    t.conv2d_pack(p, f.data(), bias ? bias->data() : nullptr, packed.p);
    if (residual) {
      run_timed(tm, par, [&] {
        t.conv2d_residual(p, N, H, W, x.data(), OH, OW, packed.p, residual->data(), out.mutable_data(), par);
      });
    } else {
      run_timed(tm, par, [&] { t.conv2d(p, N, H, W, x.data(), OH, OW, packed.p, out.mutable_data(), par); });
    }
  }
  return std::move(out);
}

py::array dwconv2d_t(const FArr& x, const FArr& f, const std::optional<FArr>& bias, const Pads& pads,
                     const Pair& strides, const Pair& dil, Activation act, const std::string& isa,
                     size_t threads, const Timing& tm) {
  const char* w = "dwconv2d";
  need_ndim(w, "x", x, 4);
  need_ndim(w, "filter", f, 4);
  ConvParams p;
  set_geometry(w, p, pads, strides, dil);
  const size_t N = x.shape(0), H = x.shape(1), W = x.shape(2), C = x.shape(3), OC = f.shape(3);
  if (f.shape(0) != 1) bad(w, "filter must be [1, kh, kw, C*depth_multiplier]");
  if (C == 0 || OC == 0 || OC % C) bad(w, "filter channels must be a multiple of the input channels");
  if (f.shape(1) == 0 || f.shape(2) == 0) bad(w, "empty kernel");
  if (bias && (bias->ndim() != 1 || static_cast<size_t>(bias->shape(0)) != OC)) bad(w, "bias must be [OC]");
  p.kernel_h = f.shape(1);
  p.kernel_w = f.shape(2);
  p.groups = C;
  p.group_input_channels = 1;
  p.group_output_channels = OC / C;
  p.act = act;
  const size_t OH = conv_out(w, H, p.pad_top, p.pad_bottom, p.kernel_h, p.stride_h, p.dilation_h);
  const size_t OW = conv_out(w, W, p.pad_left, p.pad_right, p.kernel_w, p.stride_w, p.dilation_w);
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto out = make_out<float>({N, OH, OW, OC});
  Aligned packed(t.dwconv2d_packed_size(p));
  {
    py::gil_scoped_release nogil;
    t.dwconv2d_pack(p, f.data(), bias ? bias->data() : nullptr, packed.p);
    run_timed(tm, par, [&] { t.dwconv2d(p, N, H, W, x.data(), OH, OW, packed.p, out.mutable_data(), par); });
  }
  return std::move(out);
}

py::array conv2d(const FArr& x, const FArr& f, const std::optional<FArr>& bias, const Pads& pads,
                 const Pair& strides, const Pair& dil, uint32_t groups, float mn, float mx,
                 const std::string& isa, size_t threads, const std::optional<FArr>& residual,
                 const std::string& post, const std::string& layout, const std::optional<FArr>& ahead) {
  return conv2d_t(x, f, bias, pads, strides, dil, groups, act_of("conv2d", mn, mx, post), isa, threads,
                  Timing{}, residual, nchw_layout("conv2d", layout), ahead);
}

py::array dwconv2d(const FArr& x, const FArr& f, const std::optional<FArr>& bias, const Pads& pads,
                   const Pair& strides, const Pair& dil, float mn, float mx, const std::string& isa,
                   size_t threads, const std::string& post) {
  return dwconv2d_t(x, f, bias, pads, strides, dil, act_of("dwconv2d", mn, mx, post), isa, threads, Timing{});
}

// A fused block: [expand ->] depthwise [-> project (+ residual)]. x is [N,H,W,cin] with an expand (filter
// [C, cin] + bias, clamp, post), else [N,H,W,C]; the depthwise filter [1, kh, kw, C] (+ bias, clamp, post); the
// project filter [co, C] (+ bias, residual [N,OH,OW,co], clamp).
struct PwArgs {
  const FArr* filter = nullptr;
  const std::optional<FArr>* bias = nullptr;
  Activation act;
};

py::array dwconv2d_block(const char* w, const FArr& x, const PwArgs& ex, const FArr& f,
                         const std::optional<FArr>& bias, const Pads& pads, const Pair& strides,
                         const Pair& dil, Activation act, const PwArgs& pr,
                         const std::optional<FArr>& residual, const std::string& isa, size_t threads) {
  need_ndim(w, "x", x, 4);
  need_ndim(w, "filter", f, 4);
  const size_t N = x.shape(0), H = x.shape(1), W = x.shape(2);
  const size_t C = ex.filter ? static_cast<size_t>(ex.filter->shape(0)) : static_cast<size_t>(x.shape(3));
  if (f.shape(0) != 1 || static_cast<size_t>(f.shape(3)) != C) bad(w, "filter must be [1, kh, kw, C]");
  if (f.shape(1) == 0 || f.shape(2) == 0) bad(w, "empty kernel");
  if (bias && (bias->ndim() != 1 || static_cast<size_t>(bias->shape(0)) != C)) bad(w, "bias must be [C]");
  // Checks a pointwise filter [rows, cols] and its bias [rows]; returns its conv2d geometry.
  auto pointwise = [&](const PwArgs& a, const char* name, const char* bias_name, size_t cols) {
    need_ndim(w, name, *a.filter, 2);
    const size_t rows = a.filter->shape(0);
    if (static_cast<size_t>(a.filter->shape(1)) != cols)
      bad(w, std::string(name) + " must be [output channels, " + std::to_string(cols) + "], not [" +
                 std::to_string(rows) + ", " + std::to_string(a.filter->shape(1)) + "]");
    if (*a.bias && ((*a.bias)->ndim() != 1 || static_cast<size_t>((*a.bias)->shape(0)) != rows))
      bad(w, std::string(bias_name) + " must be [" + std::to_string(rows) + "]");
    ConvParams q;
    q.group_input_channels = cols;
    q.group_output_channels = rows;
    return q;
  };
  ConvParams qe, qp;
  if (ex.filter) qe = pointwise(ex, "pw_filter", "pw_bias", x.shape(3));
  if (pr.filter) qp = pointwise(pr, "project_filter", "project_bias", C);
  ConvParams p;
  set_geometry(w, p, pads, strides, dil);
  p.kernel_h = f.shape(1);
  p.kernel_w = f.shape(2);
  p.groups = C;
  p.act = act;
  const size_t OH = conv_out(w, H, p.pad_top, p.pad_bottom, p.kernel_h, p.stride_h, p.dilation_h);
  const size_t OW = conv_out(w, W, p.pad_left, p.pad_right, p.kernel_w, p.stride_w, p.dilation_w);
  const size_t co = pr.filter ? qp.group_output_channels : C;
  if (residual &&
      (!pr.filter || residual->ndim() != 4 || static_cast<size_t>(residual->shape(0)) != N ||
       static_cast<size_t>(residual->shape(1)) != OH || static_cast<size_t>(residual->shape(2)) != OW ||
       static_cast<size_t>(residual->shape(3)) != co))
    bad(w, "residual must be [" + std::to_string(N) + ", " + std::to_string(OH) + ", " + std::to_string(OW) +
               ", " + std::to_string(co) + "] (the project conv's output)");
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto out = make_out<float>({N, OH, OW, co});
  Aligned pwe(ex.filter ? t.conv2d_packed_size(qe) : 0), pwp(pr.filter ? t.conv2d_packed_size(qp) : 0);
  Aligned dwp(t.dwconv2d_packed_size(p));
  {
    py::gil_scoped_release nogil;
    PointwiseConv expand, project;
    if (ex.filter) {
      t.conv2d_pack(qe, ex.filter->data(), *ex.bias ? (*ex.bias)->data() : nullptr, pwe.p);
      expand = PointwiseConv{static_cast<size_t>(x.shape(3)), pwe.p, ex.act};
    }
    if (pr.filter) {
      t.conv2d_pack(qp, pr.filter->data(), *pr.bias ? (*pr.bias)->data() : nullptr, pwp.p);
      project = PointwiseConv{co, pwp.p, pr.act};
    }
    t.dwconv2d_pack(p, f.data(), bias ? bias->data() : nullptr, dwp.p);
    t.dwconv2d_fused(ex.filter ? &expand : nullptr, p, N, H, W, x.data(), OH, OW, dwp.p,
                     pr.filter ? &project : nullptr, residual ? residual->data() : nullptr,
                     out.mutable_data(), par);
  }
  return std::move(out);
}

// The fused expand -> depthwise pair: x [N,H,W,cin], pw_filter [C, cin] (+ pw_bias, clamp pw_min/pw_max), then
// the depthwise filter [1, kh, kw, C] (+ bias, clamp min/max, post).
py::array conv1x1_dwconv2d(const FArr& x, const FArr& pw, const std::optional<FArr>& pw_bias, const FArr& f,
                           const std::optional<FArr>& bias, const Pads& pads, const Pair& strides,
                           const Pair& dil, float pw_mn, float pw_mx, float mn, float mx,
                           const std::string& post, const std::string& isa, size_t threads) {
  const char* w = "conv1x1_dwconv2d";
  return dwconv2d_block(w, x, PwArgs{&pw, &pw_bias, act_of(w, pw_mn, pw_mx)}, f, bias, pads, strides, dil,
                        act_of(w, mn, mx, post), PwArgs{}, std::nullopt, isa, threads);
}

// The whole block: optional expand, the depthwise conv, then the project conv (+ residual).
py::array dwconv2d_conv1x1(const FArr& x, const std::optional<FArr>& pw, const std::optional<FArr>& pw_bias,
                           const FArr& f, const std::optional<FArr>& bias, const FArr& proj,
                           const std::optional<FArr>& proj_bias, const std::optional<FArr>& residual,
                           const Pads& pads, const Pair& strides, const Pair& dil, float pw_mn, float pw_mx,
                           float mn, float mx, const std::string& post, float proj_mn, float proj_mx,
                           const std::string& isa, size_t threads) {
  const char* w = "dwconv2d_conv1x1";
  PwArgs ex;
  if (pw) ex = PwArgs{&*pw, &pw_bias, act_of(w, pw_mn, pw_mx)};
  return dwconv2d_block(w, x, ex, f, bias, pads, strides, dil, act_of(w, mn, mx, post),
                        PwArgs{&proj, &proj_bias, act_of(w, proj_mn, proj_mx)}, residual, isa, threads);
}

py::array deconv2d_t(const FArr& x, const FArr& f, const std::optional<FArr>& bias, const Pads& pads,
                     const Pair& strides, const Pair& dil, uint32_t groups, const Pair& adj, float mn,
                     float mx, const std::string& isa, size_t threads, const Timing& tm) {
  const char* w = "deconv2d";
  ConvParams p = dense_conv_params(w, x, f, bias, pads, strides, dil, groups, act_of(w, mn, mx));
  const size_t N = x.shape(0), H = x.shape(1), W = x.shape(2), OC = f.shape(0);
  if (H == 0 || W == 0) bad(w, "empty input");
  p.adjustment_h = adj.first;
  p.adjustment_w = adj.second;
  const size_t full_h = (H - 1) * p.stride_h + p.dilation_h * (p.kernel_h - 1) + 1 + p.adjustment_h;
  const size_t full_w = (W - 1) * p.stride_w + p.dilation_w * (p.kernel_w - 1) + 1 + p.adjustment_w;
  if (full_h <= size_t{p.pad_top} + p.pad_bottom || full_w <= size_t{p.pad_left} + p.pad_right)
    bad(w, "padding crops the whole output");
  const size_t OH = full_h - p.pad_top - p.pad_bottom, OW = full_w - p.pad_left - p.pad_right;
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto out = make_out<float>({N, OH, OW, OC});
  Aligned packed(t.deconv2d_packed_size(p));
  {
    py::gil_scoped_release nogil;
    t.deconv2d_pack(p, f.data(), bias ? bias->data() : nullptr, packed.p);
    run_timed(tm, par, [&] { t.deconv2d(p, N, H, W, x.data(), OH, OW, packed.p, out.mutable_data(), par); });
  }
  return std::move(out);
}

py::array deconv2d(const FArr& x, const FArr& f, const std::optional<FArr>& bias, const Pads& pads,
                   const Pair& strides, const Pair& dil, uint32_t groups, const Pair& adj, float mn, float mx,
                   const std::string& isa, size_t threads) {
  return deconv2d_t(x, f, bias, pads, strides, dil, groups, adj, mn, mx, isa, threads, Timing{});
}

}  // namespace

void bind_conv(py::module_& m) {
  const auto [isa, thr, mn, mx] = F32EntryArgs{};
  m.def("conv2d", &conv2d, py::arg("x"), py::arg("filter"), py::arg("bias") = py::none(),
        py::arg("pads") = kNoPads, py::arg("strides") = kOnes, py::arg("dilations") = kOnes,
        py::arg("groups") = uint32_t{1}, mn, mx, isa, thr, py::arg("residual") = py::none(),
        py::arg("post") = "none", py::arg("layout") = "nhwc", py::arg("ahead") = py::none(),
        "NHWC conv (+ residual before the clamp, then post); filter OHWI; pads (top, right, bottom, left); "
        "layout 'nchw': x is [N, C, H, W] (the output stays NHWC); ahead: an array the kernel may prefetch "
        "while it computes (a later step's weights; never changes the result)");
  m.def("dwconv2d", &dwconv2d, py::arg("x"), py::arg("filter"), py::arg("bias") = py::none(),
        py::arg("pads") = kNoPads, py::arg("strides") = kOnes, py::arg("dilations") = kOnes, mn, mx, isa, thr,
        py::arg("post") = "none",
        "NHWC depthwise conv (clamp, then post); filter [1, kh, kw, C*depth_multiplier]");
  m.def("conv1x1_dwconv2d", &conv1x1_dwconv2d, py::arg("x"), py::arg("pw_filter"),
        py::arg("pw_bias") = py::none(), py::arg("filter"), py::arg("bias") = py::none(),
        py::arg("pads") = kNoPads, py::arg("strides") = kOnes, py::arg("dilations") = kOnes,
        py::arg("pw_min") = -kInf, py::arg("pw_max") = kInf, mn, mx, py::arg("post") = "none", isa, thr,
        "dwconv2d(conv1x1(x)): the pointwise conv [C, cin] feeding the depthwise [1, kh, kw, C], fused");
  m.def(
      "dwconv2d_conv1x1", &dwconv2d_conv1x1, py::arg("x"), py::arg("pw_filter") = py::none(),
      py::arg("pw_bias") = py::none(), py::arg("filter"), py::arg("bias") = py::none(),
      py::arg("project_filter"), py::arg("project_bias") = py::none(), py::arg("residual") = py::none(),
      py::arg("pads") = kNoPads, py::arg("strides") = kOnes, py::arg("dilations") = kOnes,
      py::arg("pw_min") = -kInf, py::arg("pw_max") = kInf, mn, mx, py::arg("post") = "none",
      py::arg("project_min") = -kInf, py::arg("project_max") = kInf, isa, thr,
      "conv1x1(dwconv2d([conv1x1(x)])) [+ residual]: MobileNet's block fused; the project filter is [co, C]");
  m.def("deconv2d", &deconv2d, py::arg("x"), py::arg("filter"), py::arg("bias") = py::none(),
        py::arg("pads") = kNoPads, py::arg("strides") = kOnes, py::arg("dilations") = kOnes,
        py::arg("groups") = uint32_t{1}, py::arg("adjustment") = Pair{0, 0}, mn, mx, isa, thr,
        "NHWC transposed conv; filter OHWI [groups*goc, kh, kw, gic]");
  // ---- benchmark entries: the same arguments plus `repeat`; per-call seconds (weights packed once, outside
  // the timing; one warm-up call first).
  const auto rep = py::arg("repeat") = size_t{10};
  m.def(
      "time_conv2d",
      [](const FArr& x, const FArr& f, const Pads& pads, const Pair& s, uint32_t g, const std::string& i,
         size_t t, size_t r, const std::string& layout) {
        std::vector<double> times;
        conv2d_t(x, f, std::nullopt, pads, s, Pair{1, 1}, g, Activation{}, i, t, Timing{r, &times},
                 std::nullopt, nchw_layout("time_conv2d", layout));
        return times;
      },
      py::arg("x"), py::arg("filter"), py::arg("pads") = kNoPads, py::arg("strides") = kOnes,
      py::arg("groups") = uint32_t{1}, isa, thr, rep, py::arg("layout") = "nhwc");
  m.def(
      "time_dwconv2d",
      [](const FArr& x, const FArr& f, const Pads& pads, const Pair& s, const std::string& i, size_t t,
         size_t r) {
        std::vector<double> times;
        dwconv2d_t(x, f, std::nullopt, pads, s, Pair{1, 1}, Activation{}, i, t, Timing{r, &times});
        return times;
      },
      py::arg("x"), py::arg("filter"), py::arg("pads") = kNoPads, py::arg("strides") = kOnes, isa, thr, rep);
  m.def(
      "time_deconv2d",
      [](const FArr& x, const FArr& f, const Pads& pads, const Pair& s, const std::string& i, size_t t,
         size_t r) {
        std::vector<double> times;
        deconv2d_t(x, f, std::nullopt, pads, s, Pair{1, 1}, 1, Pair{0, 0}, -kInf, kInf, i, t,
                   Timing{r, &times});
        return times;
      },
      py::arg("x"), py::arg("filter"), py::arg("pads") = kNoPads, py::arg("strides") = kOnes, isa, thr, rep);
}

}  // namespace webxnn
