#include "runtime/run_mode.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace webxnn {

bool RunMode::enabled() {
  static const bool on = [] {
    const char* env = std::getenv("WEBXNN_ADAPTIVE");
    return !(env && std::strcmp(env, "0") == 0);
  }();
  return on;
}

uint64_t RunMode::Times::median() const {
  const size_t k = std::min(n, kKeep);
  uint64_t v[kKeep];
  std::copy(ns, ns + k, v);
  std::sort(v, v + k);
  return v[k / 2];
}

bool RunMode::solo_best() const { return solo_.median() < par_.median(); }

bool RunMode::pick_solo() {
  std::lock_guard<std::mutex> lk(mutex_);
  const bool solo = choose();
  solo_runs_ += solo;
  return solo;
}

bool RunMode::choose() {
  const uint64_t run = runs_++;  // 0 = the uncounted first run
  probing_ = false;
  if (run == 0) return false;
  if (run <= kExplore || par_.n == 0 || solo_.n == 0) return run % 2 == 0;  // 1: workers, 2: alone, ...
  if (confirm_ > 0) {
    --confirm_;
    return confirm_solo_;
  }
  const bool best = solo_best();
  // Each mode's probes have their own gap: a 2-thread MobileNetV2 that flipped to the caller alone during a
  // burst of load, with the gap the caller alone's probes had grown to while the workers won, ran ~55 more
  // runs alone after the core came free.
  probing_ = run >= last_probe_ + (best ? workers_gap_ : alone_gap_);
  if (probing_) last_probe_ = run;
  return probing_ ? !best : best;
}

uint64_t RunMode::workers_probe_gap(uint64_t probe_ns, uint64_t alone_ns) {
  if (probe_ns <= alone_ns || alone_ns == 0) return kProbeEvery;
  // Runs alone whose time the probe's loss is kProbeBudget of, within [kProbeEvery, the staleness bound].
  const double want =
      static_cast<double>(probe_ns - alone_ns) / (kProbeBudget * static_cast<double>(alone_ns));
  const uint64_t most = std::max(kProbeEvery, std::min(kProbeMax, kMaxStaleNs / alone_ns));
  // (Clamped as a double: a huge loss over a tiny time must not overflow the conversion.)
  return std::max(kProbeEvery, static_cast<uint64_t>(std::min(want + 1.0, static_cast<double>(most))));
}

RunMode::Stats RunMode::stats() const {
  std::lock_guard<std::mutex> lk(mutex_);
  Stats s;
  s.workers_runs = runs_ - solo_runs_;
  s.alone_runs = solo_runs_;
  s.workers_ns = par_.n ? par_.median() : 0;
  s.alone_ns = solo_.n ? solo_.median() : 0;
  return s;
}

void RunMode::record(bool solo, uint64_t ns) {
  std::lock_guard<std::mutex> lk(mutex_);
  if (!first_done_ && !solo) {
    first_done_ = true;  // the first run: cold, not a figure to keep
    return;
  }
  // A run in the mode not chosen now (a probe, or the confirmation of one), against the chosen mode's median.
  const bool other = runs_ > kExplore + 1 && par_.n > 0 && solo_.n > 0 && solo != solo_best();
  const uint64_t chosen = other ? (solo ? par_ : solo_).median() : 0;
  const bool faster = other && ns < chosen;
  if (other && probing_) {  // a probe's result sets the gap to the next one
    if (solo) {
      const bool clear_loss = static_cast<double>(ns) >= kClearLoss * static_cast<double>(chosen);
      alone_gap_ = clear_loss ? std::min(2 * alone_gap_, kProbeMax) : kProbeEvery;
    } else {
      workers_gap_ = workers_probe_gap(ns, chosen);
    }
  }
  probing_ = false;
  Times& t = solo ? solo_ : par_;
  t.ns[t.n % kKeep] = ns;
  ++t.n;
  if (faster) {
    if (confirm_ == 0 || confirm_solo_ != solo) confirm_ = kKeep - 1, confirm_solo_ = solo;
  } else if (solo == confirm_solo_) {
    confirm_ = 0;  // slower after all, or now the chosen mode itself
  }
}

}  // namespace webxnn
