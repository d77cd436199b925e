// CPU contexts: the device plus a persistent pool of worker threads. Ops run
// to completion before they return, so synchronize has nothing to wait for.
#include <cstddef>
#include <new>
#include <string>
#include <system_error>

#include "cpu_internal.h"
#include "option_checks.h"

namespace rill::cpu {

namespace {

// Threads a context may ask for. The pool starts them all at once, so the
// bound is what a process can afford to start on a typo (each thread reserves
// a stack), yet above the hardware threads of the largest two-socket servers.
constexpr rill_options::Key kThreads{"threads", RILL_BACKEND_OPTION_INT, 0, 1024};

}  // namespace

rill_status check_options(const rill_backend_option* options, uint32_t count, uint32_t* out_rejected) {
  const std::string problem = rill_options::check(options, count, {kThreads}, out_rejected);
  return problem.empty() ? RILL_OK : fail(RILL_ERROR_CONFIG, problem);
}

rill_status context_create(const rill_backend_context_options* options, rill_backend_context** out_ctx) {
  // Only the members inside the caller's struct_size are read.
  const int32_t index = RILL_STRUCT_HAS(rill_backend_context_options, options, device_index) ? options->device_index : 0;
  if (index != 0) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE, "cpu: device " + std::to_string(index) +
                                                    " does not exist (the CPU backend has one device, 0)");
  }
  // check_options saw an option list only if the host called it; a version
  // 1-2 caller's field it never sees. Both are checked here as it would.
  rill_backend_option threads{kThreads.name, RILL_BACKEND_OPTION_INT, 0, 0.0, nullptr};
  if (rill_options::has_option_list(options)) {
    if (const rill_backend_option* t = rill_options::find(options->options, options->option_count, "threads")) {
      threads = *t;
    }
  } else if (RILL_STRUCT_HAS(rill_backend_context_options, options, threads)) {
    threads.int_value = options->threads;
  }
  const std::string problem = rill_options::problem_with(threads, {kThreads});
  if (!problem.empty()) return fail(RILL_ERROR_CONFIG, "cpu: " + problem);
  const unsigned pool_threads =
      threads.int_value == 0 ? hardware_threads() : static_cast<unsigned>(threads.int_value);
  rill_backend_context* ctx = nullptr;
  try {
    ctx = new rill_backend_context(pool_threads);
    ctx->device_name = device_name(pool_threads);
  } catch (const std::system_error& e) {
    delete ctx;
    return fail(RILL_ERROR_OUT_OF_MEMORY,
                "cpu: the system could not start a pool of " + std::to_string(pool_threads) + " threads (" +
                    e.what() + ")");
  } catch (const std::bad_alloc&) {
    delete ctx;
    return fail(RILL_ERROR_OUT_OF_MEMORY, "cpu: out of memory creating a context");
  }
  *out_ctx = ctx;
  return RILL_OK;
}

void context_destroy(rill_backend_context* ctx) { delete ctx; }

const char* context_device_name(rill_backend_context* ctx) { return ctx->device_name.c_str(); }

rill_status context_synchronize(rill_backend_context*) { return RILL_OK; }

}  // namespace rill::cpu
