// CPU contexts: the device plus a persistent pool of worker threads. Ops run
// to completion before they return, so synchronize has nothing to wait for.
#include <cstddef>
#include <new>

#include "cpu_internal.h"
#include "option_checks.h"

namespace rill::cpu {

namespace {

// Worker threads a context may ask for: far above any machine's cores, low
// enough that a typo cannot make the pool exhaust the process.
constexpr int64_t kMaxThreads = 65536;

}  // namespace

rill_status check_options(const rill_backend_option* options, uint32_t count, uint32_t* out_rejected) {
  const std::string problem = rill_options::check(
      options, count, {{"threads", RILL_BACKEND_OPTION_INT, 0, kMaxThreads}}, out_rejected);
  return problem.empty() ? RILL_OK : fail(RILL_ERROR_CONFIG, problem);
}

rill_status context_create(const rill_backend_context_options* options, rill_backend_context** out_ctx) {
  // Only the members inside the caller's struct_size are read.
  const int32_t index = RILL_STRUCT_HAS(rill_backend_context_options, options, device_index) ? options->device_index : 0;
  if (index != 0) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE, "cpu: device " + std::to_string(index) +
                                                    " does not exist (the CPU backend has one device, 0)");
  }
  unsigned threads = 0;
  if (rill_options::has_option_list(options)) {
    if (const rill_backend_option* t = rill_options::find(options->options, options->option_count, "threads")) {
      threads = static_cast<unsigned>(t->int_value);
    }
  } else if (RILL_STRUCT_HAS(rill_backend_context_options, options, threads)) {
    threads = options->threads;  // a version 1-2 caller
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
