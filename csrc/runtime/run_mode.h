// RunMode — whether one run of a plan uses the pool's workers or runs on the calling thread alone, chosen
// from the plan's own measured run times.
//
// Why: with a core taken by another process (or workers asleep after an idle pause), the workers can make a
// whole run slower than the caller alone; the pool's per-region back-off sees only long stalls. Timing whole
// runs in both modes and keeping the faster one makes `threads=2` never slower than `threads=1` for the
// workload actually running, at the price of an occasional probe run in the other mode.
//
// Policy (per plan, i.e. per tuple of input shapes):
//  * the first run uses the workers and is not counted (page faults, cold caches);
//  * the next kExplore runs alternate workers / alone, so each mode has a few times before any choice;
//  * afterwards each run uses the mode whose recent median time is lower, except a probe run now and then,
//    which uses the other mode so its figure follows a machine whose load changed. Probes come kProbeEvery
//    runs apart; each probe of the caller alone that loses clearly (kClearLoss × the workers' median or
//    worse) doubles the gap to the next, up to kProbeMax, and any other probe sets it back to kProbeEvery.
//    On a quiet machine the caller alone is ~1.9× slower than the workers, so probing every 16th run cost
//    5-6 % of the mean run time (hidden from medians, paid by throughput); at a gap of 128 it costs 0.7 %.
//    Probes of the workers (while the caller alone wins: a core taken) are spaced by what they cost and by
//    time, not by how often they lost: the gap is the number of runs over which the last probe's loss (its
//    time minus the caller alone's median) comes to kProbeBudget of their time, at least kProbeEvery runs,
//    at most kMaxStaleNs of runs alone (and kProbeMax runs). A core that comes free is seen within
//    max(kProbeEvery runs, kMaxStaleNs), where staying alone costs ~1.9x per run (until session 19 these
//    probes doubled their gap like the others, and a 2-thread ResNet-50 could run alone ~8 s after a burst
//    of load). With a core busy, a 2-thread MobileNetV2 probed every 16th run lost ~1.5 ms per probe against
//    its 4.9 ms alone: 2-3 % of the mean run time, and 2 threads read 1.02-1.03x of 1 thread; at the
//    kMaxStaleNs bound of 51 runs that is ~0.6 %. Runs of ~16 ms or more keep kProbeEvery.
//    A load that makes the chosen mode slower needs no probe: its own times rise past the other mode's
//    median and the choice flips;
//  * a probe faster than the chosen mode's median is confirmed: the next runs stay in the probed mode (up to
//    kKeep - 1 of them, while each stays faster than that median), so its median is rebuilt from fresh times
//    at once. Without this the loser's median took one sample per kProbeEvery runs, i.e. up to 3 probes (48
//    runs) to follow a change of load: ResNet-50 at 2 threads with a core taken by another process ran ~28
//    runs at 130 ms before settling at 90 (session 16).
// Medians of each mode's last kKeep times: one run preempted by another process must not flip the choice.
// Results do not depend on the mode: a solo run's kernels see one thread (ThreadPool::threads()) and split
// their work for it, and kernels give the same bytes for any split. (They used to split for the pool's size
// and run those tasks inline: 0-4 % slower than a 1-thread Program in CPU time on MobileNetV2.)
// WEBXNN_ADAPTIVE=0 in the environment turns the choice off (always the workers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace webxnn {

class RunMode {
 public:
  static constexpr uint64_t kExplore = 6;
  static constexpr uint64_t kProbeEvery = 16;
  static constexpr uint64_t kProbeMax = 128;
  static constexpr double kClearLoss = 1.25;
  static constexpr double kProbeBudget = 0.005;  // a probe of the workers' loss, over the runs to the next
  static constexpr uint64_t kMaxStaleNs = 250'000'000;  // runs alone between probes of the workers: at most
  static constexpr size_t kKeep = 5;

  // True: run this one on the calling thread alone.
  bool pick_solo();
  // The wall time of a run made in the mode pick_solo() returned.
  void record(bool solo, uint64_t ns);
  // Whether adaptive mode choice is on (WEBXNN_ADAPTIVE, read once).
  static bool enabled();
  // Runs from a probe of the workers that took probe_ns to the next one, the caller alone's median alone_ns.
  static uint64_t workers_probe_gap(uint64_t probe_ns, uint64_t alone_ns);

  // What the choice did so far, for users to see (Program.run_modes): runs picked in each mode, and each
  // mode's median over its last kKeep recorded times (0 before any).
  struct Stats {
    uint64_t workers_runs = 0, alone_runs = 0;
    uint64_t workers_ns = 0, alone_ns = 0;
  };
  Stats stats() const;

 private:
  struct Times {
    uint64_t ns[kKeep] = {};
    size_t n = 0;  // times recorded (the last kKeep are kept)
    uint64_t median() const;
  };
  bool solo_best() const;
  bool choose();  // pick_solo() under the lock

  mutable std::mutex mutex_;
  Times par_, solo_;
  uint64_t solo_runs_ = 0;  // runs pick_solo() sent to the caller alone (the others: runs_ - solo_runs_)
  uint64_t runs_ = 0;
  bool first_done_ = false;
  uint64_t last_probe_ = 0;  // the run that probed last (0: none yet, so the first probe is run kProbeEvery)
  // Runs from that probe to the next: probes of the caller alone (while the workers win), of the workers
  // (while the caller alone wins).
  uint64_t alone_gap_ = kProbeEvery;
  uint64_t workers_gap_ = kProbeEvery;
  bool probing_ = false;  // the last run picked was a probe
  size_t confirm_ = 0;  // runs left to confirm a fast probe in mode confirm_solo_
  bool confirm_solo_ = false;
};

}  // namespace webxnn
