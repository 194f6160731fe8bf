// Layout helpers (byte copies, any element size) and the broadcast-shape builder for binary ops.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/kernels.h"

namespace webxnn {
namespace {

constexpr size_t kMaxRank = 8;

// Copies one element of `es` bytes; fixed sizes become single moves.
inline void copy_elem(size_t es, uint8_t* dst, const uint8_t* src) {
  switch (es) {
    case 1: *dst = *src; break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    default: std::memcpy(dst, src, es); break;
  }
}

// dst[i * dst_stride] = src[i * src_stride] for n elements (strides in bytes).
void copy_strided(size_t es, size_t n, uint8_t* dst, size_t dst_stride, const uint8_t* src,
                  size_t src_stride) {
  switch (es) {
    case 1:
      for (size_t i = 0; i < n; ++i) dst[i * dst_stride] = src[i * src_stride];
      break;
    case 2:
      for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * dst_stride, src + i * src_stride, 2);
      break;
    case 4:
      for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * dst_stride, src + i * src_stride, 4);
      break;
    case 8:
      for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * dst_stride, src + i * src_stride, 8);
      break;
    default:
      for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * dst_stride, src + i * src_stride, es);
  }
}

// Copies a block of `rank` dims (sizes dims) whose last dim is `inner_bytes` contiguous bytes in both src and
// dst; strides (bytes) are given for the outer rank-1 dims.
void copy_block(size_t rank, const size_t* dims, const size_t* dst_strides, const size_t* src_strides,
                size_t inner_bytes, uint8_t* dst, const uint8_t* src) {
  if (rank <= 1) {
    std::memcpy(dst, src, inner_bytes);
    return;
  }
  for (size_t i = 0; i < dims[0]; ++i)
    copy_block(rank - 1, dims + 1, dst_strides + 1, src_strides + 1, inner_bytes, dst + i * dst_strides[0],
               src + i * src_strides[0]);
}

// Row-major byte strides of dims (rank >= 1): stride[rank - 1] = es.
void byte_strides(size_t es, size_t rank, const size_t* dims, size_t* stride) {
  stride[rank - 1] = es;
  for (size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * dims[d + 1];
}

size_t product(size_t rank, const size_t* dims) {
  size_t n = 1;
  for (size_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

}  // namespace

// ------------------------------------------------------------------------------------------------ transpose
void transpose_bytes(size_t es, size_t rank, const size_t* in_dims, const size_t* perm, const void* in,
                     void* out, Parallel& par) {
  const size_t total = product(rank, in_dims);
  if (total == 0) return;
  // 1. Drop size-1 dims (renumbering the remaining input dims).
  size_t idims[kMaxRank], iperm[kMaxRank], new_index[kMaxRank];
  size_t r = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (in_dims[d] != 1) {
      new_index[d] = r;
      idims[r++] = in_dims[d];
    }
  }
  size_t pr = 0;
  for (size_t i = 0; i < rank; ++i)
    if (in_dims[perm[i]] != 1) iperm[pr++] = new_index[perm[i]];
  // 2. Merge output dims that are adjacent in the input too: out i, i+1 with perm[i+1] == perm[i] + 1.
  size_t mdims[kMaxRank], mperm[kMaxRank];  // merged input dims, merged perm
  {
    // Groups of output positions; each group is a run of consecutive input dims.
    size_t group_start_in[kMaxRank], group_len[kMaxRank];
    size_t ng = 0;
    for (size_t i = 0; i < r; ++i) {
      if (ng > 0 && iperm[i] == group_start_in[ng - 1] + group_len[ng - 1]) {
        ++group_len[ng - 1];
      } else {
        group_start_in[ng] = iperm[i];
        group_len[ng] = 1;
        ++ng;
      }
    }
    // Order groups by input position to number the merged input dims.
    size_t order[kMaxRank];
    for (size_t g = 0; g < ng; ++g) order[g] = g;
    for (size_t i = 1; i < ng; ++i)  // insertion sort: at most 8 entries
      for (size_t j = i; j > 0 && group_start_in[order[j]] < group_start_in[order[j - 1]]; --j)
        std::swap(order[j], order[j - 1]);
    for (size_t j = 0; j < ng; ++j) {
      const size_t g = order[j];
      mdims[j] = product(group_len[g], idims + group_start_in[g]);
      mperm[g] = j;
    }
    r = ng;
  }
  const uint8_t* src = static_cast<const uint8_t*>(in);
  uint8_t* dst = static_cast<uint8_t*>(out);
  if (r <= 1) {  // identity after collapsing
    std::memcpy(dst, src, total * es);
    return;
  }
  // Byte strides: input strides per input dim, output dims/strides per output position.
  size_t in_stride[kMaxRank], odims[kMaxRank], ostride[kMaxRank], src_stride_o[kMaxRank];
  byte_strides(es, r, mdims, in_stride);
  for (size_t i = 0; i < r; ++i) {
    odims[i] = mdims[mperm[i]];
    src_stride_o[i] = in_stride[mperm[i]];
  }
  byte_strides(es, r, odims, ostride);
  if (mperm[r - 1] == r - 1) {
    // The last dim stays last (e.g. swapping outer dims): whole contiguous rows move.
    const size_t row_bytes = odims[r - 1] * es;
    const size_t rows = total / odims[r - 1];
    size_t tasks = 1;
    if (par.threads() > 1 && total * es >= 65536) tasks = std::min(rows, par.threads() * 4);
    par.run(tasks, [&](size_t task) {
      const size_t r0 = rows * task / tasks, r1 = rows * (task + 1) / tasks;
      for (size_t row = r0; row < r1; ++row) {
        size_t o = row, soff = 0;
        for (size_t i = r - 1; i-- > 0;) {
          const size_t idx = o % odims[i];
          o /= odims[i];
          soff += idx * src_stride_o[i];
        }
        std::memcpy(dst + row * row_bytes, src + soff, row_bytes);
      }
    });
    return;
  }
  // Otherwise the core is a 2-D transpose between output position q (holding the input's last dim, contiguous in src)
  // and output position r-1 (contiguous in dst). Tile it so both sides touch whole cache lines.
  size_t q = 0;
  while (mperm[q] != r - 1) ++q;
  size_t outer_pos[kMaxRank], n_outer = 0;
  for (size_t i = 0; i + 1 < r; ++i)
    if (i != q) outer_pos[n_outer++] = i;
  size_t outer = 1;
  for (size_t k = 0; k < n_outer; ++k) outer *= odims[outer_pos[k]];
  constexpr size_t kTile = 32;
  const size_t dq = odims[q], dl = odims[r - 1];
  const size_t qblocks = (dq + kTile - 1) / kTile;
  const size_t units = outer * qblocks;
  size_t tasks = 1;
  if (par.threads() > 1 && total * es >= 65536) tasks = std::min(units, par.threads() * 4);
  const size_t sq_src = src_stride_o[q], sq_dst = ostride[q];
  const size_t sl_src = src_stride_o[r - 1];
  par.run(tasks, [&](size_t task) {
    const size_t u0 = units * task / tasks, u1 = units * (task + 1) / tasks;
    for (size_t u = u0; u < u1; ++u) {
      size_t o = u / qblocks;
      const size_t qb = u % qblocks;
      size_t soff = 0, doff = 0;
      for (size_t k = n_outer; k-- > 0;) {
        const size_t pos = outer_pos[k];
        const size_t idx = o % odims[pos];
        o /= odims[pos];
        soff += idx * src_stride_o[pos];
        doff += idx * ostride[pos];
      }
      const size_t q0 = qb * kTile, q1 = std::min(dq, q0 + kTile);
      for (size_t l0 = 0; l0 < dl; l0 += kTile) {
        const size_t l1 = std::min(dl, l0 + kTile);
        for (size_t qi = q0; qi < q1; ++qi)
          copy_strided(es, l1 - l0, dst + doff + qi * sq_dst + l0 * es, es,
                       src + soff + qi * sq_src + l0 * sl_src, sl_src);
      }
    }
  });
}

// ------------------------------------------------------------------------------------------------ slice
void slice_bytes(size_t es, size_t rank, const size_t* in_dims, const size_t* offsets, const size_t* out_dims,
                 const void* in, void* out) {
  const size_t total = product(rank, out_dims);
  if (total == 0) return;
  if (rank == 0) {
    std::memcpy(out, in, es);
    return;
  }
  size_t in_stride[kMaxRank], out_stride[kMaxRank];
  byte_strides(es, rank, in_dims, in_stride);
  byte_strides(es, rank, out_dims, out_stride);
  // The innermost contiguous run: trailing dims taken whole, plus the first partial one.
  size_t j = rank - 1;
  while (j > 0 && out_dims[j] == in_dims[j]) --j;
  const size_t inner_bytes = out_dims[j] * in_stride[j];
  size_t src_off = 0;
  for (size_t d = 0; d < rank; ++d) src_off += offsets[d] * in_stride[d];
  copy_block(j + 1, out_dims, out_stride, in_stride, inner_bytes, static_cast<uint8_t*>(out),
             static_cast<const uint8_t*>(in) + src_off);
}

// ------------------------------------------------------------------------------------------------ pad
void pad_bytes(size_t es, size_t rank, const size_t* in_dims, const size_t* pre, const size_t* post,
               const void* fill, const void* in, void* out) {
  size_t out_dims[kMaxRank];
  for (size_t d = 0; d < rank; ++d) out_dims[d] = pre[d] + in_dims[d] + post[d];
  const size_t total = product(rank, out_dims);
  if (total == 0) return;
  uint8_t* dst = static_cast<uint8_t*>(out);
  // Fill everything with the pattern (doubling copies), then drop the input block in place.
  std::memcpy(dst, fill, es);
  size_t done = es;
  const size_t bytes = total * es;
  while (done < bytes) {
    const size_t n = std::min(done, bytes - done);
    std::memcpy(dst + done, dst, n);
    done += n;
  }
  if (product(rank, in_dims) == 0) return;
  if (rank == 0) {
    std::memcpy(dst, in, es);
    return;
  }
  size_t in_stride[kMaxRank], out_stride[kMaxRank];
  byte_strides(es, rank, in_dims, in_stride);
  byte_strides(es, rank, out_dims, out_stride);
  size_t dst_off = 0;
  for (size_t d = 0; d < rank; ++d) dst_off += pre[d] * out_stride[d];
  size_t j = rank - 1;
  while (j > 0 && pre[j] == 0 && post[j] == 0) --j;
  const size_t inner_bytes = in_dims[j] * in_stride[j];
  copy_block(j + 1, in_dims, out_stride, in_stride, inner_bytes, dst + dst_off,
             static_cast<const uint8_t*>(in));
}

// ------------------------------------------------------------------------------------------------ concat
void concat_bytes(size_t n_inputs, const void* const* inputs, const size_t* inner_bytes, size_t outer,
                  void* out) {
  size_t row = 0;
  for (size_t i = 0; i < n_inputs; ++i) row += inner_bytes[i];
  uint8_t* dst = static_cast<uint8_t*>(out);
  for (size_t o = 0; o < outer; ++o) {
    size_t off = 0;
    for (size_t i = 0; i < n_inputs; ++i) {
      if (inner_bytes[i])
        std::memcpy(dst + o * row + off, static_cast<const uint8_t*>(inputs[i]) + o * inner_bytes[i],
                    inner_bytes[i]);
      off += inner_bytes[i];
    }
  }
}

// ------------------------------------------------------------------------------------------------ broadcast
bool make_binary_shape(size_t a_rank, const size_t* a_dims, size_t b_rank, const size_t* b_dims,
                       BinaryShape* s) {
  constexpr size_t kMax = 16;
  const size_t r = std::max(a_rank, b_rank);
  if (r > kMax) return false;
  size_t da[kMax], db[kMax], od[kMax];
  for (size_t i = 0; i < r; ++i) {
    const size_t ia = i + a_rank, ib = i + b_rank;  // right-aligned: position i of r maps to ia - r
    da[i] = ia >= r ? a_dims[ia - r] : 1;
    db[i] = ib >= r ? b_dims[ib - r] : 1;
    if (da[i] != db[i] && da[i] != 1 && db[i] != 1) return false;
    od[i] = da[i] == 1 ? db[i] : da[i];
  }
  // Contiguous strides of each operand over its own (right-aligned) dims, 0 where it broadcasts.
  size_t sa[kMax], sb[kMax];
  size_t acc_a = 1, acc_b = 1;
  for (size_t i = r; i-- > 0;) {
    sa[i] = (da[i] == 1) ? 0 : acc_a;
    sb[i] = (db[i] == 1) ? 0 : acc_b;
    acc_a *= da[i];
    acc_b *= db[i];
  }
  *s = BinaryShape{};
  for (size_t i = 0; i < r; ++i) {
    if (od[i] == 0) {  // empty output
      s->rank = 1;
      return true;
    }
  }
  // Keep non-1 dims, merging a dim into the previous kept one when both operands stay contiguous across them.
  size_t cd[kMax], ca[kMax], cb[kMax];
  size_t n = 0;
  for (size_t i = 0; i < r; ++i) {
    if (od[i] == 1) continue;
    if (n > 0 && ca[n - 1] == sa[i] * od[i] && cb[n - 1] == sb[i] * od[i]) {
      cd[n - 1] *= od[i];
      ca[n - 1] = sa[i];
      cb[n - 1] = sb[i];
    } else {
      cd[n] = od[i];
      ca[n] = sa[i];
      cb[n] = sb[i];
      ++n;
    }
  }
  if (n > kMaxBinaryRank) return false;
  s->rank = n;
  for (size_t i = 0; i < n; ++i) {
    s->out_dims[i] = cd[i];
    s->a_strides[i] = ca[i];
    s->b_strides[i] = cb[i];
  }
  return true;
}

BinaryShape flat_binary_shape(size_t n) {
  BinaryShape s;
  s.rank = 1;
  s.out_dims[0] = n;
  s.a_strides[0] = s.b_strides[0] = 1;
  return s;
}

// From the row's multi-index: the kernels visit rows sparsely enough (a task's rows, each a whole inner run)
// that no odometer is needed.
void binary_row_offsets(const BinaryShape& s, size_t row, size_t* oa, size_t* ob) {
  size_t a = 0, b = 0;
  for (size_t d = s.rank - 1; d-- > 0;) {
    const size_t idx = row % s.out_dims[d];
    row /= s.out_dims[d];
    a += idx * s.a_strides[d];
    b += idx * s.b_strides[d];
  }
  *oa = a;
  *ob = b;
}

}  // namespace webxnn
