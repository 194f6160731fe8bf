// Kernel table selection from CPU features, done once.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "kernels/internal.h"
#include "kernels/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace webxnn {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
  f.cores = std::max(1u, std::thread::hardware_concurrency());
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return f;
  const unsigned max_leaf = eax;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1;
  const bool fma = (ecx >> 12) & 1, f16c = (ecx >> 29) & 1;
  // The OS must save the YMM (and for AVX-512 the opmask/ZMM) state across context switches.
  bool ymm_os = false, zmm_os = false;
  if (osxsave) {
    unsigned xlo = 0, xhi = 0;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    ymm_os = (xlo & 0x6) == 0x6;
    zmm_os = (xlo & 0xE6) == 0xE6;
  }
  bool avx2 = false, avx512f = false, avx512vl = false, avx512bw = false, avx512vnni = false, avxvnni = false;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const unsigned max_subleaf = eax;
    avx2 = (ebx >> 5) & 1;
    avx512f = (ebx >> 16) & 1;
    avx512bw = (ebx >> 30) & 1;
    avx512vl = (ebx >> 31) & 1;
    avx512vnni = (ecx >> 11) & 1;
    if (max_subleaf >= 1) {  // leaf 7 subleaf 1 exists only then (else it may echo another leaf)
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      avxvnni = (eax >> 4) & 1;
    }
  }
  const bool avx_ok = avx && ymm_os;
  f.avx2 = avx_ok && avx2;
  f.fma = avx_ok && fma;
  f.f16c = avx_ok && f16c;
  const bool avx512_ok = avx_ok && zmm_os && avx512f;
  f.avx512f = avx512_ok;
  f.avx512vl = avx512_ok && avx512vl;
  f.avx512bw = avx512_ok && avx512bw;
  f.avx512vnni = avx512_ok && avx512vnni;
  f.avxvnni = avx_ok && avxvnni;
#endif
  return f;
}

// The AVX2 table if this build has one and the CPU can run it (AVX2 + FMA + F16C, OS-enabled YMM).
const KernelTable* avx2_if_supported() {
#if defined(WEBXNN_HAVE_X86)
  const CpuFeatures& f = cpu_features();
  if (f.avx2 && f.fma && f.f16c) return internal::avx2_table();
#endif
  return nullptr;
}

// The VNNI tables are AVX2's with the int8 GEMM entries replaced, so they need everything AVX2's does too.
const KernelTable* avx512vnni_if_supported() {
#if defined(WEBXNN_HAVE_X86) && defined(WEBXNN_HAVE_AVX512VNNI)
  const CpuFeatures& f = cpu_features();
  if (avx2_if_supported() && f.avx512vnni && f.avx512vl && f.avx512bw) return internal::avx512vnni_table();
#endif
  return nullptr;
}

const KernelTable* avxvnni_if_supported() {
#if defined(WEBXNN_HAVE_X86) && defined(WEBXNN_HAVE_AVXVNNI)
  if (avx2_if_supported() && cpu_features().avxvnni) return internal::avxvnni_table();
#endif
  return nullptr;
}

// The testing builds' emulated VNNI table: runs wherever AVX2's does.
const KernelTable* vnni_emu_if_supported() {
#if defined(WEBXNN_HAVE_X86) && defined(WEBXNN_HAVE_VNNI_EMU)
  if (avx2_if_supported()) return internal::vnni_emu_table();
#endif
  return nullptr;
}

// The best table this CPU runs: AVX512-VNNI, AVX-VNNI, AVX2, scalar. WEBXNN_ISA names a table to use instead
// (scalar, avx2, avxvnni, avx512vnni: e.g. to compare the int8 kernels on a VNNI machine), if this CPU runs it.
const KernelTable& choose() {
  const char* env = std::getenv("WEBXNN_ISA");
  if (env && *env && std::strcmp(env, "best") != 0) {
    if (const KernelTable* t = kernels_by_name(env)) return *t;
  }
  if (const KernelTable* t = avx512vnni_if_supported()) return *t;
  if (const KernelTable* t = avxvnni_if_supported()) return *t;
  if (const KernelTable* t = avx2_if_supported()) return *t;
  return internal::scalar_table();
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

const KernelTable& scalar_kernels() { return internal::scalar_table(); }

const KernelTable& best_kernels() {
  static const KernelTable& table = choose();
  return table;
}

const KernelTable* kernels_by_name(const char* name) {
  if (!name) return nullptr;
  if (std::strcmp(name, "scalar") == 0) return &internal::scalar_table();
  if (std::strcmp(name, "best") == 0) return &best_kernels();
  if (std::strcmp(name, "avx2") == 0) return avx2_if_supported();
  if (std::strcmp(name, "avx512vnni") == 0) return avx512vnni_if_supported();
  if (std::strcmp(name, "avxvnni") == 0) return avxvnni_if_supported();
  if (std::strcmp(name, "vnni-emu") == 0) return vnni_emu_if_supported();
  return nullptr;
}

// The int8 entries of a table, in a few words (cpu_info()'s "int8").
const char* int8_kernels(const KernelTable& t) {
  if (std::strcmp(t.name, "avx2") == 0)
    return "avx2 (exact: maddubs on 7-bit / sign-split weights, int16 madd)";
  if (std::strcmp(t.name, "avx512vnni") == 0) return "avx512vnni (vpdpbusd, exact)";
  if (std::strcmp(t.name, "avxvnni") == 0) return "avxvnni (vpdpbusd, exact)";
  if (std::strcmp(t.name, "vnni-emu") == 0) return "vnni-emu (vpdpbusd emulated in avx2, exact; testing)";
  return "scalar";
}

}  // namespace webxnn
