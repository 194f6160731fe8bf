// WX element-wise kernels: fp16 conversion, cast/convert, unary, broadcasting binary, where, expand,
// quantize/dequantize.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/wx/common.h"

namespace webxnn {
namespace wx {

size_t et_size(ET t) {
  switch (t) {
    case ET::kI8:
    case ET::kU8: return 1;
    case ET::kF16: return 2;
    case ET::kF32:
    case ET::kI32:
    case ET::kU32: return 4;
    case ET::kI64:
    case ET::kU64: return 8;
  }
  return 1;
}

bool et_is_float(ET t) { return t == ET::kF32 || t == ET::kF16; }

const char* et_name(ET t) {
  switch (t) {
    case ET::kF32: return "float32";
    case ET::kF16: return "float16";
    case ET::kI8: return "int8";
    case ET::kU8: return "uint8";
    case ET::kI32: return "int32";
    case ET::kU32: return "uint32";
    case ET::kI64: return "int64";
    case ET::kU64: return "uint64";
  }
  return "?";
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf or nan: keep the top payload bits, stay a nan
    if (ax == 0x7f800000u) return sign | 0x7c00u;
    uint16_t m = static_cast<uint16_t>((ax >> 13) & 0x3ffu);
    return static_cast<uint16_t>(sign | 0x7c00u | 0x200u | m);
  }
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
  if (ax < 0x38800000u) {                          // below 2^-14: a half subnormal (or zero)
    const uint32_t e = ax >> 23;
    if (e < 102) return sign;  // below 2^-25: rounds to zero (2^-25 itself ties to even zero)
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = (ax - 0x38000000u) >> 13;  // rebias exponent 127 -> 15
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;  // may carry into the exponent: still right
  return static_cast<uint16_t>(sign | r);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  uint32_t bits;
  if (e == 0) {
    if (m == 0) {
      bits = sign;
    } else {
      float v = static_cast<float>(m) * 5.9604644775390625e-08f;  // m * 2^-24, exact
      std::memcpy(&bits, &v, 4);
      bits |= sign;
    }
  } else if (e == 31) {
    bits = sign | 0x7f800000u | (m << 13);
  } else {
    bits = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double load_double(ET t, const void* p, size_t i) {
  double r = 0;
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    r = to_double(static_cast<const T*>(p)[i]);
  });
  return r;
}

int64_t load_index(ET t, const void* p, size_t i) {
  int64_t r = 0;
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    const T v = static_cast<const T*>(p)[i];
    if constexpr (is_float_v<T>) {
      r = static_cast<int64_t>(from_double<int64_t>(to_double(v)));
    } else if constexpr (std::is_same<T, uint64_t>::value) {
      r = v > uint64_t(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
    } else {
      r = static_cast<int64_t>(v);
    }
  });
  return r;
}

void fill_value(ET t, double v, void* out) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    const T x = from_double<T>(v);
    std::memcpy(out, &x, sizeof(T));
  });
}

namespace {

template <class I, class O>
O cast_one(I v) {
  if constexpr (std::is_same<I, O>::value) {
    return v;
  } else if constexpr (is_float_v<O>) {
    if constexpr (is_float_v<I>) {
      return Tr<O>::st(Tr<I>::ld(v));
    } else if constexpr (std::is_same<O, float>::value) {
      return static_cast<float>(v);
    } else {
      return Half{f32_to_f16(static_cast<float>(v))};
    }
  } else if constexpr (is_float_v<I>) {
    return from_double<O>(to_double(v));
  } else {
    return static_cast<O>(v);  // integer to integer: wrap (two's complement)
  }
}

}  // namespace

void convert(ET in, ET out, size_t n, const void* x, void* y, Parallel& par) {
  dispatch(in, [&](auto ti) {
    using I = decltype(ti);
    dispatch(out, [&](auto to) {
      using O = decltype(to);
      const I* px = static_cast<const I*>(x);
      O* py = static_cast<O*>(y);
      parallel_for(par, n, 1 << 14, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) py[i] = cast_one<I, O>(px[i]);
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// unary

namespace {

enum : uint16_t {
  kRelu = 0,
  kErf = 1,
  kSign = 2,
  kRoundEven = 3,
  kReciprocal = 4,
  kSoftplus = 5,
  kSoftsign = 6,
  kTan = 7,
  kLogicalNot = 8,
  kIsNan = 9,
  kIsInfinite = 10,
  kIdentity = 11,
  kCast = 12,
  kHardSigmoid = 13,
  kAbs = 14,
  kNeg = 15,
  kClamp = 16,
};

double unary_double(uint16_t op, double x, double a, double b) {
  switch (op) {
    case kRelu: return x > 0 ? x : (std::isnan(x) ? x : 0.0);
    case kErf: return std::erf(x);
    case kSign: return x > 0 ? 1.0 : (x < 0 ? -1.0 : x);
    case kRoundEven: return std::nearbyint(x);
    case kReciprocal: return 1.0 / x;
    case kSoftplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    case kSoftsign: return x / (1.0 + std::fabs(x));
    case kTan: return std::tan(x);
    case kHardSigmoid: return std::max(0.0, std::min(1.0, a * x + b));
    case kAbs: return std::fabs(x);
    case kNeg: return -x;
    case kClamp: return std::isnan(x) ? x : std::min(std::max(x, a), b);
    default: return x;
  }
}

template <class T>
T unary_int(uint16_t op, T x, double a, double b) {
  using U = typename std::make_unsigned<T>::type;
  switch (op) {
    case kRelu: return x > 0 ? x : T(0);
    case kSign: return x > 0 ? T(1) : (x < 0 ? static_cast<T>(-1) : T(0));
    case kAbs: return x < 0 ? static_cast<T>(U(0) - static_cast<U>(x)) : x;
    case kNeg: return static_cast<T>(U(0) - static_cast<U>(x));
    case kRoundEven:
    case kIdentity: return x;
    case kClamp: {
      const double v = static_cast<double>(x);
      if (v < a) return from_double<T>(std::ceil(a));
      if (v > b) return from_double<T>(std::floor(b));
      return x;
    }
    default: return from_double<T>(unary_double(op, static_cast<double>(x), a, b));
  }
}

}  // namespace

void unary(uint16_t op, double alpha, double beta, ET in, ET out, size_t n, const void* x, void* y,
           Parallel& par) {
  if (op == kCast || (op == kIdentity && in != out)) {
    convert(in, out, n, x, y, par);
    return;
  }
  if (op == kIdentity) {
    std::memcpy(y, x, n * et_size(in));
    return;
  }
  if (op == kLogicalNot || op == kIsNan || op == kIsInfinite) {
    uint8_t* py = static_cast<uint8_t*>(y);
    dispatch(in, [&](auto ti) {
      using I = decltype(ti);
      const I* px = static_cast<const I*>(x);
      parallel_for(par, n, 1 << 14, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) {
          const double v = to_double(px[i]);
          if (op == kLogicalNot)
            py[i] = v == 0 ? 1 : 0;
          else if (op == kIsNan)
            py[i] = std::isnan(v) ? 1 : 0;
          else
            py[i] = std::isinf(v) ? 1 : 0;
        }
      });
    });
    return;
  }
  dispatch(in, [&](auto ti) {
    using T = decltype(ti);
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    parallel_for(par, n, 1 << 12, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) {
        if constexpr (is_float_v<T>) {
          py[i] = from_double<T>(unary_double(op, to_double(px[i]), alpha, beta));
        } else {
          py[i] = unary_int<T>(op, px[i], alpha, beta);
        }
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// binary

namespace {

enum : uint16_t {
  kPow = 0,
  kEqual = 1,
  kNotEqual = 2,
  kGreater = 3,
  kGreaterOrEqual = 4,
  kLesser = 5,
  kLesserOrEqual = 6,
  kLogicalAnd = 7,
  kLogicalOr = 8,
  kLogicalXor = 9,
  kAdd = 10,
  kSub = 11,
  kMul = 12,
  kDiv = 13,
  kMin = 14,
  kMax = 15,
};

bool is_compare(uint16_t op) { return op >= kEqual && op <= kLogicalXor; }

template <class C>
uint8_t compare(uint16_t op, C a, C b) {
  switch (op) {
    case kEqual: return a == b;
    case kNotEqual: return a != b;
    case kGreater: return a > b;
    case kGreaterOrEqual: return a >= b;
    case kLesser: return a < b;
    case kLesserOrEqual: return a <= b;
    case kLogicalAnd: return (a != C(0)) && (b != C(0));
    case kLogicalOr: return (a != C(0)) || (b != C(0));
    case kLogicalXor: return (a != C(0)) != (b != C(0));
    default: return 0;
  }
}

template <class C>
C arith_float(uint16_t op, C a, C b) {
  switch (op) {
    case kPow: return static_cast<C>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: return a * b;
    case kDiv: return a / b;
    case kMin: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<C>::quiet_NaN() : std::min(a, b);
    case kMax: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<C>::quiet_NaN() : std::max(a, b);
    default: return a;
  }
}

template <class T>
T arith_int(uint16_t op, T a, T b) {
  using U = typename std::make_unsigned<T>::type;
  switch (op) {
    case kAdd: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    case kSub: return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
    case kMul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case kDiv:
      if (b == 0) return 0;  // no trap: integer division by zero gives 0
      if (std::is_signed<T>::value && b == static_cast<T>(-1))
        return static_cast<T>(U(0) - static_cast<U>(a));
      return static_cast<T>(a / b);
    case kMin: return std::min(a, b);
    case kMax: return std::max(a, b);
    case kPow: {
      if (std::is_signed<T>::value && b < 0) {
        if (a == 1) return 1;
        if (std::is_signed<T>::value && a == static_cast<T>(-1)) return (static_cast<U>(b) & 1) ? a : T(1);
        return 0;
      }
      U base = static_cast<U>(a), r = 1;
      U e = static_cast<U>(b);
      while (e) {
        if (e & 1) r = static_cast<U>(r * base);
        base = static_cast<U>(base * base);
        e >>= 1;
      }
      return static_cast<T>(r);
    }
    default: return a;
  }
}

}  // namespace

void binary(uint16_t op, ET in, ET out, const Dims& a, const Dims& b, const Dims& o, const void* pa,
            const void* pb, void* py, Parallel& par) {
  const size_t r = o.size();
  const Dims sa = bcast_strides(a, r), sb = bcast_strides(b, r);
  const Dims* st[2] = {&sa, &sb};
  const size_t n = numel(o);
  (void)out;
  dispatch(in, [&](auto ti) {
    using T = decltype(ti);
    using C = typename Tr<T>::C;
    const T* xa = static_cast<const T*>(pa);
    const T* xb = static_cast<const T*>(pb);
    parallel_for(par, n, 1 << 12, [&](size_t beg, size_t end) {
      Odometer<2> it(o, st);
      it.seek(beg);
      for (size_t i = beg; i < end; ++i, it.next()) {
        const C va = Tr<T>::ld(xa[it.off[0]]);
        const C vb = Tr<T>::ld(xb[it.off[1]]);
        if (is_compare(op)) {
          static_cast<uint8_t*>(py)[i] = compare<C>(op, va, vb);
        } else if constexpr (is_float_v<T>) {
          static_cast<T*>(py)[i] = Tr<T>::st(arith_float<C>(op, va, vb));
        } else {
          static_cast<T*>(py)[i] = arith_int<T>(op, va, vb);
        }
      }
    });
  });
}

namespace {

inline void copy_elem(size_t esize, uint8_t* dst, const uint8_t* src) {
  switch (esize) {
    case 1: *dst = *src; break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    default: std::memcpy(dst, src, esize);
  }
}

}  // namespace

void where(size_t esize, const Dims& c, const Dims& t, const Dims& f, const Dims& o, const uint8_t* pc,
           const void* pt, const void* pf, void* py, Parallel& par) {
  const size_t r = o.size();
  const Dims sc = bcast_strides(c, r), stt = bcast_strides(t, r), sf = bcast_strides(f, r);
  const Dims* st[3] = {&sc, &stt, &sf};
  const uint8_t* bt = static_cast<const uint8_t*>(pt);
  const uint8_t* bf = static_cast<const uint8_t*>(pf);
  uint8_t* by = static_cast<uint8_t*>(py);
  parallel_for(par, numel(o), 1 << 12, [&](size_t beg, size_t end) {
    Odometer<3> it(o, st);
    it.seek(beg);
    for (size_t i = beg; i < end; ++i, it.next()) {
      const uint8_t* src = pc[it.off[0]] ? bt + it.off[1] * esize : bf + it.off[2] * esize;
      copy_elem(esize, by + i * esize, src);
    }
  });
}

void expand(size_t esize, const Dims& x, const Dims& o, const void* px, void* py, Parallel& par) {
  const Dims sx = bcast_strides(x, o.size());
  const Dims* st[1] = {&sx};
  const uint8_t* bx = static_cast<const uint8_t*>(px);
  uint8_t* by = static_cast<uint8_t*>(py);
  parallel_for(par, numel(o), 1 << 12, [&](size_t beg, size_t end) {
    Odometer<1> it(o, st);
    it.seek(beg);
    for (size_t i = beg; i < end; ++i, it.next()) copy_elem(esize, by + i * esize, bx + it.off[0] * esize);
  });
}

// ---------------------------------------------------------------------------------------------------------
// quantization

bool blockwise_compatible(const Dims& s, const Dims& x) {
  if (s.size() > x.size()) return false;
  const size_t off = x.size() - s.size();
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t xd = x[off + k], sd = s[k];
    if (sd == 1 || sd == xd) continue;
    if (sd == 0 || xd % sd != 0) return false;
  }
  return true;
}

namespace {

// Offset into a block-wise (or broadcast) parameter tensor of dims s for the element at index idx of x.
struct BlockIndex {
  Dims div, stride;
  BlockIndex(const Dims& s, const Dims& x) : div(x.size(), 1), stride(x.size(), 0) {
    const size_t off = x.size() - s.size();
    const Dims st = strides_of(s);
    for (size_t k = 0; k < s.size(); ++k) {
      const size_t xd = x[off + k], sd = s[k];
      div[off + k] = sd == 0 ? 1 : std::max<size_t>(1, xd / sd);
      stride[off + k] = sd == 1 ? 0 : st[k];
    }
  }
  size_t at(const Dims& idx) const {
    size_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) o += (idx[d] / div[d]) * stride[d];
    return o;
  }
};

}  // namespace

void quantize(int op, ET in, ET out, const Dims& x, ET st, const Dims& sd, const void* ps, ET zt,
              const Dims& zd, const void* pz, const void* px, void* py, Parallel& par) {
  const BlockIndex si(sd, x);
  const BlockIndex zi(pz ? zd : Dims{}, x);
  const size_t n = numel(x);
  const Dims none(x.size(), 0);
  const Dims* noop[1] = {&none};
  dispatch(in, [&](auto ti) {
    using I = decltype(ti);
    dispatch(out, [&](auto to) {
      using O = decltype(to);
      const I* xi = static_cast<const I*>(px);
      O* yo = static_cast<O*>(py);
      parallel_for(par, n, 1 << 12, [&](size_t beg, size_t end) {
        Odometer<1> it(x, noop);
        it.seek(beg);
        for (size_t i = beg; i < end; ++i, it.next()) {
          const double scale = load_double(st, ps, si.at(it.idx));
          const double zp = pz ? static_cast<double>(load_index(zt, pz, zi.at(it.idx))) : 0.0;
          const double v = to_double(xi[i]);
          if (op == 0) {
            // ONNX and onnxruntime divide in float32 for float and half inputs; a double quotient can sit
            // just off a float tie (0.5 / (5/255) is 25.5 in float) and round to the other step.
            double r;
            if constexpr (std::is_same_v<I, double>) {
              r = v / scale;
            } else {
              r = static_cast<double>(static_cast<float>(v) / static_cast<float>(scale));
            }
            const double q = std::nearbyint(r) + zp;  // default rounding mode: half to even, as ONNX
            yo[i] = from_double<O>(q);
          } else {
            yo[i] = from_double<O>((v - zp) * scale);
          }
        }
      });
    });
  });
}

}  // namespace wx
}  // namespace webxnn
