// int8 depthwise convolution (table.def's qdwconv2d): the packer (qdw_layout.h's layout, which the AVX2 kernel
// reads too) and the scalar reference kernel, on the same packed tiles.
#include <cstring>

#include "kernels/qdw_layout.h"
#include "kernels/qgemm_layout.h"
#include "kernels/scalar/common.h"
#include "kernels/scalar/scalar.h"

namespace webxnn {

size_t qdw_tiles(const QDwHeader& h) { return (h.channels * h.multiplier + kQDwTile - 1) / kQDwTile; }

namespace {
QDwHeader qdw_header(const ConvParams& p) {
  QDwHeader h{};
  h.channels = p.groups;
  h.multiplier = p.group_output_channels;
  h.kernel_h = p.kernel_h;
  h.kernel_w = p.kernel_w;
  h.kpairs = (p.kernel_w + 1) / 2;
  return h;
}
}  // namespace

namespace scalar {

size_t qdwconv2d_packed_size(const ConvParams& p) {
  const QDwHeader h = qdw_header(p);
  return 64 + qdw_tiles(h) * qdw_tile_bytes(size_t{h.kernel_h} * h.kpairs);
}

void qdwconv2d_pack(const ConvParams& p, const int8_t* filter_1hwo, const int32_t* bias, const QGemmQuant& q,
                    void* packed) {
  uint8_t* base = static_cast<uint8_t*>(packed);
  std::memset(base, 0, qdwconv2d_packed_size(p));
  QDwHeader h = qdw_header(p);
  h.bounded = 1;
  h.a_zero_point = q.a_zero_point;
  h.out_zero_point = q.out_zero_point;
  h.a_type = q.a_type;
  h.out_type = q.out_type;
  const size_t OC = h.channels * h.multiplier, tb = qdw_tile_bytes(size_t{h.kernel_h} * h.kpairs);
  for (size_t o = 0; o < OC; ++o) {
    const size_t s = qdw_slot(o % kQDwTile);
    uint8_t* tile = base + 64 + (o / kQDwTile) * tb;
    int16_t* w = reinterpret_cast<int16_t*>(tile + kQDwTile * 8);
    // Unsigned arithmetic: wraps like the kernels' int32 sums (no UB on hostile values).
    uint32_t wsum = 0;
    double wabs = 0;
    for (size_t ky = 0; ky < h.kernel_h; ++ky) {
      for (size_t kx = 0; kx < h.kernel_w; ++kx) {
        const int8_t v = filter_1hwo[(ky * h.kernel_w + kx) * OC + o];
        w[qdw_weight(h.kpairs, ky, kx, s)] = v;
        wsum += static_cast<uint32_t>(static_cast<int32_t>(v));
        wabs += v < 0 ? -v : v;
      }
    }
    const uint32_t za = static_cast<uint32_t>(q.a_zero_point);
    const int32_t b = static_cast<int32_t>((bias ? static_cast<uint32_t>(bias[o]) : 0u) - za * wsum);
    const float scale = q.a_scale * q.w_scales[q.w_scale_count > 1 ? o : 0] / q.out_scale;
    // Inputs are at most 255 in magnitude (u8 or s8); the int32 sum may wrap, which the bound must exclude.
    const double most = (b < 0 ? -static_cast<double>(b) : b) + 255.0 * wabs;
    const double ascale = scale < 0 ? -static_cast<double>(scale) : scale;
    if (!(most < 2147483647.0 && most * ascale < 1073741824.0)) h.bounded = 0;  // NaN scale: not bounded
    std::memcpy(tile + s * 4, &b, 4);
    std::memcpy(tile + kQDwTile * 4 + s * 4, &scale, 4);
  }
  std::memcpy(base, &h, sizeof(h));
}

void qdwconv2d(const ConvParams& p, size_t N, size_t H, size_t W, const void* in, size_t OH, size_t OW,
               const void* packed, void* out, int32_t out_min, int32_t out_max, Parallel& par) {
  const uint8_t* base = static_cast<const uint8_t*>(packed);
  QDwHeader h;
  std::memcpy(&h, base, sizeof(h));
  float lo = 0.f, hi = 0.f;
  q8_clamp_bounds(h.out_type, h.out_zero_point, out_min, out_max, &lo, &hi);
  const size_t C = h.channels, m = h.multiplier, OC = C * m, kp = h.kpairs;
  const size_t tb = qdw_tile_bytes(size_t{h.kernel_h} * kp);
  const bool a_u8 = h.a_type == QType::kU8;
  const uint8_t* x = static_cast<const uint8_t*>(in);
  uint8_t* y = static_cast<uint8_t*>(out);
  const size_t rows = N * OH;
  const size_t tasks = pick_tasks(par, rows, static_cast<double>(OW) * OC * h.kernel_h * h.kernel_w);
  par.run(tasks, [&](size_t task) {
    size_t r0, r1;
    chunk_range(rows, tasks, task, &r0, &r1);
    for (size_t r = r0; r < r1; ++r) {
      const size_t n = r / OH, oy = r % OH;
      for (size_t ox = 0; ox < OW; ++ox) {
        for (size_t o = 0; o < OC; ++o) {
          const size_t c = o / m, s = qdw_slot(o % kQDwTile);
          const uint8_t* tile = base + 64 + (o / kQDwTile) * tb;
          const int16_t* w = reinterpret_cast<const int16_t*>(tile + kQDwTile * 8);
          int32_t b;
          float scale;
          std::memcpy(&b, tile + s * 4, 4);
          std::memcpy(&scale, tile + kQDwTile * 4 + s * 4, 4);
          uint32_t acc = static_cast<uint32_t>(b);
          for (size_t ky = 0; ky < h.kernel_h; ++ky) {
            for (size_t kx = 0; kx < h.kernel_w; ++kx) {
              // Unsigned: a coordinate in the top / left padding wraps past H / W.
              const size_t iy = oy * p.stride_h + ky * p.dilation_h - p.pad_top;
              const size_t ix = ox * p.stride_w + kx * p.dilation_w - p.pad_left;
              int32_t xv = h.a_zero_point;  // padding
              if (iy < H && ix < W) {
                const uint8_t v = x[((n * H + iy) * W + ix) * C + c];
                xv = a_u8 ? static_cast<int32_t>(v) : static_cast<int32_t>(static_cast<int8_t>(v));
              }
              acc += static_cast<uint32_t>(xv * w[qdw_weight(kp, ky, kx, s)]);
            }
          }
          y[(r * OW + ox) * OC + o] =
              static_cast<uint8_t>(requantize(static_cast<int32_t>(acc), scale, lo, hi, h.out_zero_point));
        }
      }
    }
  });
}

}  // namespace scalar
}  // namespace webxnn
