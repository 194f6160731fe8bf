// A tensor seen through a StaticTranspose as a batch of matrices at strides (kernels.h's MatStrides), so a
// BatchMatrixMultiply reads its operands and writes its output where the transposes around it would have put
// them, and the transposes never run: attention's head split ([tokens, heads * dim] -> [heads, tokens, dim])
// and merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "runtime/model.h"

namespace webxnn {

using Strides = std::vector<size_t>;  // elements between neighbours along each dim

inline Strides dense_strides(const Shape& s) {
  Strides st(s.size());
  size_t step = 1;
  for (size_t d = s.size(); d-- > 0;) {
    st[d] = step;
    step *= s[d];
  }
  return st;
}

// A transpose's output dims (dim d is input dim perm[d]) as strides over its dense input: how a reader of the
// output finds it in the input in place.
inline Strides strides_through_transpose(const Shape& in, const std::vector<uint32_t>& perm) {
  const Strides dense = dense_strides(in);
  Strides st(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) st[d] = dense[perm[d]];
  return st;
}

// A transpose's input dims as strides over its dense output: how a writer of the input can place each element
// where the transpose would have put it.
inline Strides strides_into_transpose(const Shape& out, const std::vector<uint32_t>& perm) {
  const Strides dense = dense_strides(out);
  Strides st(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) st[perm[d]] = dense[d];
  return st;
}

// A [..., rows, cols] tensor whose dims lie `st` apart as a batch of matrices: the batch dims must flatten into
// one stride, and the columns be adjacent. With `swapped` non-null, adjacent rows do too (the matrices are then
// read transposed: *swapped is set and m->row is the columns' stride). False when neither holds.
inline bool as_matrices(const Shape& s, const Strides& st, MatStrides* m, bool* swapped = nullptr) {
  const size_t r = s.size();
  if (r < 2 || st.size() != r) return false;
  const size_t rows = s[r - 2], cols = s[r - 1];
  if (swapped) *swapped = false;
  if (cols == 1 || st[r - 1] == 1) {
    m->row = rows == 1 ? cols : st[r - 2];
  } else if (swapped && (rows == 1 || st[r - 2] == 1)) {
    *swapped = true;
    m->row = st[r - 1];
  } else {
    return false;
  }
  // Batch index b = sum of idx_d * (sizes of the batch dims inside d): dim d must lie at batch * that product.
  m->batch = 0;
  size_t inner = 0;  // product of the sizes of the batch dims inside, once one has been seen
  for (size_t d = r - 2; d-- > 0;) {
    if (s[d] == 1) continue;
    if (inner == 0) {
      m->batch = st[d];
      inner = s[d];
      continue;
    }
    if (st[d] != m->batch * inner) return false;
    inner *= s[d];
  }
  return true;
}

}  // namespace webxnn
