// The packed layout of the int8 depthwise convolution (table.def: qdwconv2d), private to csrc/kernels: the
// scalar packer (scalar/qdwconv.cc) writes it, the scalar and AVX2 qdwconv2d read it.
//
//   [64-byte header][tile 0][tile 1]...
// Output channel o = c * m + j (m: the depth multiplier) reads input channel c. The OC = C * m output channels
// are cut into tiles of 16 (the last one zero-padded). A tile is
//   [int32 bias'[16]][float scale[16]][kernel_h x kpairs pairs x 16 slots x (int16 w[ky][2p], int16 w[ky][2p+1])]
// with kpairs = kernel_w rounded up to 2, halved: each kernel row's taps paired left to right, an odd last tap
// with a zero weight (pairs never span kernel rows, so a pair reads two input columns dilation_w apart of one
// input row: the AVX2 kernel interleaves such column pairs once per input row, see avx2/qdwconv.cc), and
// bias' = bias - za * sum_taps w (int32, wrapping). The 16 channels sit in the order of vpunpck{l,h}wd +
// vpmaddwd on two sign- (zero-) extended 16-byte rows (qdw_slot): slots 0..7 hold channels 0-3, 8-11, slots
// 8..15 channels 4-7, 12-15.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace webxnn {

constexpr size_t kQDwTile = 16;  // channels per tile

struct QDwHeader {
  uint64_t channels;  // C (input channels)
  uint32_t multiplier, kernel_h, kernel_w, kpairs;
  int32_t a_zero_point, out_zero_point;
  QType a_type, out_type;
  // Every channel's |bias' + sum x * w| * scale < 2^30 for all inputs, with finite scales: the kernels may
  // round without clamping in fp32 first (avx2 requant16_bounded).
  uint8_t bounded;
};

// The slot of channel i (0..15) of a tile.
constexpr size_t qdw_slot(size_t i) { return i < 4 ? i : i < 8 ? i + 4 : i < 12 ? i - 4 : i; }
constexpr size_t qdw_tile_bytes(size_t pairs) { return kQDwTile * 8 + pairs * kQDwTile * 4; }
// The int16 weight pair slot of tap (ky, kx) for channel slot s, in a tile's weights.
constexpr size_t qdw_weight(size_t kpairs, size_t ky, size_t kx, size_t s) {
  return (ky * kpairs + kx / 2) * kQDwTile * 2 + s * 2 + kx % 2;
}

// Tiles of the OC output channels (scalar/qdwconv.cc: no inline code compiled with AVX2 flags).
size_t qdw_tiles(const QDwHeader& h);

}  // namespace webxnn
