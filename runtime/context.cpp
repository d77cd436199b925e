// rill_context_*: creation from config text or a file, teardown, accessors.

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "backend_registry.h"
#include "backend_selection.h"
#include "config.h"
#include "errors.h"
#include "host_services.h"
#include "layer/model.h"
#include "objects.h"
#include "platform.h"
#include "tensors.h"

namespace rill {
namespace {

// host_device: a rill_vulkan_device the context is to run on, or NULL.
rill_status create_context(std::string_view text, const std::string& source, const char* function,
                           rill_context** out_ctx, const rill_vulkan_device* host_device = nullptr) {
  Config config;
  const rill_status parsed = parse_config(text, source, function, config);
  if (parsed != RILL_OK) return parsed;
  if (host_device != nullptr && config.backend != "vulkan" && config.backend != "auto") {
    return fail(RILL_ERROR_CONFIG, std::string(function) + ": runtime.backend: expected \"vulkan\" or \"auto\" " +
                                       "on a host's Vulkan device, got \"" + config.backend + "\"");
  }
  // Allocated before the backend context, so that nothing can fail once that exists.
  auto context = std::make_unique<rill_context>();
  Selection selection;
  const rill_status selected = select_backend(config, function, host_device, selection);
  if (selected != RILL_OK) return selected;
  context->backend = selection.backend;
  context->impl = selection.context;
  context->device_name = std::move(selection.device_name);
  context->selection_report = std::move(selection.report);
  *out_ctx = context.release();
  return RILL_OK;
}

// Reads a whole file; on failure returns RILL_ERROR_IO with the reason.
rill_status read_file(const char* function, const char* path, std::string& out) {
  uint64_t bytes = 0;
  std::string problem;
  std::FILE* file = platform::open_regular_file(path, bytes, problem);
  if (file == nullptr) {
    return fail(RILL_ERROR_IO, std::string(function) + ": path: '" + path + "': " + problem);
  }
  std::string text;
  char chunk[65536];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof(chunk), file)) > 0) text.append(chunk, got);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return fail(RILL_ERROR_IO, std::string(function) + ": path: error while reading '" + path + "'");
  out = std::move(text);
  return RILL_OK;
}

// rill_context_vulkan_wait and _signal: checks the runtime's part of the
// arguments and hands the call to the backend's op, which lookup_op finds
// (nullptr when the backend has none).
template <class LookupOp>
rill_status timeline_call(const char* fn, rill_context* ctx, uint64_t semaphore, uint64_t value, LookupOp lookup_op) {
  return guarded(fn, [&] {
    const auto invalid = [&](const std::string& what) {
      return fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + what);
    };
    if (ctx == nullptr) return invalid("ctx: expected a context, got NULL");
    if (semaphore == 0) return invalid("semaphore: expected a VkSemaphore, got 0 (VK_NULL_HANDLE)");
    const auto call = lookup_op(*ctx->backend);
    if (call == nullptr) {
      const std::string got = "got one on " + ctx->backend->name;
      return fail(RILL_ERROR_UNSUPPORTED, std::string(fn) + ": ctx: expected a context on the Vulkan backend, " + got);
    }
    clear_backend_message();
    const rill_status status = call(ctx->impl, semaphore, value);
    if (status != RILL_OK) return backend_failure(fn, ctx->backend->name, status);
    return RILL_OK;
  });
}

}  // namespace
}  // namespace rill

extern "C" {

RILL_API rill_status rill_context_create(const char* config_toml, rill_context** out_ctx) {
  constexpr const char* fn = "rill_context_create";
  return rill::guarded(fn, [&] {
    if (out_ctx == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": out_ctx: expected a pointer, got NULL");
    }
    return rill::create_context(config_toml != nullptr ? config_toml : "", "config", fn, out_ctx);
  });
}

RILL_API rill_status rill_context_create_from_file(const char* path, rill_context** out_ctx) {
  constexpr const char* fn = "rill_context_create_from_file";
  return rill::guarded(fn, [&] {
    if (path == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": path: expected a file path, got NULL");
    if (out_ctx == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": out_ctx: expected a pointer, got NULL");
    }
    std::string text;
    const rill_status read = rill::read_file(fn, path, text);
    if (read != RILL_OK) return read;
    return rill::create_context(text, path, fn, out_ctx);
  });
}

RILL_API rill_status rill_context_create_on_vulkan_device(const char* config_toml, const rill_vulkan_device* device,
                                                          rill_context** out_ctx) {
  constexpr const char* fn = "rill_context_create_on_vulkan_device";
  return rill::guarded(fn, [&] {
    const auto invalid = [&](const std::string& what) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + what);
    };
    if (out_ctx == nullptr) return invalid("out_ctx: expected a pointer, got NULL");
    if (device == nullptr) return invalid("device: expected a rill_vulkan_device, got NULL");
    if (device->struct_size < sizeof(rill_vulkan_device)) {
      return invalid("device->struct_size: expected at least " + std::to_string(sizeof(rill_vulkan_device)) +
                     ", got " + std::to_string(device->struct_size));
    }
    const std::pair<const char*, const void*> handles[] = {{"instance", device->instance},
                                                           {"physical_device", device->physical_device},
                                                           {"device", device->device},
                                                           {"queue", device->queue}};
    for (const auto& [name, handle] : handles) {
      if (handle == nullptr) return invalid(std::string("device->") + name + ": expected a Vulkan handle, got NULL");
    }
    return rill::create_context(config_toml != nullptr ? config_toml : "", "config", fn, out_ctx, device);
  });
}

RILL_API rill_status rill_context_vulkan_wait(rill_context* ctx, uint64_t semaphore, uint64_t value) {
  return rill::timeline_call("rill_context_vulkan_wait", ctx, semaphore, value,
                             [](const rill::Backend& b) { return RILL_BACKEND_OP(b, wait_semaphore); });
}

RILL_API rill_status rill_context_vulkan_signal(rill_context* ctx, uint64_t semaphore, uint64_t value) {
  return rill::timeline_call("rill_context_vulkan_signal", ctx, semaphore, value,
                             [](const rill::Backend& b) { return RILL_BACKEND_OP(b, signal_semaphore); });
}

RILL_API void rill_context_destroy(rill_context* ctx) {
  if (ctx == nullptr) return;
  while (!ctx->caches.empty()) rill::layer::destroy_kv_cache(*ctx->caches.begin());
  while (!ctx->models.empty()) rill::layer::destroy_model(*ctx->models.begin());
  for (rill_tensor* tensor : ctx->tensors) {
    rill::release_buffer(*tensor);
    delete tensor;
  }
  ctx->backend->table->context_destroy(ctx->impl);
  delete ctx;
}

RILL_API const char* rill_context_backend_name(const rill_context* ctx) {
  return ctx != nullptr ? ctx->backend->name.c_str() : "";
}

RILL_API const char* rill_context_device_name(const rill_context* ctx) {
  return ctx != nullptr ? ctx->device_name.c_str() : "";
}

RILL_API const char* rill_context_selection_report(const rill_context* ctx) {
  return ctx != nullptr ? ctx->selection_report.c_str() : "";
}

RILL_API rill_status rill_context_synchronize(rill_context* ctx) {
  constexpr const char* fn = "rill_context_synchronize";
  return rill::guarded(fn, [&] {
    if (ctx == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": ctx: expected a context, got NULL");
    rill::clear_backend_message();
    const rill_status status = ctx->backend->table->synchronize(ctx->impl);
    if (status != RILL_OK) return rill::backend_failure(fn, ctx->backend->name, status);
    return RILL_OK;
  });
}

}  // extern "C"
