// webxnn._testing.ThreadPool: the thread pool on its own, for its correctness tests. Each call releases the
// GIL, so several Python threads drive one pool at once.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <stdexcept>
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
      .def_readonly_static("keep", &RunMode::kKeep);
}

}  // namespace webxnn
