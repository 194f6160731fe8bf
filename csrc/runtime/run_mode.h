// RunMode — whether one run of a plan uses the pool's workers or runs on the calling thread alone, chosen
// from the plan's own measured run times.
//
// Why: with a core taken by another process (or workers asleep after an idle pause), the workers can make a
// whole run slower than the caller alone; the pool's per-region back-off sees only long stalls. Timing whole
// runs in both modes and keeping the faster one makes `threads=2` never slower than `threads=1` for the
// workload actually running, at the price of an occasional probe run in the other mode.
//
// Policy (per plan, i.e. per tuple of input shapes):
//  * the first kWarmup runs use the workers (the first run pays page faults and cold caches);
//  * then one run alone, so both modes have a time;
//  * afterwards each run uses the mode with the lower moving average, except every kProbeEvery-th run, which
//    uses the other mode so its figure follows a machine whose load changed.
// Averages: steady runs weigh 1/4, a probe weighs 1/2 (it is rarer, and must be able to flip the choice).
// Results do not depend on the mode: a solo run executes the same tasks, in order, on one thread.
// WEBXNN_ADAPTIVE=0 in the environment turns the choice off (always the workers).
#pragma once

#include <cstdint>
#include <mutex>

namespace webxnn {

class RunMode {
 public:
  static constexpr uint32_t kWarmup = 2;
  static constexpr uint64_t kProbeEvery = 16;

  // True: run this one on the calling thread alone.
  bool pick_solo();
  // The wall time of a run made in the mode pick_solo() returned.
  void record(bool solo, uint64_t ns);
  // Whether adaptive mode choice is on (WEBXNN_ADAPTIVE, read once).
  static bool enabled();

 private:
  struct Stats {
    double avg_ns = 0;
    uint32_t n = 0;
  };
  std::mutex mutex_;
  Stats par_, solo_;
  uint64_t runs_ = 0;
};

}  // namespace webxnn
