#include "runtime/run_mode.h"

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

bool RunMode::pick_solo() {
  std::lock_guard<std::mutex> lk(mutex_);
  const uint64_t run = ++runs_;
  if (par_.n < kWarmup) return false;
  if (solo_.n == 0) return true;
  const bool solo_best = solo_.avg_ns < par_.avg_ns;
  const bool probe = run % kProbeEvery == 0;
  return probe ? !solo_best : solo_best;
}

void RunMode::record(bool solo, uint64_t ns) {
  std::lock_guard<std::mutex> lk(mutex_);
  Stats& s = solo ? solo_ : par_;
  const double t = static_cast<double>(ns);
  if (!solo && par_.n == 0) {
    par_.n = 1;  // the first run: cold, not a figure to keep
    return;
  }
  if (s.n == 0 || (!solo && par_.n == 1)) {
    s.avg_ns = t;
  } else {
    // A run in the mode currently chosen is one of many; a probe is rare and must be able to flip the choice.
    const bool chosen = (solo_.avg_ns < par_.avg_ns) == solo;
    s.avg_ns += (t - s.avg_ns) * (chosen ? 0.25 : 0.5);
  }
  ++s.n;
}

}  // namespace webxnn
