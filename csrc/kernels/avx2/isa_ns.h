// The namespace the AVX2 sources define their code in: avx2, or avx512f in a translation unit that compiles the
// fp32 GEMM family (gemm.cc, igemm.cc, winograd.cc, dwconv.cc, deconv.cc, rows.cc) again for the AVX-512 table
// (WEBXNN_F32_ZMM: kernels/avx512f/). Two namespaces, so no function compiled for AVX-512 can stand in for its
// AVX2 twin at link time.
#pragma once

#if defined(WEBXNN_F32_ZMM)
#define WEBXNN_AVX2_NS avx512f
#else
#define WEBXNN_AVX2_NS avx2
#endif
