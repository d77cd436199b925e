// CPU contexts: the device plus a persistent pool of worker threads. Ops run
// to completion before they return, so synchronize has nothing to wait for.
#include <cstddef>
#include <new>

#include "cpu_internal.h"

namespace rill::cpu {

rill_status context_create(const rill_backend_context_options* options, rill_backend_context** out_ctx) {
  unsigned threads = 0;
  if (options) {
    const uint32_t size = options->struct_size;
    const auto has = [size](size_t field_end) { return size >= field_end; };
    if (has(offsetof(rill_backend_context_options, device_index) + sizeof options->device_index) &&
        options->device_index > 0) {
      return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                  "cpu: device " + std::to_string(options->device_index) + " does not exist (the CPU backend has one device, 0)");
    }
    if (has(offsetof(rill_backend_context_options, device_name) + sizeof options->device_name) &&
        options->device_index < 0 && options->device_name && options->device_name[0] != '\0' &&
        device_name(hardware_threads()).find(options->device_name) == std::string::npos) {
      return fail(RILL_ERROR_BACKEND_UNAVAILABLE, std::string("cpu: no device whose name contains '") +
                                                      options->device_name + "' (the device is '" +
                                                      device_name(hardware_threads()) + "')");
    }
    if (has(offsetof(rill_backend_context_options, threads) + sizeof options->threads)) threads = options->threads;
  }
  if (threads == 0) threads = hardware_threads();
  rill_backend_context* ctx = new (std::nothrow) rill_backend_context(threads);
  if (!ctx) return fail(RILL_ERROR_OUT_OF_MEMORY, "cpu: out of memory creating a context");
  ctx->device_name = device_name(threads);
  *out_ctx = ctx;
  return RILL_OK;
}

void context_destroy(rill_backend_context* ctx) { delete ctx; }

const char* context_device_name(rill_backend_context* ctx) { return ctx->device_name.c_str(); }

rill_status context_synchronize(rill_backend_context*) { return RILL_OK; }

}  // namespace rill::cpu
