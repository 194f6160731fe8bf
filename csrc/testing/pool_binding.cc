// webxnn._testing.ThreadPool: the thread pool on its own, for its correctness tests. Each call releases the
// GIL, so several Python threads drive one pool at once.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/thread_pool.h"
#include "runtime/run_mode.h"
#include "testing/bindings.h"
#include "testing/pool_counts.h"

namespace py = pybind11;

namespace webxnn {
namespace {

std::vector<int> run_counts(ThreadPool& pool, size_t tasks, size_t regions, bool session, size_t nested,
                            size_t slow_task, uint32_t slow_us) {
  py::gil_scoped_release nogil;
  return pool_run_counts(pool, tasks, regions, session, nested, slow_task, slow_us);
}

// `callers` C++ threads open a Session of `pool` each and stay in it until all have run one region of 16
// tasks: per caller, pool.threads() as its kernels see it and whether every task ran on the caller's thread.
std::vector<std::vector<size_t>> company(ThreadPool& pool, size_t callers) {
  if (callers == 0 || callers > pool.size())
    throw std::invalid_argument(
        "callers must be 1..pool.size (more would wait for a turn, inside the barrier)");
  py::gil_scoped_release nogil;
  std::atomic<size_t> opened{0}, done{0};
  auto await = [](std::atomic<size_t>& n, size_t want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (n.load() < want && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  };
  std::vector<std::vector<size_t>> out(callers);
  std::vector<std::thread> threads;
  for (size_t c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      ThreadPool::Session s(pool);
      opened.fetch_add(1);
      await(opened, callers);
      const size_t seen = pool.threads();
      const auto me = std::this_thread::get_id();
      std::atomic<size_t> elsewhere{0};
      pool.run(16, [&](size_t) {
        if (std::this_thread::get_id() != me) elsewhere.fetch_add(1);
      });
      out[c] = {seen, elsewhere.load() == 0 ? 1u : 0u, s.alone() ? 1u : 0u};
      done.fetch_add(1);
      await(done, callers);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// Regions in which not every worker took part, out of `regions` sessions of one region each: before each
// session the caller pauses `idle_us` (the workers go to sleep), and inside it `before_us` more before its
// region (longer than the pool's spin: a worker the session woke has gone back to sleep). Each region has one
// task per participant, and each task waits (up to 1 s) until every task has started: with a worker that
// never woke up, the caller's task times out. A lost wake-up costs speed only (the caller runs every task
// it can claim), so this is what shows one. A session that finds the pool backing off (its regions inline
// on the caller for a while, after the caller once waited over 1 ms for a worker: a loaded host) is not
// counted; it waits for the back-off to end and tries again.
size_t absent_workers(ThreadPool& pool, size_t regions, uint32_t idle_us, uint32_t before_us) {
  py::gil_scoped_release nogil;
  const size_t n = pool.size();
  size_t misses = 0, backoffs = 0;
  for (size_t r = 0; r < regions; ++r) {
    std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    ThreadPool::Session s(pool);
    std::this_thread::sleep_for(std::chrono::microseconds(before_us));
    if (pool.threads() < n) {  // backing off: the region would run inline, where no rendezvous can happen
      if (++backoffs > 40) break;  // (a host this loaded proves nothing either way)
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      --r;
      continue;
    }
    std::atomic<size_t> started{0};
    std::atomic<bool> timed_out{false};
    pool.run(n, [&](size_t) {
      started.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (started.load() < n) {
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out.store(true);
          return;
        }
        std::this_thread::yield();
      }
    });
    if (timed_out.load()) ++misses;
  }
  return misses;
}

// Wake-ups issued over `sessions` sessions run one after another, each of one region in which every
// participant busy-waits `work_us`, with `gap_us` between a session's close and the next one's opening (the
// first session, which finds the workers asleep, is not counted).
uint64_t wakeups_in_loop(ThreadPool& pool, size_t sessions, uint32_t work_us, uint32_t gap_us) {
  py::gil_scoped_release nogil;
  uint64_t before = 0;
  for (size_t k = 0; k < sessions + 1; ++k) {
    if (k == 1) before = pool.wakeups();
    {
      ThreadPool::Session s(pool);
      pool.run(pool.size(), [&](size_t) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(work_us);
        while (std::chrono::steady_clock::now() < end) {
        }
      });
    }
    if (gap_us) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
  }
  return pool.wakeups() - before;
}

}  // namespace

void bind_pool(py::module_& m) {
  py::class_<ThreadPool>(m, "ThreadPool")
      .def(py::init<size_t, uint32_t>(), py::arg("threads"), py::arg("spin_us") = ThreadPool::kDefaultSpinUs)
      .def_property_readonly("threads", &ThreadPool::threads)
      .def_property_readonly("size", &ThreadPool::size)
      .def(
          "threads_seen",
          [](ThreadPool& pool) {
            py::gil_scoped_release nogil;
            size_t solo = 0, in_task = 0;
            {
              ThreadPool::Session s(pool, /*solo=*/true);
              solo = pool.threads();
            }
            std::atomic<size_t> seen{0};
            pool.run(2, [&](size_t) { seen.store(pool.threads()); });
            in_task = seen.load();
            return std::vector<size_t>{pool.threads(), solo, in_task};
          },
          "pool.threads() as a kernel sees it: [from the caller, inside a solo Session, inside a task].")
      .def_property_readonly("spin_us", &ThreadPool::spin_us)
      .def("company", &company, py::arg("callers"),
           "`callers` threads in a Session each at once: per caller [pool.threads() seen, all tasks inline, "
           "alone()].")
      .def(
          "absent_workers", &absent_workers, py::arg("regions"), py::arg("idle_us"), py::arg("before_us"),
          "Sessions (of one region) in which a worker did not take part: a lost wake-up (see pool_binding.cc).")
      .def("wakeups_in_loop", &wakeups_in_loop, py::arg("sessions"), py::arg("work_us"), py::arg("gap_us"),
           "Wake-ups of sleeping workers over a loop of sessions (see pool_binding.cc): the linger.")
      .def(
          "skip_regions",
          [](ThreadPool& pool, uint64_t n) {
            py::gil_scoped_release nogil;
            pool.skip_regions(n);
          },
          py::arg("n"), "Counts n regions as run without tasks (the tags' wrap-around, stale shares).")
      .def("run_counts", &run_counts, py::arg("tasks"), py::arg("regions") = 1, py::arg("session") = false,
           py::arg("nested") = 0, py::arg("slow_task") = 0, py::arg("slow_us") = 0,
           "How often each task ran in `regions` regions (each should be `regions`).")
      .def(
          "run_failing",
          [](ThreadPool& pool, size_t tasks, size_t bad) {
            py::gil_scoped_release nogil;
            pool.run(tasks, [&](size_t t) {
              if (t == bad) throw std::runtime_error("task failed");
            });
          },
          py::arg("tasks"), py::arg("bad"),
          "Runs a region whose task `bad` throws (the error is re-raised).");
  // The run-mode policy on its own (runtime/run_mode.h), fed made-up run times.
  py::class_<RunMode>(m, "RunMode")
      .def(py::init<>())
      .def("pick_solo", &RunMode::pick_solo, "True: the next run goes on the calling thread alone.")
      .def("record", &RunMode::record, py::arg("solo"), py::arg("ns"), "The wall time of a run in that mode.")
      .def_readonly_static("explore", &RunMode::kExplore)
      .def_readonly_static("probe_every", &RunMode::kProbeEvery)
      .def_readonly_static("probe_max", &RunMode::kProbeMax)
      .def_readonly_static("clear_loss", &RunMode::kClearLoss)
      .def_readonly_static("probe_budget", &RunMode::kProbeBudget)
      .def_readonly_static("max_stale_ns", &RunMode::kMaxStaleNs)
      .def_static(
          "workers_probe_gap", &RunMode::workers_probe_gap, py::arg("probe_ns"), py::arg("alone_ns"),
          "Runs from a probe of the workers that took probe_ns to the next (the caller alone: alone_ns).")
      .def_readonly_static("keep", &RunMode::kKeep);
}

}  // namespace webxnn
