// WX reductions: reduce (all WebNN reductions and arg_max/arg_min), normalize (layer/instance norm),
// cumulative sum.
#include <cmath>

#include "kernels/wx/common.h"

namespace webxnn {
namespace wx {
namespace {

enum : uint16_t {
  kSum = 0,
  kMean = 1,
  kMax = 2,
  kMin = 3,
  kProduct = 4,
  kL1 = 5,
  kL2 = 6,
  kLogSum = 7,
  kLogSumExp = 8,
  kSumSquare = 9,
  kArgMax = 10,
  kArgMin = 11,
};

// x's dims split into kept and reduced: an element's offset is base(kept index) + red[r].
struct Split {
  Dims kept_dims, kept_strides;  // strides in x
  std::vector<size_t> red;       // offsets (in x) of every reduced position, odometer order
  size_t outer = 1;

  Split(const Dims& x, const std::vector<bool>& reduced) {
    const Dims st = strides_of(x);
    Dims red_dims, red_strides;
    for (size_t d = 0; d < x.size(); ++d) {
      if (reduced[d]) {
        red_dims.push_back(x[d]);
        red_strides.push_back(st[d]);
      } else {
        kept_dims.push_back(x[d]);
        kept_strides.push_back(st[d]);
        outer *= x[d];
      }
    }
    red = offsets(red_dims, red_strides);
  }
  static std::vector<size_t> offsets(const Dims& dims, const Dims& strides) {
    std::vector<size_t> r(numel(dims));
    if (r.empty()) return r;
    const Dims* st[1] = {&strides};
    Odometer<1> it(dims, st);
    for (size_t i = 0; i < r.size(); ++i, it.next()) r[i] = it.off[0];
    return r;
  }
  size_t base(size_t m) const {
    size_t o = 0;
    for (size_t d = kept_dims.size(); d-- > 0;) {
      o += (m % kept_dims[d]) * kept_strides[d];
      m /= kept_dims[d];
    }
    return o;
  }
};

template <class T>
double reduce_float(uint16_t op, const T* x, size_t base, const std::vector<size_t>& red) {
  const size_t n = red.size();
  double acc = 0;
  switch (op) {
    case kSum:
    case kMean:
      for (size_t r : red) acc += to_double(x[base + r]);
      return op == kMean ? acc / static_cast<double>(n) : acc;
    case kMax:
    case kMin: {
      if (n == 0) return op == kMax ? -INFINITY : INFINITY;
      acc = to_double(x[base + red[0]]);
      for (size_t r : red) {
        const double v = to_double(x[base + r]);
        if (std::isnan(v)) return v;
        acc = op == kMax ? std::max(acc, v) : std::min(acc, v);
      }
      return acc;
    }
    case kProduct:
      acc = 1;
      for (size_t r : red) acc *= to_double(x[base + r]);
      return acc;
    case kL1:
      for (size_t r : red) acc += std::fabs(to_double(x[base + r]));
      return acc;
    case kL2:
    case kSumSquare:
      for (size_t r : red) {
        const double v = to_double(x[base + r]);
        acc += v * v;
      }
      return op == kL2 ? std::sqrt(acc) : acc;
    case kLogSum:
      for (size_t r : red) acc += to_double(x[base + r]);
      return std::log(acc);
    case kLogSumExp: {
      double mx = -INFINITY;
      for (size_t r : red) mx = std::max(mx, to_double(x[base + r]));
      if (std::isinf(mx)) {
        for (size_t r : red) acc += std::exp(to_double(x[base + r]));
        return std::log(acc);
      }
      for (size_t r : red) acc += std::exp(to_double(x[base + r]) - mx);
      return mx + std::log(acc);
    }
    default: return 0;
  }
}

// Integer reductions wrap like the element type (sum, product, ...); the others go through double.
template <class T>
T reduce_int(uint16_t op, const T* x, size_t base, const std::vector<size_t>& red) {
  using U = typename std::make_unsigned<T>::type;
  U acc = 0;
  switch (op) {
    case kSum:
      for (size_t r : red) acc = static_cast<U>(acc + static_cast<U>(x[base + r]));
      return static_cast<T>(acc);
    case kSumSquare:
      for (size_t r : red)
        acc = static_cast<U>(acc + static_cast<U>(x[base + r]) * static_cast<U>(x[base + r]));
      return static_cast<T>(acc);
    case kL1:
      for (size_t r : red) {
        const T v = x[base + r];
        acc = static_cast<U>(acc + (v < 0 ? static_cast<U>(U(0) - static_cast<U>(v)) : static_cast<U>(v)));
      }
      return static_cast<T>(acc);
    case kProduct:
      acc = 1;
      for (size_t r : red) acc = static_cast<U>(acc * static_cast<U>(x[base + r]));
      return static_cast<T>(acc);
    case kMax:
    case kMin: {
      if (red.empty()) return op == kMax ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
      T m = x[base + red[0]];
      for (size_t r : red) m = op == kMax ? std::max(m, x[base + r]) : std::min(m, x[base + r]);
      return m;
    }
    case kMean: {
      double s = 0;
      for (size_t r : red) s += static_cast<double>(x[base + r]);
      return from_double<T>(red.empty() ? 0.0 : s / static_cast<double>(red.size()));
    }
    default: return from_double<T>(reduce_float<T>(op, x, base, red));
  }
}

}  // namespace

void reduce(uint16_t op, ET in, ET out, const Dims& x, const std::vector<bool>& reduced, const void* px,
            void* py, Parallel& par) {
  const Split sp(x, reduced);
  dispatch(in, [&](auto ti) {
    using T = decltype(ti);
    const T* xi = static_cast<const T*>(px);
    if (op == kArgMax || op == kArgMin) {
      dispatch(out, [&](auto to) {
        using O = decltype(to);
        O* yo = static_cast<O*>(py);
        parallel_for(par, sp.outer, 64, [&](size_t b, size_t e) {
          for (size_t m = b; m < e; ++m) {
            const size_t base = sp.base(m);
            size_t best = 0;
            for (size_t r = 1; r < sp.red.size(); ++r) {
              const auto v = Tr<T>::ld(xi[base + sp.red[r]]);
              const auto w = Tr<T>::ld(xi[base + sp.red[best]]);
              if (op == kArgMax ? v > w : v < w) best = r;
            }
            yo[m] = from_double<O>(static_cast<double>(best));
          }
        });
      });
      return;
    }
    T* yo = static_cast<T*>(py);
    parallel_for(par, sp.outer, 64, [&](size_t b, size_t e) {
      for (size_t m = b; m < e; ++m) {
        const size_t base = sp.base(m);
        if constexpr (is_float_v<T>) {
          yo[m] = from_double<T>(reduce_float<T>(op, xi, base, sp.red));
        } else {
          yo[m] = reduce_int<T>(op, xi, base, sp.red);
        }
      }
    });
  });
}

void normalize(ET t, const Dims& x, const std::vector<bool>& reduced, float eps, const void* scale,
               const Dims& scale_dims, const void* bias, const Dims& bias_dims, const void* px, void* py,
               Parallel& par) {
  const Split sp(x, reduced);
  // Scale and bias offsets split the same way (broadcast strides are 0).
  auto split_param = [&](const Dims& pd, std::vector<size_t>& red, Dims& kept_strides) {
    const Dims bs = bcast_strides(pd, x.size());
    Dims red_dims, red_st;
    for (size_t d = 0; d < x.size(); ++d) {
      if (reduced[d]) {
        red_dims.push_back(x[d]);
        red_st.push_back(bs[d]);
      } else {
        kept_strides.push_back(bs[d]);
      }
    }
    red = Split::offsets(red_dims, red_st);
  };
  std::vector<size_t> s_red, b_red;
  Dims s_kept, b_kept;
  if (scale) split_param(scale_dims, s_red, s_kept);
  if (bias) split_param(bias_dims, b_red, b_kept);
  auto kept_off = [&](size_t m, const Dims& kst) {
    size_t o = 0;
    for (size_t d = sp.kept_dims.size(); d-- > 0;) {
      o += (m % sp.kept_dims[d]) * kst[d];
      m /= sp.kept_dims[d];
    }
    return o;
  };
  dispatch(t, [&](auto ti) {
    using T = decltype(ti);
    if constexpr (is_float_v<T>) {
      const T* xi = static_cast<const T*>(px);
      const T* si = static_cast<const T*>(scale);
      const T* bi = static_cast<const T*>(bias);
      T* yo = static_cast<T*>(py);
      const size_t n = sp.red.size();
      parallel_for(par, sp.outer, 16, [&](size_t b, size_t e) {
        for (size_t m = b; m < e; ++m) {
          const size_t base = sp.base(m);
          double mean = 0, var = 0;
          for (size_t r : sp.red) mean += to_double(xi[base + r]);
          mean /= static_cast<double>(std::max<size_t>(1, n));
          for (size_t r : sp.red) {
            const double d = to_double(xi[base + r]) - mean;
            var += d * d;
          }
          var /= static_cast<double>(std::max<size_t>(1, n));
          const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
          const size_t sb = si ? kept_off(m, s_kept) : 0;
          const size_t bb = bi ? kept_off(m, b_kept) : 0;
          for (size_t k = 0; k < n; ++k) {
            double v = (to_double(xi[base + sp.red[k]]) - mean) * inv;
            if (si) v *= to_double(si[sb + s_red[k]]);
            if (bi) v += to_double(bi[bb + b_red[k]]);
            yo[base + sp.red[k]] = from_double<T>(v);
          }
        }
      });
    }
  });
}

void cumulative_sum(ET t, const Dims& x, size_t axis, bool exclusive, bool reversed, const void* px, void* py,
                    Parallel& par) {
  size_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x[d];
  for (size_t d = axis + 1; d < x.size(); ++d) inner *= x[d];
  const size_t len = x.empty() ? 1 : x[axis];
  dispatch(t, [&](auto ti) {
    using T = decltype(ti);
    const T* xi = static_cast<const T*>(px);
    T* yo = static_cast<T*>(py);
    parallel_for(par, outer * inner, 256, [&](size_t b, size_t e) {
      for (size_t w = b; w < e; ++w) {
        const size_t o = w / inner, in = w % inner;
        const size_t base = o * len * inner + in;
        if constexpr (is_float_v<T>) {
          double acc = 0;
          for (size_t k = 0; k < len; ++k) {
            const size_t j = reversed ? len - 1 - k : k;
            const double v = to_double(xi[base + j * inner]);
            if (!exclusive) acc += v;
            yo[base + j * inner] = from_double<T>(acc);
            if (exclusive) acc += v;
          }
        } else {
          using U = typename std::make_unsigned<T>::type;
          U acc = 0;
          for (size_t k = 0; k < len; ++k) {
            const size_t j = reversed ? len - 1 - k : k;
            const U v = static_cast<U>(xi[base + j * inner]);
            if (!exclusive) acc = static_cast<U>(acc + v);
            yo[base + j * inner] = static_cast<T>(acc);
            if (exclusive) acc = static_cast<U>(acc + v);
          }
        }
      }
    });
  });
}

}  // namespace wx
}  // namespace webxnn
