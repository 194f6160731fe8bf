// Arena placement. Three strategies, all over the same (size, lifetime) tensors:
//
//  * Greedy by size (the default): biggest first, each at the lowest offset that does not overlap a placed
//    tensor whose lifetime intersects its own. Tight: MobileNetV2 4.0 MB, MiniLM 2.0 MB.
//  * Centred slots (several threads): biggest first, each into the first slot whose tensors all have
//    lifetimes disjoint from its own, centred in it; a new slot at the end of the arena otherwise. Why: the
//    kernels split an op's rows evenly over the threads, in order, so thread 0 writes the first half of
//    every output and thread 1 the second. When a tensor is placed where another of a different size lived,
//    the line where thread 1's half begins moves, and a band of lines last written by one core is written by
//    the other: each such store fetches the line from the other core's cache. With tensors centred on their
//    slot's middle, the lower half of a slot always belongs to thread 0's rows. Measured on MobileNetV2 at 2
//    threads: its fourteen 14x14 and 7x7 depthwise steps, which do little arithmetic per byte, ran 2-6 us
//    (15-25 %) faster each. It costs memory: MobileNetV2's arena 4.0 -> 4.3 MB, MiniLM's 2.0 -> 2.2 MB.
//  * First fit in execution order over a free list (graphs with very many tensors: linear-ish, where the
//    other two are quadratic).
#include "runtime/arena_layout.h"

#include <algorithm>
#include <utility>

#include "runtime/memory.h"

namespace webxnn {
namespace {

constexpr size_t kGreedyMaxTensors = 8192;

bool overlap(const ArenaTensor& a, const ArenaTensor& b) { return !(a.end < b.start || b.end < a.start); }

std::vector<size_t> biggest_first(const std::vector<ArenaTensor>& ts) {
  std::vector<size_t> order(ts.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ts[a].size > ts[b].size; });
  return order;
}

size_t place_greedy(std::vector<ArenaTensor>& ts) {
  size_t arena = 0;
  std::vector<size_t> placed;  // indices into ts, sorted by offset
  for (size_t k : biggest_first(ts)) {
    ArenaTensor& t = ts[k];
    size_t off = 0;
    for (size_t p : placed) {
      const ArenaTensor& o = ts[p];
      if (!overlap(o, t)) continue;
      if (off + t.size <= o.offset) break;
      off = std::max(off, o.offset + o.size);
    }
    t.offset = off;
    placed.insert(std::upper_bound(placed.begin(), placed.end(), k,
                                   [&](size_t a, size_t b) { return ts[a].offset < ts[b].offset; }),
                  k);
    arena = std::max(arena, off + t.size);
  }
  return arena;
}

size_t place_centred(std::vector<ArenaTensor>& ts) {
  struct Slot {
    size_t begin, size;
    std::vector<size_t> members;  // indices into ts, lifetimes pairwise disjoint
  };
  std::vector<Slot> slots;
  size_t arena = 0;
  for (size_t k : biggest_first(ts)) {
    ArenaTensor& t = ts[k];
    Slot* home = nullptr;
    for (Slot& s : slots) {  // sizes only shrink: every slot is big enough
      if (std::none_of(s.members.begin(), s.members.end(), [&](size_t m) { return overlap(ts[m], t); })) {
        home = &s;
        break;
      }
    }
    if (!home) {
      slots.push_back({arena, t.size, {}});
      arena += t.size;
      home = &slots.back();
    }
    t.offset = home->begin + (home->size - t.size) / 2 / kArenaAlignment * kArenaAlignment;
    home->members.push_back(k);
  }
  return arena;
}

size_t place_first_fit(std::vector<ArenaTensor>& ts, size_t steps) {
  size_t arena = 0;
  std::vector<std::pair<size_t, size_t>> free_list;  // (offset, size), sorted by offset
  std::vector<std::vector<size_t>> ends_at(steps);
  std::vector<std::vector<size_t>> starts_at(steps);
  for (size_t k = 0; k < ts.size(); ++k) {
    starts_at[ts[k].start].push_back(k);
    ends_at[ts[k].end].push_back(k);
  }
  for (size_t n = 0; n < steps; ++n) {
    for (size_t k : starts_at[n]) {
      ArenaTensor& t = ts[k];
      bool done = false;
      for (size_t f = 0; f < free_list.size(); ++f) {
        if (free_list[f].second >= t.size) {
          t.offset = free_list[f].first;
          free_list[f].first += t.size;
          free_list[f].second -= t.size;
          if (free_list[f].second == 0) free_list.erase(free_list.begin() + static_cast<std::ptrdiff_t>(f));
          done = true;
          break;
        }
      }
      if (!done) {
        t.offset = arena;
        arena += t.size;
      }
    }
    for (size_t k : ends_at[n]) {
      const ArenaTensor& t = ts[k];
      auto it = std::lower_bound(free_list.begin(), free_list.end(), std::make_pair(t.offset, size_t(0)));
      it = free_list.insert(it, {t.offset, t.size});
      // coalesce with neighbours
      if (it + 1 != free_list.end() && it->first + it->second == (it + 1)->first) {
        it->second += (it + 1)->second;
        free_list.erase(it + 1);
      }
      if (it != free_list.begin() && (it - 1)->first + (it - 1)->second == it->first) {
        (it - 1)->second += it->second;
        free_list.erase(it);
      }
    }
  }
  return arena;
}

}  // namespace

size_t place_tensors(std::vector<ArenaTensor>& ts, size_t steps, bool centred) {
  if (ts.size() > kGreedyMaxTensors) return place_first_fit(ts, steps);
  return centred ? place_centred(ts) : place_greedy(ts);
}

}  // namespace webxnn
