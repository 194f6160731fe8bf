// xnnrun: load a .xnn blob through the C API, run it, print inputs, outputs and latency.
//
//   xnnrun model.xnn [--threads N] [--spin-us N] [--input name=file.bin ...] [--repeat N] [--quiet]
//
// Input files hold raw little-endian tensor bytes of the declared shape. Inputs without a file are filled
// with ones for float types and zeros otherwise, so any blob can be smoke-tested. Exit codes: 0 ok,
// 1 + wx_status on a runtime error, 64 on bad usage. The input and output buffers xnnrun allocates are
// capped (--max-bytes, 4 GiB by default): a blob may declare a 1 TiB input, which must be refused with a
// message, not answered with std::bad_alloc (and an allocation that fails under the cap is caught too).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "kernels/thread_pool.h"
#include "webxnn/runtime.h"

namespace {

const char* dtype_str(wx_dtype t) {
  switch (t) {
    case WX_FLOAT32: return "float32";
    case WX_FLOAT16: return "float16";
    case WX_INT8: return "int8";
    case WX_UINT8: return "uint8";
    case WX_INT32: return "int32";
    case WX_UINT32: return "uint32";
    case WX_INT64: return "int64";
    case WX_UINT64: return "uint64";
  }
  return "?";
}

size_t dtype_size(wx_dtype t) {
  switch (t) {
    case WX_FLOAT16: return 2;
    case WX_INT8:
    case WX_UINT8: return 1;
    case WX_INT64:
    case WX_UINT64: return 8;
    default: return 4;
  }
}

std::string shape_str(uint32_t rank, const int64_t* dims) {
  std::string s = "[";
  for (uint32_t d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(dims[d]);
  return s + "]";
}

size_t numel(uint32_t rank, const int64_t* dims) {
  size_t n = 1;
  for (uint32_t d = 0; d < rank; ++d) n *= static_cast<size_t>(dims[d]);
  return n;
}

// Bytes of a tensor, or SIZE_MAX when that does not fit in size_t (a hostile blob's dims).
size_t tensor_bytes(uint32_t rank, const int64_t* dims, size_t elem) {
  size_t n = elem;
  for (uint32_t d = 0; d < rank; ++d) {
    const size_t v = static_cast<size_t>(dims[d]);
    if (dims[d] < 0 || (v != 0 && n > std::numeric_limits<size_t>::max() / v)) {
      return std::numeric_limits<size_t>::max();
    }
    n *= v;
  }
  return n;
}

constexpr size_t kDefaultMaxBytes = size_t(4) << 30;

// Size of the file at `path`, or -1 when it cannot be opened.
long long file_size(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return -1;
  return static_cast<long long>(f.tellg());
}

constexpr const char* kUsage =
    "usage: xnnrun model.xnn|model.pte [--threads N] [--spin-us N] [--input name=file.bin ...] [--repeat N] [--max-bytes N] "
    "[--quiet]\n";

int usage() {
  std::fputs(kUsage, stderr);
  std::fputs("xnnrun --help says more\n", stderr);
  return 64;
}

// --help: what each option takes and what the tool does with inputs it was not given.
int help() {
  std::fputs(kUsage, stdout);
  std::fputs(
      "\n"
      "Loads a .xnn blob through webxnn's C API (verified as untrusted input), runs it and prints each input and\n"
      "output (name, dtype, shape, the first values) and the load and run times. An ExecuTorch .pte whose work\n"
      "is one XnnpackBackend delegate runs that payload, with the program's named data.\n"
      "\n"
      "  --threads N            threads of the program's pool (0 or absent: one per core)\n"
      "  --spin-us N            how long idle threads poll before sleeping, microseconds (default 100; 0: never)\n"
      "  --input name=file.bin  the input `name` from a file of raw little-endian bytes: the input's declared\n"
      "                         dtype and shape, row-major (C order), nothing else (no header; a .npy file's\n"
      "                         data without its header). Repeat for several inputs. A name may hold '=':\n"
      "                         the split is at the '=' whose left part is one of the model's input names.\n"
      "                         Inputs without --input are filled with ones (float types) or zeros (integers).\n"
      "  --repeat N             run N times (N >= 1) and report the mean and the best time\n"
      "  --max-bytes N          refuse a model whose inputs and outputs together need more than N bytes of\n"
      "                         buffers (default 4294967296 = 4 GiB; a blob may declare tensors up to 1 TiB)\n"
      "  --quiet                print nothing but errors (the exit status says the rest)\n"
      "  -h, --help             this text\n"
      "\n"
      "Exit status: 0 ok, 1 + the wx_status of a load or run error (its message on stderr), 64 bad usage;\n"
      "inputs and outputs over --max-bytes, or buffers that cannot be allocated, exit with 4 (1 +\n"
      "WX_ERROR_UNSUPPORTED: this machine or limit cannot run it).\n",
      stdout);
  return 0;
}

// IEEE half to float (exact), for printing fp16 outputs.
float half_to_float(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.f : 1.f;
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -24);
  if (e == 31)
    return m ? std::numeric_limits<float>::quiet_NaN() : sign * std::numeric_limits<float>::infinity();
  return sign * std::ldexp(static_cast<float>(m | 0x400), e - 25);
}

void print_values(const wx_tensor& t) {
  const size_t n = numel(t.rank, t.dims);
  const size_t show = n < 8 ? n : 8;
  std::printf("  values:");
  for (size_t i = 0; i < show; ++i) {
    switch (t.dtype) {
      case WX_FLOAT32: std::printf(" %g", static_cast<const float*>(t.data)[i]); break;
      case WX_FLOAT16: std::printf(" %g", half_to_float(static_cast<const uint16_t*>(t.data)[i])); break;
      case WX_INT8: std::printf(" %d", static_cast<const int8_t*>(t.data)[i]); break;
      case WX_UINT8: std::printf(" %u", static_cast<const uint8_t*>(t.data)[i]); break;
      case WX_INT32: std::printf(" %d", static_cast<const int32_t*>(t.data)[i]); break;
      case WX_UINT32: std::printf(" %u", static_cast<const uint32_t*>(t.data)[i]); break;
      case WX_INT64:
        std::printf(" %lld", static_cast<long long>(static_cast<const int64_t*>(t.data)[i]));
        break;
      case WX_UINT64:
        std::printf(" %llu", static_cast<unsigned long long>(static_cast<const uint64_t*>(t.data)[i]));
        break;
      default: std::printf(" ?"); break;
    }
  }
  std::printf("%s\n", n > show ? " ..." : "");
}

// The input an `--input` spec names and its file. Input names may hold '=' (ONNX names are free text), so
// the split is at the '=' whose left part is one of the program's input names; when several are (inputs "a"
// and "a=b"), the reading whose file exists wins. Returns an empty string, or the error message.
std::string resolve_input(const std::string& spec, const std::vector<std::string>& names, std::string* name,
                          std::string* file) {
  std::vector<size_t> cuts;  // positions of '=' whose left part is an input name
  for (size_t eq = spec.find('='); eq != std::string::npos; eq = spec.find('=', eq + 1)) {
    if (std::find(names.begin(), names.end(), spec.substr(0, eq)) != names.end()) cuts.push_back(eq);
  }
  if (cuts.size() > 1) {
    std::vector<size_t> present;
    for (const size_t eq : cuts) {
      if (file_size(spec.substr(eq + 1)) >= 0) present.push_back(eq);
    }
    if (present.size() == 1) cuts = present;
  }
  if (cuts.size() == 1) {
    *name = spec.substr(0, cuts[0]);
    *file = spec.substr(cuts[0] + 1);
    return "";
  }
  std::string listed;
  if (cuts.empty()) {
    for (const auto& n : names) listed += (listed.empty() ? "'" : ", '") + n + "'";
    return "--input '" + spec +
           "': no input of the model is named by the part before an '='; its inputs are " +
           (listed.empty() ? std::string("none") : listed);
  }
  for (const size_t eq : cuts) {
    listed += (listed.empty() ? "'" : " or '") + spec.substr(0, eq) + "' from '" + spec.substr(eq + 1) + "'";
  }
  return "--input '" + spec + "' is ambiguous: input " + listed;
}

}  // namespace

int run_main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string model;
  uint32_t threads = 0, flags = 0, spin_us = 0;
  int repeat = 1;
  bool quiet = false;
  size_t max_bytes = kDefaultMaxBytes;
  std::vector<std::string> input_specs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--spin-us" && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (!end || *end || v > webxnn::ThreadPool::kMaxSpinUs) return usage();
      spin_us = static_cast<uint32_t>(v);
      flags |= WX_OPTION_SPIN_US;
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
      if (repeat < 1) repeat = 1;
    } else if (a == "--input" && i + 1 < argc) {
      const std::string spec = argv[++i];
      if (spec.find('=') == std::string::npos) return usage();
      input_specs.push_back(spec);  // split once the program's input names are known
    } else if (a == "--max-bytes" && i + 1 < argc) {
      char* end = nullptr;
      max_bytes = static_cast<size_t>(std::strtoull(argv[++i], &end, 10));
      if (!end || *end || max_bytes == 0) return usage();
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a == "-h" || a == "--help") {
      return help();
    } else if (model.empty() && a.rfind("--", 0) != 0) {
      model = a;
    } else {
      return usage();
    }
  }
  if (model.empty()) return usage();

  wx_options opts{threads, flags, spin_us};
  wx_program* prog = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  wx_status st = wx_load_file(model.c_str(), &opts, &prog);
  const auto t1 = std::chrono::steady_clock::now();
  if (st != WX_OK) {
    std::fprintf(stderr, "xnnrun: load failed (%d): %s\n", static_cast<int>(st), wx_last_error());
    return 1 + static_cast<int>(st);
  }
  if (!quiet) {
    std::printf("loaded %s in %.3f ms\n", model.c_str(),
                std::chrono::duration<double, std::milli>(t1 - t0).count());
  }

  const std::unique_ptr<wx_program, void (*)(wx_program*)> owner(prog, wx_free);  // freed on every path
  const size_t n_in = wx_num_inputs(prog), n_out = wx_num_outputs(prog);
  // every buffer's size first, against the cap, before anything is allocated or read
  size_t buffer_bytes = 0;
  for (size_t k = 0; k < n_in + n_out; ++k) {
    wx_tensor_info info;
    if (k < n_in) {
      wx_input_info(prog, k, &info);
    } else {
      wx_output_info(prog, k - n_in, &info);
    }
    const size_t bytes = tensor_bytes(info.rank, info.dims, dtype_size(info.dtype));
    buffer_bytes = bytes > max_bytes - buffer_bytes ? max_bytes + 1 : buffer_bytes + bytes;
    if (buffer_bytes > max_bytes) {
      std::fprintf(
          stderr,
          "xnnrun: %s '%s' %s %s needs %s bytes; the inputs and outputs together may take at most "
          "%zu bytes (--max-bytes)\n",
          k < n_in ? "input" : "output", info.name, dtype_str(info.dtype),
          shape_str(info.rank, info.dims).c_str(),
          bytes == std::numeric_limits<size_t>::max() ? "more than 2^64" : std::to_string(bytes).c_str(),
          max_bytes);
      return 1 + WX_ERROR_UNSUPPORTED;
    }
  }
  std::vector<std::string> in_names(n_in);
  for (size_t k = 0; k < n_in; ++k) {
    wx_tensor_info info;
    wx_input_info(prog, k, &info);
    in_names[k] = info.name;
  }
  std::map<std::string, std::string> input_files;
  for (const auto& spec : input_specs) {
    std::string name, file;
    const std::string err = resolve_input(spec, in_names, &name, &file);
    if (!err.empty()) {
      std::fprintf(stderr, "xnnrun: %s\n", err.c_str());
      return 1 + WX_ERROR_INPUT;
    }
    input_files[name] = file;
  }
  std::vector<std::vector<unsigned char>> in_bufs(n_in), out_bufs(n_out);
  std::vector<wx_tensor> ins(n_in), outs(n_out);
  int rc = 0;
  for (size_t k = 0; k < n_in && rc == 0; ++k) {
    wx_tensor_info info;
    wx_input_info(prog, k, &info);
    const size_t bytes = numel(info.rank, info.dims) * dtype_size(info.dtype);
    auto& buf = in_bufs[k];
    auto it = input_files.find(info.name);
    if (it != input_files.end()) {
      const long long have = file_size(it->second);
      if (have < 0) {
        std::fprintf(stderr, "xnnrun: cannot read %s\n", it->second.c_str());
        rc = 1 + WX_ERROR_IO;
        break;
      }
      if (static_cast<unsigned long long>(have) != bytes) {  // checked before reading a byte of it
        std::fprintf(stderr, "xnnrun: %s has %lld bytes, input '%s' needs %zu\n", it->second.c_str(), have,
                     info.name, bytes);
        rc = 1 + WX_ERROR_INPUT;
        break;
      }
      std::ifstream f(it->second, std::ios::binary);
      buf.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
      if (buf.size() != bytes) {
        std::fprintf(stderr, "xnnrun: %s changed while it was read\n", it->second.c_str());
        rc = 1 + WX_ERROR_IO;
        break;
      }
    } else {
      buf.assign(bytes + 1, 0);
      if (info.dtype == WX_FLOAT32) {
        const float one = 1.f;
        for (size_t i = 0; i + 4 <= bytes; i += 4) std::memcpy(&buf[i], &one, 4);
      } else if (info.dtype == WX_FLOAT16) {
        const uint16_t one = 0x3c00;
        for (size_t i = 0; i + 2 <= bytes; i += 2) std::memcpy(&buf[i], &one, 2);
      }
    }
    ins[k].data = buf.data();
    ins[k].capacity_bytes = bytes;
    ins[k].dtype = info.dtype;
    ins[k].rank = info.rank;
    std::memcpy(ins[k].dims, info.dims, sizeof info.dims);
    if (!quiet)
      std::printf("input  %s: %s %s\n", info.name, dtype_str(info.dtype),
                  shape_str(info.rank, info.dims).c_str());
  }
  for (size_t k = 0; k < n_out && rc == 0; ++k) {
    wx_tensor_info info;
    wx_output_info(prog, k, &info);
    const size_t bytes = numel(info.rank, info.dims) * dtype_size(info.dtype);
    out_bufs[k].assign(bytes + 1, 0);
    outs[k].data = out_bufs[k].data();
    outs[k].capacity_bytes = bytes;
  }
  double best = 1e300, total = 0;
  for (int r = 0; r < repeat && rc == 0; ++r) {
    const auto a = std::chrono::steady_clock::now();
    st = wx_run(prog, ins.data(), n_in, outs.data(), n_out);
    const auto b = std::chrono::steady_clock::now();
    if (st != WX_OK) {
      std::fprintf(stderr, "xnnrun: run failed (%d): %s\n", static_cast<int>(st), wx_last_error());
      rc = 1 + static_cast<int>(st);
      break;
    }
    const double ms = std::chrono::duration<double, std::milli>(b - a).count();
    best = ms < best ? ms : best;
    total += ms;
  }
  if (rc == 0 && !quiet) {
    for (size_t k = 0; k < n_out; ++k) {
      wx_tensor_info info;
      wx_output_info(prog, k, &info);
      std::printf("output %s: %s %s\n", info.name, dtype_str(outs[k].dtype),
                  shape_str(outs[k].rank, outs[k].dims).c_str());
      print_values(outs[k]);
    }
    std::printf("latency: best %.3f ms, mean %.3f ms over %d run(s)\n", best, total / repeat, repeat);
  }
  return rc;
}

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::bad_alloc&) {
    // the buffers fit under --max-bytes but not in this machine's memory
    std::fputs("xnnrun: out of memory allocating the input and output buffers\n", stderr);
    return 1 + WX_ERROR_UNSUPPORTED;
  }
}
