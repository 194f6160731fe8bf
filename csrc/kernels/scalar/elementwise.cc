// Scalar element-wise kernels: broadcasting binary ops, unary ops, softmax, qs8 (de)quantization.
#include <cmath>
#include <cstring>

#include "kernels/scalar/common.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {
namespace scalar {
namespace {

// ------------------------------------------------------------------------------------------------ binary
template <BinaryOp kOp>
inline float bin(float a, float b) {
  switch (kOp) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    // NaN propagates from either side (numpy's minimum/maximum).
    case BinaryOp::kMin: return (a < b || a != a) ? a : b;
    case BinaryOp::kMax: return (a > b || a != a) ? a : b;
    case BinaryOp::kPow: return std::pow(a, b);
    case BinaryOp::kPrelu: return a > 0.f ? a : a * b;
    case BinaryOp::kSquaredDiff: {
      const float d = a - b;
      return d * d;
    }
  }
  return 0.f;
}

// One output row of `n` elements; the common stride patterns get their own loops so they vectorise.
template <BinaryOp kOp>
void bin_row(size_t n, const float* a, size_t sa, const float* b, size_t sb, float* o) {
  if (sa == 1 && sb == 1) {
    for (size_t i = 0; i < n; ++i) o[i] = bin<kOp>(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const float bv = *b;
    for (size_t i = 0; i < n; ++i) o[i] = bin<kOp>(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = *a;
    for (size_t i = 0; i < n; ++i) o[i] = bin<kOp>(av, b[i]);
  } else {
    for (size_t i = 0; i < n; ++i) o[i] = bin<kOp>(a[i * sa], b[i * sb]);
  }
}

template <BinaryOp kOp>
void binary_impl(const BinaryShape& s, const float* a, const float* b, float* out, Activation act,
                 Parallel& par) {
  const Clamp clamp(act);
  const size_t rank = s.rank;
  if (rank == 0) {
    out[0] = clamp(bin<kOp>(a[0], b[0]));
    return;
  }
  const size_t inner = s.out_dims[rank - 1];
  size_t outer = 1;
  for (size_t d = 0; d + 1 < rank; ++d) outer *= s.out_dims[d];
  if (inner == 0 || outer == 0) return;
  // Long rows with few of them: split rows into chunks too.
  size_t chunks = 1;
  if (outer < par.threads() * 4 && inner >= 8192) chunks = std::min(inner / 4096, par.threads() * 4);
  const size_t units = outer * chunks;
  const size_t tasks = pick_tasks(par, units, static_cast<double>(inner) / static_cast<double>(chunks));
  const size_t sa = s.a_strides[rank - 1], sb = s.b_strides[rank - 1];
  par.run(tasks, [&](size_t task) {
    size_t u0, u1;
    chunk_range(units, tasks, task, &u0, &u1);
    for (size_t u = u0; u < u1; ++u) {
      const size_t row = u / chunks, chunk = u % chunks;
      size_t i0, i1;
      chunk_range(inner, chunks, chunk, &i0, &i1);
      size_t oa, ob;
      binary_row_offsets(s, row, &oa, &ob);
      float* o = out + row * inner + i0;
      bin_row<kOp>(i1 - i0, a + oa + i0 * sa, sa, b + ob + i0 * sb, sb, o);
      clamp.apply(o, i1 - i0);
    }
  });
}

// ------------------------------------------------------------------------------------------------- unary
template <UnaryOp kOp>
inline float un(float x, float alpha, float beta) {
  switch (kOp) {
    case UnaryOp::kClamp: return x;  // the clamp itself is the Activation applied afterwards
    case UnaryOp::kCopy: return x;
    case UnaryOp::kAbs: return std::fabs(x);
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kFloor: return std::floor(x);
    case UnaryOp::kCeil: return std::ceil(x);
    case UnaryOp::kSqrt: return std::sqrt(x);
    case UnaryOp::kRsqrt: return 1.f / std::sqrt(x);
    case UnaryOp::kSquare: return x * x;
    case UnaryOp::kSigmoid:
      // Never exponentiate a large positive number.
      if (x >= 0.f)
        return 1.f / (1.f + std::exp(-x));
      else {
        const float e = std::exp(x);
        return e / (1.f + e);
      }
    case UnaryOp::kTanh: return std::tanh(x);
    case UnaryOp::kExp: return std::exp(x);
    case UnaryOp::kLog: return std::log(x);
    case UnaryOp::kSin: return std::sin(x);
    case UnaryOp::kCos: return std::cos(x);
    case UnaryOp::kTan: return std::tan(x);
    case UnaryOp::kHardswish: {
      float t = x + 3.f;
      t = t < 0.f ? 0.f : (t > 6.f ? 6.f : t);
      return x * t / 6.f;
    }
    case UnaryOp::kLeakyRelu: return x < 0.f ? alpha * x : x;
    case UnaryOp::kElu: return x < 0.f ? alpha * std::expm1(x) : x;
    case UnaryOp::kGelu:
      // 1 + erf(z) = erfc(-z): no cancellation for negative x. In double: the float rounding of x / sqrt 2
      // alone cost up to 60 ulp at x = -8 (erfc's relative sensitivity there is ~2 z^2 times it).
      return static_cast<float>(0.5 * x * std::erfc(-static_cast<double>(x) * 0.70710678118654752));
    case UnaryOp::kErf: return std::erf(x);
    case UnaryOp::kRelu: return x < 0.f ? 0.f : x;
    case UnaryOp::kSign: return x > 0.f ? 1.f : (x < 0.f ? -1.f : x);  // keeps ±0 and NaN
    case UnaryOp::kRoundEven: return round_even(x);
    case UnaryOp::kReciprocal: return 1.f / x;
    case UnaryOp::kSoftplus:
      // log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x, no cancellation for small.
      return (x > 0.f ? x : 0.f) + std::log1p(std::exp(-std::fabs(x)));
    case UnaryOp::kSoftsign: return x / (1.f + std::fabs(x));
    case UnaryOp::kHardSigmoid: {
      const float y = alpha * x + beta;
      return y < 0.f ? 0.f : (y > 1.f ? 1.f : y);
    }
  }
  return x;
}

template <UnaryOp kOp>
void unary_impl(size_t n, const float* in, float* out, const UnaryParams& p, Parallel& par) {
  const Clamp clamp(p.act);
  const float alpha = p.alpha, beta = p.beta;
  constexpr size_t kBlock = 4096;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  const size_t tasks = pick_tasks(par, blocks, static_cast<double>(kBlock) * 4);
  par.run(tasks, [&](size_t task) {
    size_t b0, b1;
    chunk_range(blocks, tasks, task, &b0, &b1);
    const size_t i0 = b0 * kBlock, i1 = std::min(n, b1 * kBlock);
    for (size_t i = i0; i < i1; ++i) out[i] = un<kOp>(in[i], alpha, beta);
    clamp.apply(out + i0, i1 - i0);
  });
}

}  // namespace

float post_op(PostOp op, float x) {
  switch (op) {
    case PostOp::kHardswish: return un<UnaryOp::kHardswish>(x, 0.f, 0.f);
    case PostOp::kSigmoid: return un<UnaryOp::kSigmoid>(x, 0.f, 0.f);
    case PostOp::kGelu: return un<UnaryOp::kGelu>(x, 0.f, 0.f);
    case PostOp::kNone: break;
  }
  return x;
}

void binary(BinaryOp op, const BinaryShape& s, const float* a, const float* b, float* out, Activation act,
            Parallel& par) {
  switch (op) {
#define WEBXNN_BIN(name) \
  case BinaryOp::name: return binary_impl<BinaryOp::name>(s, a, b, out, act, par);
    WEBXNN_BIN(kAdd)
    WEBXNN_BIN(kSub)
    WEBXNN_BIN(kMul)
    WEBXNN_BIN(kDiv)
    WEBXNN_BIN(kMin)
    WEBXNN_BIN(kMax)
    WEBXNN_BIN(kPow)
    WEBXNN_BIN(kPrelu)
    WEBXNN_BIN(kSquaredDiff)
#undef WEBXNN_BIN
  }
}

void unary(UnaryOp op, size_t n, const float* in, float* out, const UnaryParams& p, Parallel& par) {
  switch (op) {
#define WEBXNN_UN(name) \
  case UnaryOp::name: return unary_impl<UnaryOp::name>(n, in, out, p, par);
    WEBXNN_UN(kClamp)
    WEBXNN_UN(kAbs)
    WEBXNN_UN(kNeg)
    WEBXNN_UN(kFloor)
    WEBXNN_UN(kCeil)
    WEBXNN_UN(kSqrt)
    WEBXNN_UN(kRsqrt)
    WEBXNN_UN(kSquare)
    WEBXNN_UN(kSigmoid)
    WEBXNN_UN(kTanh)
    WEBXNN_UN(kExp)
    WEBXNN_UN(kLog)
    WEBXNN_UN(kSin)
    WEBXNN_UN(kCos)
    WEBXNN_UN(kHardswish)
    WEBXNN_UN(kLeakyRelu)
    WEBXNN_UN(kElu)
    WEBXNN_UN(kGelu)
    WEBXNN_UN(kErf)
    WEBXNN_UN(kRelu)
    WEBXNN_UN(kSign)
    WEBXNN_UN(kRoundEven)
    WEBXNN_UN(kReciprocal)
    WEBXNN_UN(kSoftplus)
    WEBXNN_UN(kSoftsign)
    WEBXNN_UN(kTan)
    WEBXNN_UN(kHardSigmoid)
    WEBXNN_UN(kCopy)
#undef WEBXNN_UN
  }
}

void softmax(size_t rows, size_t cols, const float* in, float* out, Parallel& par) {
  if (rows == 0 || cols == 0) return;
  const size_t tasks = pick_tasks(par, rows, static_cast<double>(cols) * 8);
  par.run(tasks, [&](size_t task) {
    size_t r0, r1;
    chunk_range(rows, tasks, task, &r0, &r1);
    for (size_t r = r0; r < r1; ++r) {
      const float* x = in + r * cols;
      float* y = out + r * cols;
      float mx = x[0];
      for (size_t i = 1; i < cols; ++i) mx = x[i] > mx ? x[i] : mx;
      float sum = 0.f;
      for (size_t i = 0; i < cols; ++i) {
        const float e = std::exp(x[i] - mx);
        y[i] = e;
        sum += e;
      }
      for (size_t i = 0; i < cols; ++i) y[i] /= sum;
    }
  });
}

void normalize(size_t rows, size_t cols, const float* in, const float* scale, const float* bias,
               float epsilon, float* out, Parallel& par) {
  if (rows == 0 || cols == 0) return;
  const size_t tasks = pick_tasks(par, rows, static_cast<double>(cols) * 4);
  par.run(tasks, [&](size_t task) {
    size_t r0, r1;
    chunk_range(rows, tasks, task, &r0, &r1);
    for (size_t r = r0; r < r1; ++r) {
      const float* x = in + r * cols;
      float* y = out + r * cols;
      // Two-pass mean / variance in double (the reference: no E[x^2] - E[x]^2 cancellation, no drift of a
      // long float sum).
      double sum = 0.0;
      for (size_t i = 0; i < cols; ++i) sum += x[i];
      const double mean_d = sum / static_cast<double>(cols);
      double sq = 0.0;
      for (size_t i = 0; i < cols; ++i) sq += (x[i] - mean_d) * (x[i] - mean_d);
      const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(cols) + epsilon);
      for (size_t i = 0; i < cols; ++i) {
        const float v = static_cast<float>((x[i] - mean_d) * rstd);
        y[i] = v * (scale ? scale[i] : 1.f) + (bias ? bias[i] : 0.f);
      }
    }
  });
}

void quantize_qs8(size_t n, const float* in, int8_t* out, float scale, int32_t zero_point, Parallel& par) {
  const float zp = static_cast<float>(zero_point);
  const size_t tasks = pick_tasks(par, n, 4.0);
  par.run(tasks, [&](size_t task) {
    size_t i0, i1;
    chunk_range(n, tasks, task, &i0, &i1);
    for (size_t i = i0; i < i1; ++i) {
      float v = round_even(in[i] / scale) + zp;
      if (v != v) v = zp;  // NaN: the zero point (real 0)
      v = v < -128.f ? -128.f : (v > 127.f ? 127.f : v);
      out[i] = static_cast<int8_t>(v);
    }
  });
}

void dequantize_qs8(size_t n, const int8_t* in, float* out, float scale, int32_t zero_point, Parallel& par) {
  const size_t tasks = pick_tasks(par, n, 2.0);
  par.run(tasks, [&](size_t task) {
    size_t i0, i1;
    chunk_range(n, tasks, task, &i0, &i1);
    for (size_t i = i0; i < i1; ++i)
      out[i] = static_cast<float>(static_cast<int32_t>(in[i]) - zero_point) * scale;
  });
}

// No vector loop to offer: the caller's generic few-channel loop is the scalar kernel.
bool image_layout_f32(size_t, size_t, size_t, bool, const float*, float*, Parallel&) { return false; }

}  // namespace scalar
}  // namespace webxnn
