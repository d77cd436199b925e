// Picks the kernel table for the running CPU: the widest ISA it supports. The
// environment variable RILL_CPU_ISA=scalar forces the portable kernels (to
// test them on a machine with AVX2); RILL_CPU_ISA=auto or unset picks.
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <cstring>
#include <string>

#include "cpu_internal.h"
#include "cpu_kernels.h"

namespace rill::cpu {

namespace {

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

const Kernels& select_kernels() {
  const char* forced = std::getenv("RILL_CPU_ISA");
  if (forced && std::strcmp(forced, "scalar") == 0) return scalar::kKernels;
  if (forced && forced[0] != '\0' && std::strcmp(forced, "auto") != 0) {
    const rill_host_services* host = host_services();
    if (host && host->log) {
      host->log(RILL_LOG_WARNING, "cpu",
                ("RILL_CPU_ISA: expected 'scalar' or 'auto', got '" + std::string(forced) + "'; using auto").c_str());
    }
  }
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
  if (cpu_has_avx2()) return avx2::kKernels;
#endif
  return scalar::kKernels;
}

}  // namespace

const Kernels& kernels() {
  static const Kernels& chosen = select_kernels();
  return chosen;
}

}  // namespace rill::cpu
