// Private to csrc/kernels: how the per-ISA translation units hand their tables to dispatch.cc.
// Only declarations live here (no inline code), so that nothing compiled with -mavx2 can leak into generic
// callers through the linker's choice of a duplicated inline function (ODR).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace webxnn {
namespace internal {

// scalar/table.cc — always present.
const KernelTable& scalar_table();

// avx2/table.cc — nullptr when the build has no AVX2 translation units (non-x86 builds).
const KernelTable* avx2_table();

// vnni/*.cc (x86 builds only; dispatch.cc calls them after checking the CPU): AVX2's table with the int8 GEMM
// entries on vpdpbusd (vnni/qgemm_vnni.h). vnni_emu_table (WEBXNN_HAVE_VNNI_EMU, testing builds): the same
// kernels with vpdpbusd emulated in AVX2.
const KernelTable* avx512vnni_table();
const KernelTable* avxvnni_table();
const KernelTable* vnni_emu_table();

// A plain-function-pointer front end to Parallel::run, defined in a generic translation unit. ISA-specific
// code calls this instead of constructing std::function itself (keeps std:: templates out of AVX2 TUs).
using TaskFn = void (*)(const void* ctx, size_t task);
void parallel_run(Parallel& par, size_t tasks, TaskFn fn, const void* ctx);
// par.threads() through a generic TU (a direct virtual call lets the compiler speculatively devirtualize
// and emit inline Parallel methods, compiled with AVX2 flags, as weak symbols).
size_t parallel_threads(const Parallel& par);

// How many tasks to split `units` independent pieces of work into, each costing about `unit_cost`
// (multiply-adds, elements or bytes): one task (run inline) below ~32k of total cost, else one per ~32k, at
// most `per_thread` per thread (a few per thread let the pool's stealing even out the load) and at most
// `units`. The one rule every kernel's parallel split uses.
size_t task_count(size_t units, double unit_cost, size_t threads, size_t per_thread);

// 64-byte aligned scratch memory owned by a generic translation unit (for AVX2 code that must not
// instantiate std::vector). Free with aligned_free.
void* aligned_alloc64(size_t bytes);
void aligned_free(void* p);

// Kernel work space that outlives the call: the calling thread's block for `slot`, at least `bytes` long,
// 64-byte aligned, contents unspecified, valid until this thread's next scratch() call for the same slot.
// Blocks only grow, and are freed when the thread exits.
// Why not aligned_alloc64 per call: glibc hands a freed block of a few hundred KB or more back to the OS
// (a worker thread's heap is trimmed on free), so the next call took a page fault per 4 KB it touched.
// Measured on ResNet-50 at 2 threads: the pool worker's Winograd tasks ran ~40 % slower than the caller's.
// Each call site owns a slot; a kernel called from inside another kernel's task uses a different one.
enum class Scratch : unsigned {
  kGemmA,  // gemm: copied A rows (one M chunk, kept across a thread's tasks of one call)
  kGemmAKey,  // gemm: the call and M chunk kGemmA holds
  kBmmB,  // batch_matmul: one product's packed B (per task)
  kIgemmGather,  // igemm: gathered input rows of narrow-channel convs (per task)
  kIgemmRows,  // igemm: a tile's input row pointers per tap, and per kernel row (per task)
  kWinogradV,  // winograd: transformed input and products (per task; the input kept for the next task)
  kWinogradKey,  // winograd: the call and tile block whose transformed input kWinogradV holds
  kDwRing,  // depthwise: ring of expanded input rows, int8: of pair rows (kept across a thread's tasks of
  // one call; fp32 and int8 share it, they never run inside each other)
  kDwRingKeys,  // depthwise: the call the ring belongs to, then which input row each ring slot holds
  kDwRow,  // depthwise with a fused project: a batch of output rows, the project's input (per task)
  kDwTaps,  // depthwise: a pixel's valid taps, input and weight pointers (per task)
  kDeconvCols,  // deconv: the GEMM's column band (per call)
  kQConvF32W,  // qconv2d's fp32-accumulation path: the weights as fp32 panels (per call, read by every task)
  kQRows,  // qgemm / qconv2d on 512-bit tiles: the activation rows a unit reads (flipped, padded; per unit)
  kIm2col,  // conv2d as one GEMM: every output pixel's window as a row (per call, read by every task)
  kCount
};
void* scratch(Scratch slot, size_t bytes);
// A number no earlier call in this process got (never 0): tells a kernel's call apart from earlier ones when
// per-thread scratch carries state from one task to the next.
uint64_t unique_call_id();
// Whether the calling thread's block of a kept scratch slot already holds `part` of call `call`, as recorded
// in its `key_slot` (then true). Else records that it does from now on and returns false: the caller fills
// the block before its next use. (Winograd's transformed input per tile block, gemm's copied A per M chunk.)
bool scratch_holds(Scratch key_slot, uint64_t call, uint64_t part);

// avx2/peak.cc (x86 builds only): `iters` steps of 12 independent 8-wide FMAs (192 flops per step). Only call
// after checking cpu_features().fma; the benchmark's FMA-peak yardstick.
float fma_peak_loop(size_t iters);
// avx2/peak.cc (x86 builds only): `iters` steps of 10 independent u8 x s8 steps (vpmaddubsw + vpmaddwd +
// vpaddd, 32 multiply-adds = 64 ops each; 640 ops per step), the int8 peak yardstick of the benchmark. Only call
// after checking cpu_features().avx2.
int32_t int8_peak_loop(size_t iters);
// vnni/avx512vnni.cc, vnni/avxvnni.cc (with their tables): `iters` steps of kVnniPeakChains independent
// vpdpbusd (zmm on AVX512-VNNI: 64 multiply-adds = 128 ops each; ymm on AVX-VNNI: 32), the int8 peak of a
// CPU whose best table is that one. Only call where dispatch offers that table.
constexpr int kVnniPeakChains = 12;
int32_t avx512vnni_peak_loop(size_t iters);
int32_t avxvnni_peak_loop(size_t iters);
// vnni/avx512vnni.cc: fma_peak_loop on zmm (384 flops per step), the fp32 peak of that table's 512-bit tiles.
// Only call where dispatch offers that table.
float avx512_fma_peak_loop(size_t iters);

}  // namespace internal
}  // namespace webxnn
