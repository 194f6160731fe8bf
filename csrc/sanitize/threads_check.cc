// threads_check: the thread pool and concurrent runs, driven from C++ so a ThreadSanitizer build sees every
// thread (an LD_PRELOADed libtsan inside Python is unreliable). The scenarios of tests/test_runtime_pool.py:
//
//   1. every task of a region runs exactly once: 1-4 threads, spin 0/100 us, inside a Session or not;
//   2. six callers on one pool; 3. a slow task (the back-off); 4. nested regions; 5. a task that throws;
//   6. the blobs given on the command line, loaded on pools of their own (2 and 3 threads) and twice on the
//      shared pool, run from 8 threads at once (dynamic inputs alternate between two shapes, so the plan
//      cache is shared too), each output bit-identical to a single-threaded run; the same through the C API.
//
//   threads_check [blob.xnn ...]      exit 0: all passed; 1: a check failed (the message says which)
//
// Built with -DWEBXNN_TSAN=ON (tests/test_sanitizers.py runs it, marked slow) or -DWEBXNN_SANITIZE=ON.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/thread_pool.h"
#include "runtime/program.h"
#include "runtime/shapes.h"
#include "runtime/shared_pool.h"
#include "testing/pool_counts.h"
#include "webxnn/runtime.h"

namespace webxnn {
namespace {

void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// Runs fn(0..n-1) on n threads at once; the first failure is rethrown.
template <typename Fn>
void in_threads(size_t n, Fn fn) {
  std::vector<std::string> errors(n);
  std::vector<std::thread> ts;
  for (size_t k = 0; k < n; ++k) {
    ts.emplace_back([&, k] {
      try {
        fn(k);
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  for (const auto& e : errors) expect(e.empty(), e);
}

void expect_counts(const std::vector<int>& got, int want, const std::string& what) {
  for (size_t t = 0; t < got.size(); ++t) {
    expect(got[t] == want, what + ": task " + std::to_string(t) + " ran " + std::to_string(got[t]) +
                               " times, not " + std::to_string(want));
  }
}

void pool_scenarios() {
  for (size_t threads = 1; threads <= 4; ++threads) {
    for (uint32_t spin : {0u, 100u}) {
      for (bool session : {false, true}) {
        ThreadPool pool(threads, spin);
        for (size_t tasks : {1, 2, 3, 5, 7, 13, 31, 64, 101}) {
          expect_counts(pool_run_counts(pool, tasks, 10, session), 10, "every task once");
        }
      }
    }
  }
  for (uint32_t spin : {0u, 100u}) {
    ThreadPool pool(3, spin);
    in_threads(6, [&](size_t k) {
      const size_t tasks = 5 + 2 * k;
      expect_counts(pool_run_counts(pool, tasks, 30, k % 2 == 0), 30, "many callers");
    });
  }
  for (size_t threads : {2, 3}) {
    ThreadPool pool(threads, 50);
    expect_counts(pool_run_counts(pool, 9, 15, true, 0, 1, 2000), 15, "a late thread");
    expect_counts(pool_run_counts(pool, 9, 15, false), 15, "after the back-off");
  }
  {
    ThreadPool pool(2, 0);
    expect_counts(pool_run_counts(pool, 9, 5, true, 3), 5, "nested regions");
  }
  {
    ThreadPool pool(2, 0);
    bool caught = false;
    try {
      pool.run(17, [&](size_t t) {
        if (t == 11) throw std::runtime_error("task failed");
      });
    } catch (const std::runtime_error& e) {
      caught = std::strcmp(e.what(), "task failed") == 0;
    }
    expect(caught, "a task's error reaches the caller");
    expect_counts(pool_run_counts(pool, 17, 1, false), 1, "the pool after an error");
  }
}

// Deterministic input bytes: small floats for float32, a byte pattern otherwise.
std::vector<uint8_t> input_bytes(PublicDType dtype, size_t numel, size_t seed) {
  std::vector<uint8_t> b(numel * public_dtype_size(dtype));
  if (dtype == PublicDType::kFloat32) {
    for (size_t i = 0; i < numel; ++i) {
      const float v = static_cast<float>(std::sin(0.37 * static_cast<double>(i + 13 * seed)));
      std::memcpy(b.data() + 4 * i, &v, 4);
    }
  } else {
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>((i * 7 + seed) % 3);
  }
  return b;
}

// One run of `prog` on input set `variant` (0: the declared shapes; 1: dynamic dims halved); the outputs'
// bytes, concatenated.
std::vector<uint8_t> run_once(const Program& prog, size_t variant) {
  std::vector<Shape> shapes;
  std::vector<std::vector<uint8_t>> ins;
  std::vector<const void*> in_ptrs;
  for (const auto& info : prog.inputs()) {
    Shape s = info.shape;
    for (size_t d = 0; d < s.size(); ++d) {
      if (variant == 1 && d < info.is_dynamic.size() && info.is_dynamic[d]) s[d] = s[d] > 1 ? s[d] / 2 : 1;
    }
    ins.push_back(input_bytes(info.dtype, numel(s), variant));
    shapes.push_back(s);
  }
  for (auto& b : ins) in_ptrs.push_back(b.data());
  std::shared_ptr<const Plan> plan = prog.plan_for(shapes);
  std::vector<std::vector<uint8_t>> outs;
  std::vector<void*> out_ptrs;
  for (size_t k = 0; k < prog.outputs().size(); ++k) outs.emplace_back(prog.output_bytes(*plan, k));
  for (auto& b : outs) out_ptrs.push_back(b.data());
  prog.run(*plan, in_ptrs.data(), out_ptrs.data());
  std::vector<uint8_t> all;
  for (auto& b : outs) all.insert(all.end(), b.begin(), b.end());
  return all;
}

void program_scenarios(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::vector<char> blob((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  expect(!blob.empty(), path + ": cannot read");
  LoadOptions one;
  one.threads = 1;
  auto ref = Program::load_bytes(blob.data(), blob.size(), one);
  const std::vector<uint8_t> want[2] = {run_once(*ref, 0), run_once(*ref, 1)};

  set_shared_pool(2, 0);
  std::vector<std::shared_ptr<Program>> programs;
  LoadOptions own2, own3, shared;
  own2.threads = 2;
  own3.threads = 3;
  own3.spin_us = 0;
  shared.shared_pool = true;
  programs.push_back(Program::load_bytes(blob.data(), blob.size(), own2));
  programs.push_back(Program::load_bytes(blob.data(), blob.size(), own3));
  programs.push_back(Program::load_bytes(blob.data(), blob.size(), shared));
  programs.push_back(Program::load_file(path, shared));
  in_threads(8, [&](size_t k) {
    const Program& p = *programs[k % programs.size()];
    for (size_t r = 0; r < 6; ++r) {
      const size_t v = (k + r) % 2;
      expect(run_once(p, v) == want[v], path + ": thread " + std::to_string(k) + " run " + std::to_string(r) +
                                            " differs from the single-threaded run");
    }
  });

  // The C API: one program, four threads, each wx_run with its own buffers (inputs at their declared shapes).
  wx_options opts{2};
  wx_program* prog = nullptr;
  expect(wx_load_file(path.c_str(), &opts, &prog) == WX_OK, path + ": wx_load_file: " + wx_last_error());
  std::unique_ptr<wx_program, void (*)(wx_program*)> owner(prog, wx_free);
  in_threads(4, [&](size_t k) {
    std::vector<std::vector<uint8_t>> ins, outs;
    std::vector<wx_tensor> in_t(wx_num_inputs(prog)), out_t(wx_num_outputs(prog));
    for (size_t i = 0; i < in_t.size(); ++i) {
      wx_tensor_info info;
      expect(wx_input_info(prog, i, &info) == WX_OK, "wx_input_info");
      in_t[i].dtype = info.dtype;
      in_t[i].rank = info.rank;
      size_t n = 1;
      for (uint32_t d = 0; d < info.rank; ++d) n *= static_cast<size_t>(in_t[i].dims[d] = info.dims[d]);
      ins.push_back(input_bytes(static_cast<PublicDType>(info.dtype), n, 0));
      in_t[i].data = ins.back().data();
      in_t[i].capacity_bytes = ins.back().size();
    }
    for (size_t i = 0; i < out_t.size(); ++i) {
      outs.emplace_back(ref->output_bytes(ref->base_plan(), i));
      out_t[i].data = outs.back().data();
      out_t[i].capacity_bytes = outs.back().size();
    }
    for (size_t r = 0; r < 4; ++r) {
      expect(wx_run(prog, in_t.data(), in_t.size(), out_t.data(), out_t.size()) == WX_OK,
             std::string("wx_run: ") + wx_last_error());
      std::vector<uint8_t> all;
      for (auto& b : outs) all.insert(all.end(), b.begin(), b.end());
      expect(all == want[0], path + ": C API thread " + std::to_string(k) + " differs");
    }
  });
}

}  // namespace
}  // namespace webxnn

int main(int argc, char** argv) {
  try {
    webxnn::pool_scenarios();
    std::printf("pool scenarios: ok\n");
    for (int i = 1; i < argc; ++i) {
      webxnn::program_scenarios(argv[i]);
      std::printf("%s: ok\n", argv[i]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "threads_check: %s\n", e.what());
    return 1;
  }
  return 0;
}
