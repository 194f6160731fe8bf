// webxnn._testing.kernels' dynamic int8 entries (table.def's quantize_qd8, qd8_gemm), for their tests:
// numpy in, numpy out; isa="scalar"|"avx2"|"vnni-emu"|...|"best" (kernels.tables() lists them), threads=N; bad
// arguments raise webxnn.errors.InputError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>

#include "kernels/kernels.h"
#include "testing/bindings.h"
#include "testing/kernel_args.h"

namespace py = pybind11;

namespace webxnn {
namespace {

using namespace testing;  // kernel_args.h

// (y int8 [rows, cols], zero_points int32 [rows], scales float32 [rows]) of x float32 [rows, cols].
std::tuple<py::array, py::array, py::array> quantize_qd8(const FArr& x, const std::string& isa,
                                                         size_t threads) {
  const char* w = "quantize_qd8";
  if (x.ndim() != 2) bad(w, "x must be 2-D");
  const size_t rows = x.shape(0), cols = x.shape(1);
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  py::array_t<int8_t> y({static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(cols)});
  std::vector<RowQuant> q(rows);
  {
    py::gil_scoped_release nogil;
    t.quantize_qd8(rows, cols, x.data(), y.mutable_data(), q.data(), par);
  }
  py::array_t<int32_t> zp(static_cast<py::ssize_t>(rows));
  py::array_t<float> sc(static_cast<py::ssize_t>(rows));
  for (size_t r = 0; r < rows; ++r) {
    zp.mutable_data()[r] = q[r].zero_point;
    sc.mutable_data()[r] = q[r].scale;
  }
  return {y, zp, sc};
}

// C = qd8_gemm(A[:, :k], B) into an [M, ldc] float array prefilled with `fill` (columns past N must stay).
py::array qd8_gemm(const I8Arr& A, const I32Arr& a_zp, const FArr& a_scale, const I8Arr& B,
                   const std::optional<FArr>& bias, const FArr& w_scales, float out_min, float out_max,
                   bool b_is_nk, std::optional<size_t> k_arg, std::optional<size_t> ldc_arg, float fill,
                   const std::string& isa, size_t threads) {
  const char* w = "qd8_gemm";
  if (A.ndim() != 2 || B.ndim() != 2) bad(w, "A and B must be 2-D");
  const size_t M = A.shape(0), lda = A.shape(1), K = k_arg.value_or(lda);
  const size_t N = b_is_nk ? B.shape(0) : B.shape(1), bk = b_is_nk ? B.shape(1) : B.shape(0);
  if (K > lda || bk != K) bad(w, "K mismatch between A, B and k");
  if (a_zp.ndim() != 1 || a_scale.ndim() != 1 || size_t(a_zp.shape(0)) != M || size_t(a_scale.shape(0)) != M)
    bad(w, "a_zero_point and a_scale must be [M]");
  const size_t ns = static_cast<size_t>(w_scales.size());
  if (w_scales.ndim() != 1 || (ns != 1 && ns != N)) bad(w, "w_scales must be [N] or [1]");
  if (bias && (bias->ndim() != 1 || size_t(bias->shape(0)) != N)) bad(w, "bias must be [N]");
  const size_t ldc = ldc_arg.value_or(N);
  if (ldc < N) bad(w, "ldc < N");
  std::vector<RowQuant> q(M);
  for (size_t m = 0; m < M; ++m) q[m] = RowQuant{a_zp.data()[m], a_scale.data()[m]};
  const KernelTable& t = table_for(w, isa);
  Parallel& par = pool_for(w, threads);
  py::array_t<float> C({static_cast<py::ssize_t>(M), static_cast<py::ssize_t>(ldc)});
  std::fill_n(C.mutable_data(), M * ldc, fill);
  Aligned packed(t.qd8_gemm_packed_size(K, N));
  {
    py::gil_scoped_release nogil;
    t.qd8_gemm_pack(K, N, B.data(), b_is_nk, w_scales.data(), ns, bias ? bias->data() : nullptr, packed.p);
    t.qd8_gemm(M, N, K, A.data(), lda, q.data(), packed.p, C.mutable_data(), ldc, out_min, out_max, par);
  }
  return C;
}

}  // namespace

void bind_qd8(py::module_& m) {
  m.def("quantize_qd8", &quantize_qd8, py::arg("x"), py::arg("isa") = "scalar",
        py::arg("threads") = size_t{1},
        "per-row dynamic int8 quantization: (y int8, zero_points int32, scales float32)");
  m.def("qd8_gemm", &qd8_gemm, py::arg("A"), py::arg("a_zero_point"), py::arg("a_scale"), py::arg("B"),
        py::arg("bias"), py::arg("w_scales"), py::arg("out_min") = -INFINITY, py::arg("out_max") = INFINITY,
        py::arg("b_is_nk") = true, py::arg("k") = py::none(), py::arg("ldc") = py::none(),
        py::arg("fill") = 0.f, py::arg("isa") = "scalar", py::arg("threads") = size_t{1},
        "C fp32 = (A[:, :k] - zp_row) x B * a_scale[row] * w_scale[n] + bias, clamped; C is [M, ldc]");
}

}  // namespace webxnn
