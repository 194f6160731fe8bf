// The "vnni-emu" table (testing builds only, WEBXNN_TESTING): the VNNI kernels (qgemm_vnni.h) with vpdpbusd
// emulated exactly in AVX2, compiled with AVX2's flags, so the VNNI tables' packing, tiles, tails, K edges,
// epilogues and thread splits run on CPUs without VNNI (this project's test machine has none). Its speed means
// nothing: the emulation spends 7 instructions on one.
#include <immintrin.h>

namespace {

// vpdpbusd per 16-bit pair: the even bytes (u8 zero-extended, s8 sign-extended) and the odd ones, each through
// vpmaddwd (two products of at most 255 * 128 per int32: exact), both added to acc (wrapping, as vpdpbusd).
__attribute__((always_inline)) inline __m256i dpbusd_emu(__m256i acc, __m256i a, __m256i w) {
  const __m256i a_even = _mm256_and_si256(a, _mm256_set1_epi16(0xFF));
  const __m256i a_odd = _mm256_srli_epi16(a, 8);
  const __m256i w_even = _mm256_srai_epi16(_mm256_slli_epi16(w, 8), 8);
  const __m256i w_odd = _mm256_srai_epi16(w, 8);
  const __m256i even = _mm256_madd_epi16(a_even, w_even), odd = _mm256_madd_epi16(a_odd, w_odd);
  return _mm256_add_epi32(acc, _mm256_add_epi32(even, odd));
}

}  // namespace

#define WEBXNN_VNNI_DPBUSD dpbusd_emu
#include "kernels/vnni/qgemm_vnni.h"

// avx512vnni.cc's tile shapes (the larger rows and their tails).
const webxnn::KernelTable* webxnn::internal::vnni_emu_table() { return vnni::table<4, 8>("vnni-emu"); }
