// webxnn._testing.kernels — numpy-level access to the kernel tables, for kernel tests and benchmarks: the
// table listing, the fp32 GEMM and batch matmul, pooling, element-wise, softmax / normalize, layout entries and
// the FMA peak probe here; the convolutions in conv_binding.cc, the int8 entries in qs8, q8elem and qd8_binding.cc.
// Every entry takes isa="scalar"|"avx2"|"best" and threads=N (a cached ThreadPool per thread count).
// Bad arguments raise webxnn.errors.InputError naming the function and the problem.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
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

// ---------------------------------------------------------------------------------------- gemm / matmul
py::array gemm_t(const FArr& A, const FArr& B, const std::optional<FArr>& bias, bool b_is_nk, Activation act,
                 const std::string& isa, size_t threads, const Timing& tm,
                 const std::optional<FArr>& residual = std::nullopt) {
  const char* w = "gemm";
  need_ndim(w, "A", A, 2);
  need_ndim(w, "B", B, 2);
  const size_t M = A.shape(0), K = A.shape(1);
  const size_t bk = b_is_nk ? B.shape(1) : B.shape(0), N = b_is_nk ? B.shape(0) : B.shape(1);
  if (bk != K) bad(w, "A is [M,K] with K=" + std::to_string(K) + " but B gives K=" + std::to_string(bk));
  if (bias && (bias->ndim() != 1 || static_cast<size_t>(bias->shape(0)) != N))
    bad(w, "bias must have shape (" + std::to_string(N) + ",)");
  if (residual && (residual->ndim() != 2 || static_cast<size_t>(residual->shape(0)) != M ||
                   static_cast<size_t>(residual->shape(1)) != N))
    bad(w, "residual must have shape (" + std::to_string(M) + ", " + std::to_string(N) + ")");
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto C = make_out<float>({M, N});
  Aligned packed(t.gemm_packed_size(K, N));
  {
    py::gil_scoped_release nogil;
    t.gemm_pack(K, N, B.data(), b_is_nk, bias ? bias->data() : nullptr, packed.p);
    if (residual) {
      run_timed(tm, par, [&] {
        t.gemm_residual(M, N, K, A.data(), K, packed.p, residual->data(), N, C.mutable_data(), N, act, par);
      });
    } else {
      run_timed(tm, par, [&] { t.gemm(M, N, K, A.data(), K, packed.p, C.mutable_data(), N, act, par); });
    }
  }
  return std::move(C);
}

py::array gemm(const FArr& A, const FArr& B, const std::optional<FArr>& bias, bool b_is_nk, float mn,
               float mx, const std::string& isa, size_t threads, const std::optional<FArr>& residual,
               const std::string& post) {
  return gemm_t(A, B, bias, b_is_nk, act_of("gemm", mn, mx, post), isa, threads, Timing{}, residual);
}

py::array batch_matmul(const FArr& A, const FArr& B, bool b_is_nk, const std::string& isa, size_t threads) {
  const char* w = "batch_matmul";
  if ((A.ndim() != 2 && A.ndim() != 3) || (B.ndim() != 2 && B.ndim() != 3))
    bad(w, "A and B must be 2-D or 3-D");
  const size_t ab = A.ndim() == 3 ? A.shape(0) : 1, bb = B.ndim() == 3 ? B.shape(0) : 1;
  const py::ssize_t ao = A.ndim() - 2, bo = B.ndim() - 2;
  const size_t M = A.shape(ao), K = A.shape(ao + 1);
  const size_t bk = b_is_nk ? B.shape(bo + 1) : B.shape(bo), N = b_is_nk ? B.shape(bo) : B.shape(bo + 1);
  if (bk != K) bad(w, "inner dimensions differ: " + std::to_string(K) + " vs " + std::to_string(bk));
  if (ab != bb && ab != 1 && bb != 1) bad(w, "batch dimensions do not broadcast");
  const size_t batch = std::max(ab, bb);
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  std::vector<size_t> out_shape = {M, N};
  if (A.ndim() == 3 || B.ndim() == 3) out_shape.insert(out_shape.begin(), batch);
  auto C = make_out<float>(out_shape);
  {
    py::gil_scoped_release nogil;
    t.batch_matmul(batch, M, N, K, A.data(), {ab == 1 ? 0 : M * K, K}, B.data(),
                   {bb == 1 ? 0 : K * N, b_is_nk ? K : N}, b_is_nk, C.mutable_data(), {M * N, N}, par);
  }
  return std::move(C);
}

// batch_matmul on numpy views as they lie in memory (e.g. np.swapaxes of a [tokens, heads, dim] array):
// A [batch, M, K], B [batch, K, N] (or [batch, N, K] when b_is_nk) and the output C [batch, M, N], written in
// place; each with its columns adjacent, rows and batches at any stride.
void batch_matmul_strided(const py::array_t<float>& A, const py::array_t<float>& B, py::array_t<float>& C,
                          bool b_is_nk, const std::string& isa, size_t threads) {
  const char* w = "batch_matmul_strided";
  if (A.ndim() != 3 || B.ndim() != 3 || C.ndim() != 3) bad(w, "A, B and C must be 3-D");
  const auto strides = [&](const py::array& x, const char* name) {
    const auto el = [&](int d) { return static_cast<size_t>(x.strides(d)) / sizeof(float); };
    if (x.strides(2) != static_cast<py::ssize_t>(sizeof(float)) || x.strides(0) < 0 || x.strides(1) < 0)
      bad(w, std::string(name) + ": columns must be adjacent and strides non-negative");
    return MatStrides{el(0), el(1)};
  };
  const size_t batch = C.shape(0), M = C.shape(1), N = C.shape(2), K = A.shape(2);
  const size_t bk = b_is_nk ? B.shape(2) : B.shape(1), bn = b_is_nk ? B.shape(1) : B.shape(2);
  if (A.shape(0) != C.shape(0) || B.shape(0) != C.shape(0) || A.shape(1) != C.shape(1) || bk != K || bn != N)
    bad(w, "shapes disagree");
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  const MatStrides as = strides(A, "A"), bs = strides(B, "B"), cs = strides(C, "C");
  float* c = C.mutable_data();
  py::gil_scoped_release nogil;
  t.batch_matmul(batch, M, N, K, A.data(), as, B.data(), bs, b_is_nk, c, cs, par);
}

// ---------------------------------------------------------------------------------------- pooling
py::array pool2d_t(bool is_max, const FArr& x, const Pair& pool, const Pads& pads, const Pair& strides,
                   const Pair& dil, float mn, float mx, const std::string& isa, size_t threads,
                   const Timing& tm) {
  const char* w = is_max ? "max_pool2d" : "avg_pool2d";
  need_ndim(w, "x", x, 4);
  PoolParams p;
  std::tie(p.pad_top, p.pad_right, p.pad_bottom, p.pad_left) = pads;
  p.pool_h = pool.first;
  p.pool_w = pool.second;
  p.stride_h = strides.first;
  p.stride_w = strides.second;
  p.dilation_h = dil.first;
  p.dilation_w = dil.second;
  p.act = act_of(w, mn, mx);
  if (!p.pool_h || !p.pool_w || !p.stride_h || !p.stride_w || !p.dilation_h || !p.dilation_w)
    bad(w, "window, strides and dilations must be >= 1");
  const size_t N = x.shape(0), H = x.shape(1), W = x.shape(2), C = x.shape(3);
  const size_t OH = conv_out(w, H, p.pad_top, p.pad_bottom, p.pool_h, p.stride_h, p.dilation_h);
  const size_t OW = conv_out(w, W, p.pad_left, p.pad_right, p.pool_w, p.stride_w, p.dilation_w);
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto out = make_out<float>({N, OH, OW, C});
  {
    py::gil_scoped_release nogil;
    run_timed(tm, par, [&] {
      (is_max ? t.max_pool2d : t.avg_pool2d)(p, N, H, W, C, x.data(), OH, OW, out.mutable_data(), par);
    });
  }
  return std::move(out);
}

py::array pool2d(bool is_max, const FArr& x, const Pair& pool, const Pads& pads, const Pair& strides,
                 const Pair& dil, float mn, float mx, const std::string& isa, size_t threads) {
  return pool2d_t(is_max, x, pool, pads, strides, dil, mn, mx, isa, threads, Timing{});
}

py::array global_avg_pool(const FArr& x, float mn, float mx, const std::string& isa, size_t threads) {
  const char* w = "global_avg_pool";
  need_ndim(w, "x", x, 4);
  const size_t N = x.shape(0), HW = x.shape(1) * x.shape(2), C = x.shape(3);
  if (HW == 0) bad(w, "empty spatial extent");
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto out = make_out<float>({N, 1, 1, C});
  {
    py::gil_scoped_release nogil;
    t.global_avg_pool(N, HW, C, x.data(), out.mutable_data(), act_of(w, mn, mx), par);
  }
  return std::move(out);
}

// ---------------------------------------------------------------------------------------- element-wise
const std::map<std::string, BinaryOp>& binary_names() {
  static const std::map<std::string, BinaryOp> m = {
      {"add", BinaryOp::kAdd}, {"sub", BinaryOp::kSub},     {"mul", BinaryOp::kMul},
      {"div", BinaryOp::kDiv}, {"min", BinaryOp::kMin},     {"max", BinaryOp::kMax},
      {"pow", BinaryOp::kPow}, {"prelu", BinaryOp::kPrelu}, {"squared_diff", BinaryOp::kSquaredDiff},
  };
  return m;
}

const std::map<std::string, UnaryOp>& unary_names() {
  static const std::map<std::string, UnaryOp> m = {
      {"clamp", UnaryOp::kClamp},
      {"abs", UnaryOp::kAbs},
      {"neg", UnaryOp::kNeg},
      {"floor", UnaryOp::kFloor},
      {"ceil", UnaryOp::kCeil},
      {"sqrt", UnaryOp::kSqrt},
      {"rsqrt", UnaryOp::kRsqrt},
      {"square", UnaryOp::kSquare},
      {"sigmoid", UnaryOp::kSigmoid},
      {"tanh", UnaryOp::kTanh},
      {"exp", UnaryOp::kExp},
      {"log", UnaryOp::kLog},
      {"sin", UnaryOp::kSin},
      {"cos", UnaryOp::kCos},
      {"hardswish", UnaryOp::kHardswish},
      {"leaky_relu", UnaryOp::kLeakyRelu},
      {"elu", UnaryOp::kElu},
      {"gelu", UnaryOp::kGelu},
      {"erf", UnaryOp::kErf},
      {"relu", UnaryOp::kRelu},
      {"sign", UnaryOp::kSign},
      {"round_even", UnaryOp::kRoundEven},
      {"reciprocal", UnaryOp::kReciprocal},
      {"softplus", UnaryOp::kSoftplus},
      {"softsign", UnaryOp::kSoftsign},
      {"tan", UnaryOp::kTan},
      {"hard_sigmoid", UnaryOp::kHardSigmoid},
      {"copy", UnaryOp::kCopy},
  };
  return m;
}

py::array binary(const std::string& op, const FArr& a, const FArr& b, float mn, float mx,
                 const std::string& isa, size_t threads) {
  const char* w = "binary";
  auto it = binary_names().find(op);
  if (it == binary_names().end()) bad(w, "unknown op '" + op + "'");
  const auto sa = shape_of(a), sb = shape_of(b);
  BinaryShape s;
  if (!make_binary_shape(sa.size(), sa.data(), sb.size(), sb.data(), &s))
    bad(w, "shapes " + shape_str(sa) + " and " + shape_str(sb) + " do not broadcast (or need > 6 dims)");
  const size_t r = std::max(sa.size(), sb.size());
  std::vector<size_t> out_shape(r);
  for (size_t i = 0; i < r; ++i) {
    const size_t da = i + sa.size() >= r ? sa[i + sa.size() - r] : 1;
    const size_t db = i + sb.size() >= r ? sb[i + sb.size() - r] : 1;
    out_shape[i] = da == 1 ? db : da;
  }
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto out = make_out<float>(out_shape);
  {
    py::gil_scoped_release nogil;
    t.binary(it->second, s, a.data(), b.data(), out.mutable_data(), act_of(w, mn, mx), par);
  }
  return std::move(out);
}

py::array unary_t(const std::string& op, const FArr& x, float alpha, float beta, float mn, float mx,
                  const std::string& isa, size_t threads, const Timing& tm) {
  const char* w = "unary";
  auto it = unary_names().find(op);
  if (it == unary_names().end()) bad(w, "unknown op '" + op + "'");
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto out = make_out<float>(shape_of(x));
  UnaryParams p;
  p.alpha = alpha;
  p.beta = beta;
  p.act = act_of(w, mn, mx);
  {
    py::gil_scoped_release nogil;
    run_timed(tm, par, [&] {
      t.unary(it->second, static_cast<size_t>(x.size()), x.data(), out.mutable_data(), p, par);
    });
  }
  return std::move(out);
}

py::array unary(const std::string& op, const FArr& x, float alpha, float beta, float mn, float mx,
                const std::string& isa, size_t threads) {
  return unary_t(op, x, alpha, beta, mn, mx, isa, threads, Timing{});
}

py::array softmax_t(const FArr& x, const std::string& isa, size_t threads, const Timing& tm) {
  const char* w = "softmax";
  if (x.ndim() < 1) bad(w, "x must have at least one dimension");
  const size_t cols = x.shape(x.ndim() - 1);
  const size_t rows = cols ? static_cast<size_t>(x.size()) / cols : 0;
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto out = make_out<float>(shape_of(x));
  {
    py::gil_scoped_release nogil;
    run_timed(tm, par, [&] { t.softmax(rows, cols, x.data(), out.mutable_data(), par); });
  }
  return std::move(out);
}

py::array softmax(const FArr& x, const std::string& isa, size_t threads) {
  return softmax_t(x, isa, threads, Timing{});
}

py::array normalize_t(const FArr& x, const std::optional<FArr>& scale, const std::optional<FArr>& bias,
                      float epsilon, const std::string& isa, size_t threads, const Timing& tm) {
  const char* w = "normalize";
  if (x.ndim() < 1) bad(w, "x must have at least one dimension");
  const size_t cols = x.shape(x.ndim() - 1);
  const size_t rows = cols ? static_cast<size_t>(x.size()) / cols : 0;
  for (const auto* v : {&scale, &bias})
    if (*v && ((*v)->ndim() != 1 || static_cast<size_t>((*v)->shape(0)) != cols))
      bad(w, "scale and bias must have shape (" + std::to_string(cols) + ",)");
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  auto out = make_out<float>(shape_of(x));
  {
    py::gil_scoped_release nogil;
    run_timed(tm, par, [&] {
      t.normalize(rows, cols, x.data(), scale ? scale->data() : nullptr, bias ? bias->data() : nullptr,
                  epsilon, out.mutable_data(), par);
    });
  }
  return std::move(out);
}

py::array quantize(const FArr& x, float scale, int32_t zp, const std::string& isa, size_t threads) {
  const KernelTable& t = table_for("quantize", isa);
  Parallel& par = pool_for("quantize", threads);
  auto out = make_out<int8_t>(shape_of(x));
  t.quantize_qs8(static_cast<size_t>(x.size()), x.data(), out.mutable_data(), scale, zp, par);
  return std::move(out);
}

py::array dequantize(const I8Arr& q, float scale, int32_t zp, const std::string& isa, size_t threads) {
  const KernelTable& t = table_for("dequantize", isa);
  Parallel& par = pool_for("dequantize", threads);
  auto out = make_out<float>(shape_of(q));
  t.dequantize_qs8(static_cast<size_t>(q.size()), q.data(), out.mutable_data(), scale, zp, par);
  return std::move(out);
}

// ---------------------------------------------------------------------------------------- layout
py::array contiguous(const py::array& x) { return py::array::ensure(x, py::array::c_style); }

py::array transpose(const py::array& x_in, const std::vector<size_t>& perm, size_t threads) {
  const char* w = "transpose";
  py::array x = contiguous(x_in);
  const auto dims = shape_of(x);
  if (perm.size() != dims.size() || dims.size() > 8) bad(w, "perm must list every dim (rank <= 8)");
  std::vector<bool> seen(dims.size(), false);
  for (size_t p : perm) {
    if (p >= dims.size() || seen[p]) bad(w, "perm is not a permutation");
    seen[p] = true;
  }
  std::vector<py::ssize_t> out_shape(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) out_shape[i] = static_cast<py::ssize_t>(dims[perm[i]]);
  py::array out(x.dtype(), out_shape);
  Parallel& par = pool_for(w, threads);
  {
    py::gil_scoped_release nogil;
    transpose_bytes(x.itemsize(), dims.size(), dims.data(), perm.data(), x.data(), out.mutable_data(), par);
  }
  return out;
}

py::array slice(const py::array& x_in, const std::vector<size_t>& offsets, const std::vector<size_t>& sizes) {
  const char* w = "slice";
  py::array x = contiguous(x_in);
  const auto dims = shape_of(x);
  if (offsets.size() != dims.size() || sizes.size() != dims.size() || dims.size() > 8)
    bad(w, "offsets/sizes must match the rank (<= 8)");
  for (size_t i = 0; i < dims.size(); ++i)
    if (offsets[i] > dims[i] || sizes[i] > dims[i] - offsets[i]) bad(w, "slice out of bounds");
  py::array out(x.dtype(), std::vector<py::ssize_t>(sizes.begin(), sizes.end()));
  slice_bytes(x.itemsize(), dims.size(), dims.data(), offsets.data(), sizes.data(), x.data(),
              out.mutable_data());
  return out;
}

py::array pad(const py::array& x_in, const std::vector<size_t>& pre, const std::vector<size_t>& post,
              const py::object& value) {
  const char* w = "pad";
  py::array x = contiguous(x_in);
  const auto dims = shape_of(x);
  if (pre.size() != dims.size() || post.size() != dims.size() || dims.size() > 8)
    bad(w, "pre/post must match the rank (<= 8)");
  py::array fill = py::module_::import("numpy").attr("asarray")(value, x.dtype());
  std::vector<py::ssize_t> out_shape(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    out_shape[i] = static_cast<py::ssize_t>(pre[i] + dims[i] + post[i]);
  py::array out(x.dtype(), out_shape);
  pad_bytes(x.itemsize(), dims.size(), dims.data(), pre.data(), post.data(), fill.data(), x.data(),
            out.mutable_data());
  return out;
}

py::array concat(const std::vector<py::array>& xs_in, size_t axis) {
  const char* w = "concat";
  if (xs_in.empty()) bad(w, "no inputs");
  std::vector<py::array> xs;
  for (const auto& x : xs_in) xs.push_back(contiguous(x));
  const auto d0 = shape_of(xs[0]);
  if (axis >= d0.size()) bad(w, "axis out of range");
  std::vector<size_t> out_dims = d0;
  out_dims[axis] = 0;
  for (const auto& x : xs) {
    const auto d = shape_of(x);
    if (d.size() != d0.size() || !x.dtype().is(xs[0].dtype())) bad(w, "inputs differ in rank or dtype");
    for (size_t i = 0; i < d.size(); ++i)
      if (i != axis && d[i] != d0[i]) bad(w, "inputs differ outside the axis");
    out_dims[axis] += d[axis];
  }
  size_t outer = 1;
  for (size_t i = 0; i < axis; ++i) outer *= d0[i];
  std::vector<const void*> ptrs;
  std::vector<size_t> inner;
  for (const auto& x : xs) {
    const auto d = shape_of(x);
    size_t in = x.itemsize();
    for (size_t i = axis; i < d.size(); ++i) in *= d[i];
    ptrs.push_back(x.data());
    inner.push_back(in);
  }
  py::array out(xs[0].dtype(), std::vector<py::ssize_t>(out_dims.begin(), out_dims.end()));
  concat_bytes(xs.size(), ptrs.data(), inner.data(), outer, out.mutable_data());
  return out;
}

// FMA peak of `threads` cores for table `isa`'s fp32 tiles: each thread runs fma_peak_loop(iters) (ymm), or on
// the AVX512-VNNI table avx512_fma_peak_loop (zmm); GFLOP/s of the median of `repeat` runs.
double peak_fma(size_t threads, size_t iters, size_t repeat, const std::string& isa) {
  const char* w = "peak_fma";
  const CpuFeatures& f = cpu_features();
  if (!(f.fma && f.avx2)) bad(w, "this CPU (or build) has no AVX2+FMA");
#if !defined(WEBXNN_HAVE_X86)
  bad(w, "built without the x86 kernels");
#else
  const bool zmm = std::string(table_for(w, isa).name) == "avx512vnni";
  float (*loop)(size_t) = zmm ? internal::avx512_fma_peak_loop : internal::fma_peak_loop;
  Parallel& par = pool_for(w, threads);
  volatile float sink = 0.f;
  const double t = median_run_seconds(par, threads, repeat, [&] { sink = sink + loop(iters); });
  return (zmm ? 384.0 : 192.0) * static_cast<double>(iters) * static_cast<double>(threads) / t * 1e-9;
#endif
}

}  // namespace

void bind_kernels(py::module_& m) {
  const auto [isa, thr, mn, mx] = F32EntryArgs{};
  m.def(
      "tables",
      [] {
        std::vector<std::string> names;
        for (const char* n : {"scalar", "avx2", "avxvnni", "avx512vnni", "vnni-emu"})
          if (kernels_by_name(n)) names.push_back(n);
        return names;
      },
      "the kernel tables this build has and this CPU runs (isa= names)");
  m.def(
      "table_entries",
      [](const std::string& isa) {
        const KernelTable& t = table_for("table_entries", isa);
        std::map<std::string, uintptr_t> entries;
#define WEBXNN_KERNEL(name, ret, params) entries[#name] = reinterpret_cast<uintptr_t>(t.name);
#include "kernels/table.def"
#undef WEBXNN_KERNEL
        return entries;
      },
      py::arg("isa"),
      "table `isa`'s entries by name, as addresses: which tables share a kernel and which have their own");
  m.def(
      "gemm", &gemm, py::arg("A"), py::arg("B"), py::arg("bias") = py::none(), py::arg("b_is_nk") = false, mn,
      mx, isa, thr, py::arg("residual") = py::none(), py::arg("post") = "none",
      "C[M,N] = post(clamp(A[M,K] @ B + bias (+ residual))); B is [K,N], or [N,K] when b_is_nk; post: none, "
      "hardswish, sigmoid or gelu");
  m.def("batch_matmul", &batch_matmul, py::arg("A"), py::arg("B"), py::arg("b_is_nk") = false, isa, thr);
  m.def("batch_matmul_strided", &batch_matmul_strided, py::arg("A"), py::arg("B"), py::arg("C"),
        py::arg("b_is_nk") = false, isa, thr,
        "C = A @ B per batch on the arrays' own strides (columns adjacent); C is written in place");
  m.def(
      "max_pool2d",
      [](const FArr& x, const Pair& pool, const Pads& pads, const Pair& s, const Pair& d, float a, float b,
         const std::string& i, size_t t) { return pool2d(true, x, pool, pads, s, d, a, b, i, t); },
      py::arg("x"), py::arg("pool"), py::arg("pads") = kNoPads, py::arg("strides") = kOnes,
      py::arg("dilations") = kOnes, mn, mx, isa, thr);
  m.def(
      "avg_pool2d",
      [](const FArr& x, const Pair& pool, const Pads& pads, const Pair& s, const Pair& d, float a, float b,
         const std::string& i, size_t t) { return pool2d(false, x, pool, pads, s, d, a, b, i, t); },
      py::arg("x"), py::arg("pool"), py::arg("pads") = kNoPads, py::arg("strides") = kOnes,
      py::arg("dilations") = kOnes, mn, mx, isa, thr);
  m.def("global_avg_pool", &global_avg_pool, py::arg("x"), mn, mx, isa, thr, "[N,H,W,C] -> [N,1,1,C]");
  m.def("binary", &binary, py::arg("op"), py::arg("a"), py::arg("b"), mn, mx, isa, thr,
        "numpy-broadcasting binary op: add sub mul div min max pow prelu squared_diff");
  m.def("unary", &unary, py::arg("op"), py::arg("x"), py::arg("alpha") = 0.f, py::arg("beta") = 0.f, mn, mx,
        isa, thr);
  m.def("softmax", &softmax, py::arg("x"), isa, thr, "softmax over the last dim");
  m.def(
      "normalize",
      [](const FArr& x, const std::optional<FArr>& g, const std::optional<FArr>& b, float eps,
         const std::string& i, size_t t) { return normalize_t(x, g, b, eps, i, t, Timing{}); },
      py::arg("x"), py::arg("scale") = py::none(), py::arg("bias") = py::none(), py::arg("epsilon") = 1e-5f,
      isa, thr, "layer norm over the last dim: (x - mean) / sqrt(var + epsilon) * scale + bias");
  m.def("quantize", &quantize, py::arg("x"), py::arg("scale"), py::arg("zero_point"), isa, thr);
  m.def("dequantize", &dequantize, py::arg("q"), py::arg("scale"), py::arg("zero_point"), isa, thr);
  m.def("transpose", &transpose, py::arg("x"), py::arg("perm"), thr,
        "out dim i = in dim perm[i] (any dtype)");
  m.def("slice", &slice, py::arg("x"), py::arg("offsets"), py::arg("sizes"));
  m.def("pad", &pad, py::arg("x"), py::arg("pre"), py::arg("post"), py::arg("value") = 0);
  m.def("concat", &concat, py::arg("xs"), py::arg("axis"));
  // ---- benchmark entries: same arguments as the kernels above plus `repeat`; return per-call seconds
  // (weights packed once, outside the timing; one warm-up call first).
  const auto rep = py::arg("repeat") = size_t{10};
  m.def(
      "time_gemm",
      [](const FArr& A, const FArr& B, const std::optional<FArr>& bias, bool nk, float mn, float mx,
         const std::string& i, size_t t, size_t r) {
        std::vector<double> times;
        gemm_t(A, B, bias, nk, act_of("time_gemm", mn, mx), i, t, Timing{r, &times});
        return times;
      },
      py::arg("A"), py::arg("B"), py::arg("bias") = py::none(), py::arg("b_is_nk") = false, mn, mx, isa, thr,
      rep);
  m.def(
      "time_max_pool2d",
      [](const FArr& x, const Pair& pool, const Pads& pads, const Pair& s, const std::string& i, size_t t,
         size_t r) {
        std::vector<double> times;
        pool2d_t(true, x, pool, pads, s, Pair{1, 1}, -kInf, kInf, i, t, Timing{r, &times});
        return times;
      },
      py::arg("x"), py::arg("pool"), py::arg("pads") = kNoPads, py::arg("strides") = kOnes, isa, thr, rep);
  m.def(
      "time_unary",
      [](const std::string& op, const FArr& x, const std::string& i, size_t t, size_t r) {
        std::vector<double> times;
        unary_t(op, x, 0.f, 0.f, -kInf, kInf, i, t, Timing{r, &times});
        return times;
      },
      py::arg("op"), py::arg("x"), isa, thr, rep);
  m.def(
      "time_softmax",
      [](const FArr& x, const std::string& i, size_t t, size_t r) {
        std::vector<double> times;
        softmax_t(x, i, t, Timing{r, &times});
        return times;
      },
      py::arg("x"), isa, thr, rep);
  m.def(
      "time_normalize",
      [](const FArr& x, const std::optional<FArr>& g, const std::optional<FArr>& b, const std::string& i,
         size_t t, size_t r) {
        std::vector<double> times;
        normalize_t(x, g, b, 1e-5f, i, t, Timing{r, &times});
        return times;
      },
      py::arg("x"), py::arg("scale") = py::none(), py::arg("bias") = py::none(), isa, thr, rep);
  m.def("peak_fma", &peak_fma, thr, py::arg("iters") = size_t{2000000}, py::arg("repeat") = size_t{5},
        py::arg("isa") = "avx2",
        "GFLOP/s of 12 independent FMA chains per thread on table `isa`'s fp32 vectors (8 wide; 16 on "
        "avx512vnni): the attainable fp32 peak of that table's tiles");
  m.def("binary_ops", [] {
    std::vector<std::string> v;
    for (const auto& kv : binary_names()) v.push_back(kv.first);
    return v;
  });
  m.def("unary_ops", [] {
    std::vector<std::string> v;
    for (const auto& kv : unary_names()) v.push_back(kv.first);
    return v;
  });
}

}  // namespace webxnn
