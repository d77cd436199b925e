// Picks the kernel table for the running CPU. The environment variable
// RILL_CPU_ISA=scalar forces the portable kernels (for testing them on a
// machine that has AVX2).
#include <cstdlib>
#include <cstring>

#include "cpu_kernels.h"

namespace rill::cpu {

namespace {

const Kernels& select_kernels() {
  const char* forced = std::getenv("RILL_CPU_ISA");
  const bool force_scalar = forced && std::strcmp(forced, "scalar") == 0;
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
  if (!force_scalar) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
      return avx2::kKernels;
    }
  }
#else
  (void)force_scalar;
#endif
  return scalar::kKernels;
}

}  // namespace

const Kernels& kernels() {
  static const Kernels& chosen = select_kernels();
  return chosen;
}

}  // namespace rill::cpu
