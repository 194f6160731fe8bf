// The C API (include/webxnn/runtime.h) over webxnn::Program. No exception crosses this boundary: every
// entry point catches, stores the message in a thread-local and returns a wx_status.
#include "webxnn/runtime.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/thread_pool.h"
#include "runtime/program.h"
#include "runtime/shapes.h"
#include "runtime/shared_pool.h"
#include "runtime/status.h"

struct wx_program {
  std::shared_ptr<webxnn::Program> program;
  // Names handed out by wx_input_info/wx_output_info point into the Program's TensorInfo strings.
};

namespace {

thread_local std::string tl_last_error;

wx_status to_c(const webxnn::Status& s) {
  if (s.ok()) {
    tl_last_error.clear();
    return WX_OK;
  }
  tl_last_error = s.message;
  return static_cast<wx_status>(static_cast<int>(s.code));
}

wx_status set_error(wx_status code, const std::string& msg) {
  tl_last_error = msg;
  return code;
}

// The runtime's options from the C ones; false (and the error set) for flags or values out of range.
bool load_options(const wx_options* o, webxnn::LoadOptions* opts, const char* fn) {
  if (!o) return true;
  constexpr uint32_t kKnown = WX_OPTION_SPIN_US | WX_OPTION_SHARED_POOL;
  if (o->flags & ~kKnown) {
    set_error(WX_ERROR_INVALID_ARGUMENT, std::string(fn) + ": unknown bits in wx_options.flags");
    return false;
  }
  if ((o->flags & WX_OPTION_SPIN_US) && o->spin_us > webxnn::ThreadPool::kMaxSpinUs) {
    set_error(WX_ERROR_INVALID_ARGUMENT, std::string(fn) + ": wx_options.spin_us " +
                                             std::to_string(o->spin_us) + " is over " +
                                             std::to_string(webxnn::ThreadPool::kMaxSpinUs));
    return false;
  }
  // (Python's load() refuses the same combination.)
  if ((o->flags & WX_OPTION_SPIN_US) && (o->flags & WX_OPTION_SHARED_POOL)) {
    set_error(WX_ERROR_INVALID_ARGUMENT,
              std::string(fn) +
                  ": spin_us applies to a program's own pool; size the shared one with wx_set_threads");
    return false;
  }
  opts->threads = o->threads;
  if (o->flags & WX_OPTION_SPIN_US) opts->spin_us = o->spin_us;
  opts->shared_pool = (o->flags & WX_OPTION_SHARED_POOL) != 0;
  return true;
}

wx_status fill_info(const webxnn::TensorInfo& t, wx_tensor_info* out) {
  std::memset(out, 0, sizeof *out);
  out->name = t.name.c_str();
  out->dtype = static_cast<wx_dtype>(static_cast<int>(t.dtype));
  out->rank = static_cast<uint32_t>(t.shape.size());
  for (size_t d = 0; d < t.shape.size() && d < WX_MAX_RANK; ++d) {
    out->dims[d] = static_cast<int64_t>(t.shape[d]);
    out->dynamic[d] = d < t.is_dynamic.size() && t.is_dynamic[d] ? 1 : 0;
  }
  return WX_OK;
}

}  // namespace

extern "C" {

const char* wx_version(void) { return "0.1.0"; }

wx_status wx_load_file(const char* path, const wx_options* options, wx_program** out) {
  if (!path || !out)
    return set_error(WX_ERROR_INVALID_ARGUMENT, "wx_load_file: path and out must not be null");
  *out = nullptr;
  webxnn::LoadOptions opts;
  if (!load_options(options, &opts, "wx_load_file")) return WX_ERROR_INVALID_ARGUMENT;
  std::unique_ptr<wx_program> p;
  const webxnn::Status s = webxnn::capture_status([&] {
    p = std::make_unique<wx_program>();
    p->program = webxnn::Program::load_file(path, opts);
  });
  if (s.ok()) *out = p.release();
  return to_c(s);
}

wx_status wx_load_bytes(const void* data, size_t size, const wx_options* options, wx_program** out) {
  if (!out || (!data && size)) {
    return set_error(WX_ERROR_INVALID_ARGUMENT, "wx_load_bytes: data and out must not be null");
  }
  *out = nullptr;
  webxnn::LoadOptions opts;
  if (!load_options(options, &opts, "wx_load_bytes")) return WX_ERROR_INVALID_ARGUMENT;
  std::unique_ptr<wx_program> p;
  const webxnn::Status s = webxnn::capture_status([&] {
    p = std::make_unique<wx_program>();
    static const uint8_t kEmpty = 0;
    p->program = webxnn::Program::load_bytes(data ? data : &kEmpty, size, opts);
  });
  if (s.ok()) *out = p.release();
  return to_c(s);
}

void wx_free(wx_program* program) { delete program; }

wx_status wx_set_threads(uint32_t threads, int64_t spin_us) {
  if (spin_us > static_cast<int64_t>(webxnn::ThreadPool::kMaxSpinUs))
    return set_error(WX_ERROR_INVALID_ARGUMENT, "wx_set_threads: spin_us " + std::to_string(spin_us) +
                                                    " is over " +
                                                    std::to_string(webxnn::ThreadPool::kMaxSpinUs));
  const uint32_t spin = webxnn::ThreadPool::resolve_spin_us(spin_us);
  return to_c(webxnn::capture_status([&] { webxnn::set_shared_pool(threads, spin); }));
}

size_t wx_num_inputs(const wx_program* program) { return program ? program->program->inputs().size() : 0; }
size_t wx_num_outputs(const wx_program* program) { return program ? program->program->outputs().size() : 0; }

wx_status wx_input_info(const wx_program* program, size_t index, wx_tensor_info* out) {
  if (!program || !out) return set_error(WX_ERROR_INVALID_ARGUMENT, "wx_input_info: null argument");
  const auto& v = program->program->inputs();
  if (index >= v.size()) {
    return set_error(WX_ERROR_INVALID_ARGUMENT, "wx_input_info: index " + std::to_string(index) +
                                                    " out of range (" + std::to_string(v.size()) +
                                                    " inputs)");
  }
  return fill_info(v[index], out);
}

wx_status wx_output_info(const wx_program* program, size_t index, wx_tensor_info* out) {
  if (!program || !out) return set_error(WX_ERROR_INVALID_ARGUMENT, "wx_output_info: null argument");
  const auto& v = program->program->outputs();
  if (index >= v.size()) {
    return set_error(WX_ERROR_INVALID_ARGUMENT, "wx_output_info: index " + std::to_string(index) +
                                                    " out of range (" + std::to_string(v.size()) +
                                                    " outputs)");
  }
  return fill_info(v[index], out);
}

wx_status wx_run(wx_program* program, const wx_tensor* inputs, size_t num_inputs, wx_tensor* outputs,
                 size_t num_outputs) {
  if (!program) return set_error(WX_ERROR_INVALID_ARGUMENT, "wx_run: program is null");
  const webxnn::Program& prog = *program->program;
  const auto& in_info = prog.inputs();
  const auto& out_info = prog.outputs();
  if (num_inputs != in_info.size() || (num_inputs && !inputs)) {
    return set_error(WX_ERROR_INPUT, "wx_run: expected " + std::to_string(in_info.size()) + " inputs, got " +
                                         std::to_string(num_inputs));
  }
  if (num_outputs != out_info.size() || (num_outputs && !outputs)) {
    return set_error(WX_ERROR_INPUT, "wx_run: expected " + std::to_string(out_info.size()) +
                                         " outputs, got " + std::to_string(num_outputs));
  }
  const webxnn::Status s = webxnn::capture_status([&] {
    std::vector<webxnn::Shape> shapes(num_inputs);
    std::vector<const void*> in_ptrs(num_inputs);
    for (size_t k = 0; k < num_inputs; ++k) {
      const wx_tensor& t = inputs[k];
      const std::string name = "input '" + in_info[k].name + "'";
      if (static_cast<int>(t.dtype) != static_cast<int>(in_info[k].dtype)) {
        webxnn::input_error(name + ": expected dtype " + webxnn::public_dtype_name(in_info[k].dtype) +
                            ", got wx_dtype " + std::to_string(static_cast<int>(t.dtype)));
      }
      if (t.rank > WX_MAX_RANK) webxnn::input_error(name + ": rank " + std::to_string(t.rank) + " exceeds 8");
      for (uint32_t d = 0; d < t.rank; ++d) {
        if (t.dims[d] < 0) webxnn::input_error(name + ": negative dim " + std::to_string(t.dims[d]));
        shapes[k].push_back(static_cast<size_t>(t.dims[d]));
      }
      in_ptrs[k] = t.data;
    }
    std::shared_ptr<const webxnn::Plan> plan = prog.plan_for(shapes);  // validates the shapes
    for (size_t k = 0; k < num_inputs; ++k) {
      const size_t need = webxnn::numel(shapes[k]) * webxnn::public_dtype_size(in_info[k].dtype);
      if (need && !inputs[k].data) webxnn::input_error("input '" + in_info[k].name + "': data is null");
      if (inputs[k].capacity_bytes != 0 && inputs[k].capacity_bytes < need) {
        webxnn::input_error("input '" + in_info[k].name + "': needs " + std::to_string(need) +
                            " bytes, buffer has " + std::to_string(inputs[k].capacity_bytes));
      }
    }
    std::vector<void*> out_ptrs(num_outputs);
    const std::vector<webxnn::Shape> out_shapes = prog.output_shapes(*plan);
    for (size_t k = 0; k < num_outputs; ++k) {
      const size_t need = prog.output_bytes(*plan, k);
      if (need && !outputs[k].data) webxnn::input_error("output '" + out_info[k].name + "': data is null");
      if (outputs[k].capacity_bytes < need) {
        webxnn::input_error("output '" + out_info[k].name + "': needs " + std::to_string(need) +
                            " bytes, buffer has " + std::to_string(outputs[k].capacity_bytes));
      }
      out_ptrs[k] = outputs[k].data;
    }
    prog.run(*plan, in_ptrs.data(), out_ptrs.data());
    for (size_t k = 0; k < num_outputs; ++k) {
      outputs[k].dtype = static_cast<wx_dtype>(static_cast<int>(out_info[k].dtype));
      outputs[k].rank = static_cast<uint32_t>(out_shapes[k].size());
      for (size_t d = 0; d < WX_MAX_RANK; ++d) {
        outputs[k].dims[d] = d < out_shapes[k].size() ? static_cast<int64_t>(out_shapes[k][d]) : 0;
      }
    }
  });
  return to_c(s);
}

const char* wx_last_error(void) { return tl_last_error.c_str(); }

}  // extern "C"
