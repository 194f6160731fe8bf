// The packed layout of the int8 depthwise convolution (table.def: qdwconv2d), private to csrc/kernels: the
// scalar packer (scalar/qdwconv.cc) writes it, the scalar and AVX2 qdwconv2d read it.
//
//   [64-byte header][tile 0][tile 1]...[zero row]
// Output channel c * m + j (m: the depth multiplier) is channel c of multiplier slice j; each slice's C channels
// are cut into tiles of 16 (the last one zero-padded), slice after slice. A tile is
//   [int32 bias'[16]][float scale[16]][pairs x 16 slots x (int16 w[tap 2p], int16 w[tap 2p + 1])]
// with pairs = taps rounded up to 2, halved (the odd last tap paired with a zero weight), and
// bias' = bias - za * sum_taps w (int32, wrapping). The 16 channels sit in the order of vpunpck{l,h}wd + vpmaddwd on
// two taps' sign-extended input rows (qdw_slot): slots 0..7 hold channels 0-3, 8-11, slots 8..15 channels 4-7,
// 12-15. The zero row: qdw_row_bytes(C) bytes of the input zero point, the row of padding taps.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace webxnn {

constexpr size_t kQDwTile = 16;  // channels per tile

struct QDwHeader {
  uint64_t channels;  // C
  uint32_t multiplier, taps, pairs;
  int32_t out_zero_point;
  QType a_type, out_type;
};

// The slot of channel i (0..15) of a tile.
constexpr size_t qdw_slot(size_t i) { return i < 4 ? i : i < 8 ? i + 4 : i < 12 ? i - 4 : i; }
constexpr size_t qdw_tile_bytes(size_t pairs) { return kQDwTile * 8 + pairs * kQDwTile * 4; }
constexpr size_t qdw_row_bytes(size_t C) { return (C + kQDwTile - 1) / kQDwTile * kQDwTile; }

// Tiles of one multiplier slice; the tiles' bytes (where the zero row starts, after the header).
size_t qdw_tiles(size_t C);
size_t qdw_tiles_bytes(const QDwHeader& h);

// The clamp a q8 kernel applies before rounding: [out_min, out_max] clipped to the output type's range, minus
// the output zero point (qgemm's too: qgemm_run_params).
void q8_clamp_bounds(QType out_type, int32_t out_zero_point, int32_t out_min, int32_t out_max, float* lo,
                     float* hi);

}  // namespace webxnn
