// WX layout kernels (any element type, byte copies): tile, reverse, triangular, pad (4 modes), strided slice.
#include <cstring>

#include "kernels/wx/common.h"

namespace webxnn {
namespace wx {
namespace {

// Runs fn(out_linear, idx) over every element of dims o, in parallel chunks.
template <class F>
void for_each_index(Parallel& par, const Dims& o, F&& fn) {
  const Dims zero(o.size(), 0);
  const Dims* st[1] = {&zero};
  parallel_for(par, numel(o), 2048, [&](size_t b, size_t e) {
    Odometer<1> it(o, st);
    it.seek(b);
    for (size_t i = b; i < e; ++i, it.next()) fn(i, it.idx);
  });
}

}  // namespace

namespace {

// The generic byte transpose moves one tiny strided row per pixel; with a compile-time channel count the
// per-pixel work is a few loads and stores the compiler keeps in registers.
template <class T, size_t R>
void few_channels(size_t batch, size_t cols, bool to_rows, const T* x, T* y, Parallel& par) {
  constexpr size_t kGrain = 4096;  // pixels per task
  const size_t chunks = (cols + kGrain - 1) / kGrain;
  parallel_for(par, batch * chunks, 1, [&](size_t b, size_t e) {
    for (size_t u = b; u < e; ++u) {
      const size_t n = u / chunks, j0 = (u % chunks) * kGrain, j1 = std::min(cols, j0 + kGrain);
      const T* xs = x + n * R * cols;
      T* ys = y + n * R * cols;
      if (!to_rows) {
        for (size_t j = j0; j < j1; ++j) {
          for (size_t i = 0; i < R; ++i) ys[j * R + i] = xs[i * cols + j];
        }
      } else {
        for (size_t j = j0; j < j1; ++j) {
          for (size_t i = 0; i < R; ++i) ys[i * cols + j] = xs[j * R + i];
        }
      }
    }
  });
}

template <class T>
bool few_channels_typed(size_t batch, size_t rows, size_t cols, bool to_rows, const void* x, void* y,
                        Parallel& par) {
  const T* px = static_cast<const T*>(x);
  T* py = static_cast<T*>(y);
  switch (rows) {
    case 1: few_channels<T, 1>(batch, cols, to_rows, px, py, par); return true;
    case 2: few_channels<T, 2>(batch, cols, to_rows, px, py, par); return true;
    case 3: few_channels<T, 3>(batch, cols, to_rows, px, py, par); return true;
    case 4: few_channels<T, 4>(batch, cols, to_rows, px, py, par); return true;
    case 5: few_channels<T, 5>(batch, cols, to_rows, px, py, par); return true;
    case 6: few_channels<T, 6>(batch, cols, to_rows, px, py, par); return true;
    case 7: few_channels<T, 7>(batch, cols, to_rows, px, py, par); return true;
    case 8: few_channels<T, 8>(batch, cols, to_rows, px, py, par); return true;
    default: return false;
  }
}

}  // namespace

bool transpose_few_channels(size_t esize, size_t batch, size_t rows, size_t cols, bool to_rows, const void* x,
                            void* y, Parallel& par) {
  switch (esize) {
    case 1: return few_channels_typed<uint8_t>(batch, rows, cols, to_rows, x, y, par);
    case 2: return few_channels_typed<uint16_t>(batch, rows, cols, to_rows, x, y, par);
    case 4: return few_channels_typed<uint32_t>(batch, rows, cols, to_rows, x, y, par);
    case 8: return few_channels_typed<uint64_t>(batch, rows, cols, to_rows, x, y, par);
    default: return false;
  }
}

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

void reverse(size_t esize, const Dims& x, const std::vector<bool>& axes, const void* px, void* py,
             Parallel& par) {
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
        if (keep)
          std::memcpy(dst, bx + (row * W + j) * esize, esize);
        else
          std::memset(dst, 0, esize);
      }
    }
  });
}

void pad(size_t esize, const Dims& x, const std::vector<uint32_t>& pre, const Dims& o, int mode,
         const void* fill, const void* px, void* py, Parallel& par) {
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
                   const std::vector<uint32_t>& strides, const Dims& o, const void* px, void* py,
                   Parallel& par) {
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
