// WX layout kernels (any element type, byte copies): tile, reverse, triangular, pad (4 modes), strided slice.
#include <cstring>

#include "kernels/wx/common.h"

namespace webxnn {
namespace wx {
namespace {

// Runs fn(out_linear, idx) over every element of dims o, in parallel chunks.
template <class F> void for_each_index(Parallel& par, const Dims& o, F&& fn) {
  const Dims zero(o.size(), 0);
  const Dims* st[1] = {&zero};
  parallel_for(par, numel(o), 2048, [&](size_t b, size_t e) {
    Odometer<1> it(o, st);
    it.seek(b);
    for (size_t i = b; i < e; ++i, it.next()) fn(i, it.idx);
  });
}

}  // namespace

void tile(size_t esize, const Dims& x, const Dims& o, const void* px, void* py, Parallel& par) {
  const Dims xs = strides_of(x);
  const uint8_t* bx = static_cast<const uint8_t*>(px);
  uint8_t* by = static_cast<uint8_t*>(py);
  for_each_index(par, o, [&](size_t i, const Dims& idx) {
    size_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] % x[d]) * xs[d];
    std::memcpy(by + i * esize, bx + off * esize, esize);
  });
}

void reverse(size_t esize, const Dims& x, const std::vector<bool>& axes, const void* px, void* py, Parallel& par) {
  const Dims xs = strides_of(x);
  const uint8_t* bx = static_cast<const uint8_t*>(px);
  uint8_t* by = static_cast<uint8_t*>(py);
  for_each_index(par, x, [&](size_t i, const Dims& idx) {
    size_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (axes[d] ? x[d] - 1 - idx[d] : idx[d]) * xs[d];
    std::memcpy(by + i * esize, bx + off * esize, esize);
  });
}

void triangular(size_t esize, const Dims& x, bool upper, int64_t diagonal, const void* px, void* py,
                Parallel& par) {
  const size_t r = x.size();
  const size_t H = r >= 2 ? x[r - 2] : 1, W = r >= 1 ? x[r - 1] : 1;
  const size_t mats = numel(x) / std::max<size_t>(1, H * W);
  const uint8_t* bx = static_cast<const uint8_t*>(px);
  uint8_t* by = static_cast<uint8_t*>(py);
  parallel_for(par, mats * H, 64, [&](size_t b, size_t e) {
    for (size_t row = b; row < e; ++row) {
      const int64_t i = static_cast<int64_t>(row % H);
      for (size_t j = 0; j < W; ++j) {
        const int64_t diff = static_cast<int64_t>(j) - i;
        const bool keep = upper ? diff >= diagonal : diff <= diagonal;
        uint8_t* dst = by + (row * W + j) * esize;
        if (keep) std::memcpy(dst, bx + (row * W + j) * esize, esize);
        else std::memset(dst, 0, esize);
      }
    }
  });
}

void pad(size_t esize, const Dims& x, const std::vector<uint32_t>& pre, const Dims& o, int mode, const void* fill,
         const void* px, void* py, Parallel& par) {
  const Dims xs = strides_of(x);
  const uint8_t* bx = static_cast<const uint8_t*>(px);
  uint8_t* by = static_cast<uint8_t*>(py);
  for_each_index(par, o, [&](size_t i, const Dims& idx) {
    size_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < idx.size(); ++d) {
      const int64_t n = static_cast<int64_t>(x[d]);
      int64_t s = static_cast<int64_t>(idx[d]) - static_cast<int64_t>(pre[d]);
      if (s < 0 || s >= n) {
        if (mode == 0 || n == 0) {
          inside = false;
          break;
        }
        if (mode == 1) {
          s = s < 0 ? 0 : n - 1;
        } else if (mode == 2) {  // reflection: the edge is not repeated
          if (n == 1) {
            s = 0;
          } else {
            const int64_t period = 2 * (n - 1);
            s %= period;
            if (s < 0) s += period;
            if (s >= n) s = period - s;
          }
        } else {  // symmetric: the edge is repeated
          const int64_t period = 2 * n;
          s %= period;
          if (s < 0) s += period;
          if (s >= n) s = period - 1 - s;
        }
      }
      off += static_cast<size_t>(s) * xs[d];
    }
    std::memcpy(by + i * esize, inside ? bx + off * esize : static_cast<const uint8_t*>(fill), esize);
  });
}

void strided_slice(size_t esize, const Dims& x, const std::vector<uint32_t>& starts,
                   const std::vector<uint32_t>& strides, const Dims& o, const void* px, void* py, Parallel& par) {
  const Dims xs = strides_of(x);
  const uint8_t* bx = static_cast<const uint8_t*>(px);
  uint8_t* by = static_cast<uint8_t*>(py);
  for_each_index(par, o, [&](size_t i, const Dims& idx) {
    size_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (starts[d] + idx[d] * strides[d]) * xs[d];
    std::memcpy(by + i * esize, bx + off * esize, esize);
  });
}

}  // namespace wx
}  // namespace webxnn
