// The CPU backend's one device: the host CPU.
#include <cstdio>
#include <cstring>
#include <thread>

#include "cpu_internal.h"
#include "cpu_kernels.h"
#include "platform.h"

namespace rill::cpu {

unsigned hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

const char* isa_description() { return kernels().isa; }

std::string device_name(unsigned threads) {
  return "x86-64 CPU, " + std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") + isa_description();
}

rill_status device_count(uint32_t* out_count) {
  *out_count = 1;
  return RILL_OK;
}

rill_status describe_device(uint32_t index, rill_backend_device_info* out_info) {
  if (out_info->struct_size < sizeof out_info->struct_size) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, "cpu: describe_device: out_info->struct_size must be at least 4, given " +
                                                 std::to_string(out_info->struct_size));
  }
  if (index != 0) {
    return fail(RILL_ERROR_INVALID_ARGUMENT,
                "cpu: device index: expected 0 (the CPU backend has one device), got " + std::to_string(index));
  }
  rill_backend_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  std::snprintf(info.name, sizeof info.name, "%s", device_name(hardware_threads()).c_str());
  info.type = RILL_DEVICE_TYPE_CPU;
  info.memory_bytes = platform::physical_memory_bytes();
  // The f32 lanes of one vector register in the kernels in use.
  info.subgroup_size = std::strcmp(isa_description(), "scalar") == 0 ? 1 : 8;
  std::snprintf(info.details, sizeof info.details, "kernels: %s; hardware threads: %u; GEMM for more than %lld rows: %s",
                isa_description(), hardware_threads(), static_cast<long long>(kGemmFewRowsMax), gemm_engine().c_str());
  // Copy only what the caller's struct holds.
  const uint32_t size = out_info->struct_size < sizeof info ? out_info->struct_size : sizeof info;
  std::memcpy(out_info, &info, size);
  out_info->struct_size = size;
  return RILL_OK;
}

}  // namespace rill::cpu
