// Picks the instruction set of every CPU kernel, once per process: the widest
// the running CPU supports. The environment variable RILL_CPU_ISA, read on
// first use, forces one, to test each ISA's kernels on one machine: "scalar"
// (the portable kernels), "avx2" (where the CPU has AVX2, FMA and F16C; else a
// warning and the portable kernels), "avx512" (the AVX2 table with the
// AVX-512F GEMM, and the block-weight tiles in VNNI where the CPU has it; else
// a warning and the widest of the others); "auto" or unset picks.
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <string>

#include "cpu_internal.h"
#include "cpu_kernels.h"

namespace rill::cpu {

bool cpu_has_avx2() {
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
  __builtin_cpu_init();
  // F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
  // does not know "f16c".
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
#else
  return false;
#endif
}

namespace {

bool cpu_has_avx512f() {
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
  // libgcc's check includes the operating system's support for the zmm state.
  __builtin_cpu_init();
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
// The AVX2 kernels with the AVX-512F GEMM: the GEMM is where the wider
// registers pay (a register tile of four rows); the other ops are bound by
// memory or by conversions that AVX-512F does not speed up.
Kernels with_avx512_gemm() {
  Kernels table = avx2::kKernels;
  table.isa = "AVX2+FMA+F16C, AVX-512F GEMM";
  table.gemm_rows = avx512::gemm_rows;
  table.gemm_panel = avx512::gemm_panel;
  table.gemm_panel_cols = avx512::kGemmPanelCols;
  table.gemm_panel_rows = avx512::kGemmPanelRows;
  return table;
}
#endif

void warn(const std::string& message) {
  const rill_host_services* host = host_services();
  if (host && host->log) host->log(RILL_LOG_WARNING, "cpu", message.c_str());
}

Isa select_isa() {
  const char* forced = std::getenv("RILL_CPU_ISA");
  const std::string choice = forced ? forced : "";
  if (choice == "scalar") return Isa::scalar;
  if (choice == "avx2" && !cpu_has_avx2()) {
    warn("RILL_CPU_ISA: 'avx2' asked for, but this CPU or build lacks AVX2+FMA+F16C; using the scalar kernels");
    return Isa::scalar;
  }
  if (choice == "avx2") return Isa::avx2;
  if (choice == "avx512" && !cpu_has_avx512f()) {
    warn("RILL_CPU_ISA: 'avx512' asked for, but this CPU or build lacks AVX-512F; using auto");
  } else if (!choice.empty() && choice != "auto" && choice != "avx512") {
    warn("RILL_CPU_ISA: expected 'scalar', 'avx2', 'avx512' or 'auto', got '" + choice + "'; using auto");
  }
  if (cpu_has_avx512f()) return Isa::avx512;
  if (cpu_has_avx2()) return Isa::avx2;
  return Isa::scalar;
}

const Kernels& select_kernels() {
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
  static const Kernels avx512_gemm = with_avx512_gemm();
  switch (isa()) {
    case Isa::avx512: return avx512_gemm;
    case Isa::avx2: return avx2::kKernels;
    case Isa::scalar: break;
  }
#endif
  return scalar::kKernels;
}

}  // namespace

Isa isa() {
  static const Isa chosen = select_isa();
  return chosen;
}

const Kernels& kernels() {
  static const Kernels& chosen = select_kernels();
  return chosen;
}

int64_t gemv_prefetch_bytes() {
#if defined(__x86_64__) || defined(__i386__)
  static const int64_t bytes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("intel") ? int64_t{4096} : int64_t{1024};
  }();
  return bytes;
#else
  return 1024;
#endif
}

}  // namespace rill::cpu
