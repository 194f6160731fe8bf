// webxnn._runtime: the pybind11 module over webxnn::Program. Holds no logic: zero-copy numpy in, new
// numpy arrays out (or the caller's, checked), the GIL released while loading and running, webxnn::Error
// mapped to webxnn.errors.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/thread_pool.h"
#include "python/errors.h"
#include "runtime/program.h"
#include "runtime/shared_pool.h"
#include "runtime/status.h"

namespace py = pybind11;

namespace webxnn {
namespace {

struct DtypeSpec {
  char kind;
  py::ssize_t size;
};

DtypeSpec spec_of(PublicDType t) {
  switch (t) {
    case PublicDType::kFloat32: return {'f', 4};
    case PublicDType::kFloat16: return {'f', 2};
    case PublicDType::kInt8: return {'i', 1};
    case PublicDType::kUint8: return {'u', 1};
    case PublicDType::kInt32: return {'i', 4};
    case PublicDType::kUint32: return {'u', 4};
    case PublicDType::kInt64: return {'i', 8};
    case PublicDType::kUint64: return {'u', 8};
  }
  return {'?', 0};
}

py::list describe(const std::vector<TensorInfo>& infos) {
  py::list r;
  for (const auto& t : infos) {
    py::list shape;
    for (size_t d : t.shape) shape.append(d);
    py::list dyn;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const bool is_dyn = d < t.is_dynamic.size() && t.is_dynamic[d];
      if (!is_dyn)
        dyn.append(py::none());
      else
        dyn.append(escaped_str(t.dynamic[d].empty() ? std::string("?") : t.dynamic[d]));
    }
    r.append(py::make_tuple(escaped_str(t.name), public_dtype_name(t.dtype), shape, dyn));
  }
  return r;
}

// [first, second) byte addresses of an array's memory, as integers: unrelated pointers do not compare.
using Span = std::pair<uintptr_t, uintptr_t>;

Span span_of(const py::array& a) {
  const auto b = reinterpret_cast<uintptr_t>(a.data());
  return {b, b + static_cast<uintptr_t>(a.nbytes())};
}

class PyProgram {
 public:
  explicit PyProgram(std::shared_ptr<Program> p) : p_(std::move(p)) {
    for (const auto& o : p_->outputs()) out_dtypes_.push_back(py::dtype(public_dtype_name(o.dtype)));
  }

  // Holds a read-only Python buffer (and its object) for a Program that borrows its bytes. Released with the
  // GIL held, whichever thread drops the last reference.
  struct BufferOwner {
    std::unique_ptr<py::buffer_info> info;
    py::object obj;
    ~BufferOwner() {
      py::gil_scoped_acquire gil;
      info.reset();
      obj = py::object();
    }
  };

  static LoadOptions load_options(size_t threads, int64_t spin_us, bool shared) {
    LoadOptions opts;
    opts.threads = threads;
    opts.spin_us = spin_us;
    opts.shared_pool = shared;
    return opts;
  }

  static PyProgram from_buffer(const py::buffer& buf, size_t threads, int64_t spin_us, bool shared) {
    auto info = std::make_unique<py::buffer_info>(buf.request());  // requires a contiguous buffer
    const size_t size = static_cast<size_t>(info->size * info->itemsize);
    const void* data = info->ptr;
    const bool readonly = info->readonly;
    const LoadOptions opts = load_options(threads, spin_us, shared);
    std::shared_ptr<Program> p;
    if (readonly && size) {
      // bytes (or a read-only view of them) cannot change: verify and use them in place, no copy.
      auto owner = std::make_shared<BufferOwner>();
      owner->info = std::move(info);
      owner->obj = buf;
      py::gil_scoped_release nogil;
      p = Program::load_borrowed(data, size, std::move(owner), opts);
    } else {
      py::gil_scoped_release nogil;
      p = Program::load_bytes(data, size, opts);
    }
    return PyProgram(std::move(p));
  }

  static PyProgram from_path(const std::string& path, size_t threads, int64_t spin_us, bool shared) {
    const LoadOptions opts = load_options(threads, spin_us, shared);
    std::shared_ptr<Program> p;
    {
      py::gil_scoped_release nogil;
      p = Program::load_file(path, opts);
    }
    return PyProgram(std::move(p));
  }

  py::list run(const py::sequence& inputs, const py::object& out) const {
    return run_impl(inputs, 0, nullptr, nullptr, nullptr, out);
  }

  // Runs `repeat` times and returns one entry per step of the plan (then one per node that needed no step):
  // (node, kind, source, output shape, fused node or -1, [ns per run], serial, ahead, [barrier wait ns per run]).
  py::list profile(const py::sequence& inputs, size_t repeat) const {
    std::shared_ptr<const Plan> plan;
    std::vector<std::vector<uint64_t>> times, waits;
    run_impl(inputs, repeat == 0 ? 1 : repeat, &plan, &times, &waits);
    return describe_plan(*plan, &times, &waits);
  }

  // The declared shapes' plan: (node, kind, source, output shape, [fused nodes], None when the node needs no
  // step else [ns per run] (empty without timings), runs serially, the node whose weights the step prefetches
  // or None, then the barrier waits like the times). The fused nodes: the image transpose a
  // conv reads through, the pointwise producer of a depthwise step and its activation, the depthwise
  // producer of a pointwise step, the transposes a batch matmul reads through, then the consumer whose output
  // the step writes.
  py::list describe_plan(const Plan& plan, const std::vector<std::vector<uint64_t>>* times,
                         const std::vector<std::vector<uint64_t>>* waits = nullptr) const {
    const Model& m = p_->model();
    auto entry = [&](uint32_t node, const Step& st, py::object ns, py::object wait) {
      const Node& nd = m.nodes[node];
      const uint32_t out = st.into != kNoValue ? m.nodes[st.into].outputs[0] : nd.outputs[0];
      py::list fused;
      for (uint32_t f : {st.transpose, st.pre, st.pre_act, st.dw, st.dw_act, st.operand_transpose[0],
                         st.operand_transpose[1], st.into}) {
        if (f != kNoValue) fused.append(f);
      }
      const char* kind = node_type_name(static_cast<uint8_t>(nd.type));
      const std::string src = node < m.node_sources.size() ? m.node_sources[node] : std::string();
      py::list shape;
      for (size_t d : plan.shapes[out]) shape.append(d);
      py::object ahead = st.ahead != kNoValue ? py::object(py::int_(st.ahead)) : py::object(py::none());
      return py::make_tuple(node, kind ? kind : "?", escaped_str(src), shape, fused, ns, st.serial, ahead,
                            wait);
    };
    py::list r;
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      const Step& st = plan.steps[s];
      py::list ns, wait;
      if (times) {
        for (const auto& t : *times) ns.append(t[s]);
      }
      if (waits) {
        for (const auto& w : *waits) wait.append(w[s]);
      }
      r.append(entry(st.node, st, ns, wait));
    }
    Step aliased;
    aliased.serial = true;
    for (uint32_t node : plan.aliased_nodes) r.append(entry(node, aliased, py::none(), py::none()));
    return r;
  }

  // `out`: None, or one entry per output, None or a caller's array to write that output into (checked here:
  // dtype, shape for these inputs, C-contiguous, writable, sharing no memory with an input or another output).
  py::list run_impl(const py::sequence& inputs, size_t repeat, std::shared_ptr<const Plan>* plan_out,
                    std::vector<std::vector<uint64_t>>* times, std::vector<std::vector<uint64_t>>* waits,
                    const py::object& out = py::none()) const {
    const auto& infos = p_->inputs();
    if (static_cast<size_t>(py::len(inputs)) != infos.size()) {
      input_error("expected " + std::to_string(infos.size()) + " inputs, got " +
                  std::to_string(py::len(inputs)));
    }
    std::vector<py::array> arrays;
    std::vector<Shape> shapes;
    std::vector<const void*> in_ptrs;
    for (size_t k = 0; k < infos.size(); ++k) {
      py::object obj = inputs[k];
      const DtypeSpec want = spec_of(infos[k].dtype);
      py::array arr = py::array::ensure(obj, py::array::c_style);
      if (!arr) {
        PyErr_Clear();
        input_error("input '" + infos[k].name + "': expected an array of " +
                    public_dtype_name(infos[k].dtype));
      }
      const py::dtype dt = arr.dtype();
      if (dt.kind() != want.kind || dt.itemsize() != want.size || dt.byteorder() == '>') {
        input_error("input '" + infos[k].name + "': expected dtype " + public_dtype_name(infos[k].dtype) +
                    ", got " + py::str(py::object(dt)).cast<std::string>());
      }
      Shape s;
      for (py::ssize_t d = 0; d < arr.ndim(); ++d) s.push_back(static_cast<size_t>(arr.shape(d)));
      in_ptrs.push_back(arr.data());
      shapes.push_back(std::move(s));
      arrays.push_back(std::move(arr));
    }
    std::shared_ptr<const Plan> plan = p_->plan_for(shapes);
    const std::vector<Shape> out_shapes = p_->output_shapes(*plan);
    py::list result;
    std::vector<void*> out_ptrs;
    const py::list given = out.is_none() ? py::list() : py::list(out);
    if (!out.is_none() && given.size() != out_shapes.size()) {
      input_error("out: expected " + std::to_string(out_shapes.size()) + " entries, got " +
                  std::to_string(given.size()));
    }
    std::vector<Span> spans;  // memory of the inputs and of the given outputs
    for (const py::array& a : arrays) spans.push_back(span_of(a));
    for (size_t k = 0; k < out_shapes.size(); ++k) {
      std::vector<py::ssize_t> shape(out_shapes[k].begin(), out_shapes[k].end());
      if (given.size() && !given[k].is_none()) {
        py::array a = checked_out(given[k], k, shape, spans);
        out_ptrs.push_back(a.mutable_data());
        result.append(a);
        continue;
      }
      py::array a(out_dtypes_[k], shape);
      out_ptrs.push_back(a.mutable_data());
      result.append(a);
    }
    if (times) {
      py::gil_scoped_release nogil;
      times->assign(repeat, std::vector<uint64_t>(plan->steps.size(), 0));
      waits->assign(repeat, std::vector<uint64_t>(plan->steps.size(), 0));
      for (size_t k = 0; k < repeat; ++k)
        p_->run(*plan, in_ptrs.data(), out_ptrs.data(), (*times)[k].data(), (*waits)[k].data());
      *plan_out = plan;
      return result;
    }
    {
      py::gil_scoped_release nogil;
      p_->run(*plan, in_ptrs.data(), out_ptrs.data());
    }
    return result;
  }

  const Program& program() const { return *p_; }

 private:
  // The caller's array for output k, if it can take the output as it is: no conversion, no copy.
  py::array checked_out(const py::handle& obj, size_t k, const std::vector<py::ssize_t>& shape,
                        std::vector<Span>& spans) const {
    const TensorInfo& info = p_->outputs()[k];
    const std::string where = "out['" + info.name + "']: ";
    if (!py::isinstance<py::array>(obj)) {
      input_error(where + "expected a numpy array, got " +
                  std::string(py::str(obj.get_type().attr("__name__"))));
    }
    py::array a = py::reinterpret_borrow<py::array>(obj);
    const py::dtype dt = a.dtype();
    const DtypeSpec want = spec_of(info.dtype);
    if (dt.kind() != want.kind || dt.itemsize() != want.size || dt.byteorder() == '>') {
      input_error(where + "expected dtype " + public_dtype_name(info.dtype) + ", got " +
                  py::str(py::object(dt)).cast<std::string>());
    }
    bool same = static_cast<size_t>(a.ndim()) == shape.size();
    for (size_t d = 0; same && d < shape.size(); ++d) same = a.shape(static_cast<py::ssize_t>(d)) == shape[d];
    if (!same) {
      std::string want_s, got_s;
      for (size_t d = 0; d < shape.size(); ++d) want_s += (d ? ", " : "") + std::to_string(shape[d]);
      for (py::ssize_t d = 0; d < a.ndim(); ++d) got_s += (d ? ", " : "") + std::to_string(a.shape(d));
      input_error(where + "expected shape [" + want_s + "], got [" + got_s + "]");
    }
    if (!(a.flags() & py::array::c_style)) input_error(where + "must be C-contiguous");
    if (!a.writeable()) input_error(where + "is read-only");
    const Span mine = span_of(a);
    for (const Span& s : spans) {
      if (mine.first < s.second && s.first < mine.second) {
        input_error(where + "shares memory with an input or another output; give each output its own array");
      }
    }
    spans.push_back(mine);
    return a;
  }

  std::shared_ptr<Program> p_;
  std::vector<py::dtype> out_dtypes_;
};

}  // namespace
}  // namespace webxnn

PYBIND11_MODULE(_runtime, m) {
  using webxnn::PyProgram;
  m.doc() = "webxnn runtime: load, verify, plan and run .xnn blobs";
  m.attr("MAX_SPIN_US") = webxnn::ThreadPool::kMaxSpinUs;  // the longest spin_us any option may ask for

  webxnn::register_error_translator();

  py::class_<PyProgram>(m, "Program")
      .def_static("from_buffer", &PyProgram::from_buffer, py::arg("data"), py::arg("threads") = 0,
                  py::arg("spin_us") = -1, py::arg("shared_pool") = false,
                  "Load from a bytes-like object (copied into an aligned buffer).")
      .def_static("from_path", &PyProgram::from_path, py::arg("path"), py::arg("threads") = 0,
                  py::arg("spin_us") = -1, py::arg("shared_pool") = false,
                  "Load from a file (memory-mapped; constants are not copied).")
      .def_property_readonly("inputs",
                             [](const PyProgram& p) { return webxnn::describe(p.program().inputs()); })
      .def_property_readonly("outputs",
                             [](const PyProgram& p) { return webxnn::describe(p.program().outputs()); })
      .def_property_readonly("peak_arena_bytes",
                             [](const PyProgram& p) { return p.program().peak_arena_bytes(); })
      .def_property_readonly("packed_weight_bytes",
                             [](const PyProgram& p) { return p.program().packed_weight_bytes(); })
      .def_property_readonly(
          "plan", [](const PyProgram& p) { return p.describe_plan(p.program().base_plan(), nullptr); })
      .def_property_readonly("run_modes",
                             [](const PyProgram& p) {
                               const webxnn::RunMode::Stats s = p.program().base_plan().run_mode.stats();
                               py::dict d;
                               d["workers_runs"] = s.workers_runs;
                               d["alone_runs"] = s.alone_runs;
                               d["workers_ms"] = s.workers_ns * 1e-6;
                               d["alone_ms"] = s.alone_ns * 1e-6;
                               return d;
                             })
      .def_property_readonly("threads", [](const PyProgram& p) { return p.program().threads(); })
      .def_property_readonly("spin_us", [](const PyProgram& p) { return p.program().spin_us(); })
      .def_property_readonly("shared_pool", [](const PyProgram& p) { return p.program().shared_pool(); })
      .def_property_readonly("kernels",
                             [](const PyProgram& p) { return std::string(p.program().kernels_name()); })
      .def(
          "run", &PyProgram::run, py::arg("inputs"), py::arg("out") = py::none(),
          "Run with a list of arrays (in input order); returns a list of arrays (in output order): new ones, or "
          "the entries of `out` (None or one per output: None or an array to write into).")
      .def(
          "profile", &PyProgram::profile, py::arg("inputs"), py::arg("repeat") = 1,
          "Run `repeat` times timing every step: a list of (node, kind, source, output shape, fused node or -1, "
          "[ns per run] or None for a node that needs no step, serial).");

  m.def(
      "set_shared_pool",
      [](size_t threads, int64_t spin_us) {
        py::gil_scoped_release nogil;  // the old pool's workers are joined here
        webxnn::set_shared_pool(threads, webxnn::ThreadPool::resolve_spin_us(spin_us));
      },
      py::arg("threads"), py::arg("spin_us") = -1,
      "Replace the process's shared pool (threads 0 = one per core; spin_us -1 = default).");
  m.def(
      "shared_pool_threads", [] { return webxnn::shared_pool()->size(); },
      "Threads of the process's shared pool (created on first use).");
  m.def(
      "cpu_info",
      [] {
        const webxnn::CpuFeatures& f = webxnn::cpu_features();
        py::dict d;
        d["isa"] = webxnn::best_kernels().name;
        d["int8"] = webxnn::int8_kernels(webxnn::best_kernels());
        d["avx2"] = f.avx2;
        d["fma"] = f.fma;
        d["f16c"] = f.f16c;
        d["avx512f"] = f.avx512f;
        d["avx512vl"] = f.avx512vl;
        d["avx512bw"] = f.avx512bw;
        d["avx512vnni"] = f.avx512vnni;
        d["avxvnni"] = f.avxvnni;
        d["cores"] = f.cores;
        return d;
      },
      "dict(isa, int8, avx2, fma, f16c, avx512f, avx512vl, avx512bw, avx512vnni, avxvnni, cores): what the CPU "
      "offers and the kernel table in use");
}
