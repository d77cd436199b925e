/* The plugin's entry points and its backend table. */
#include "versioned_tables.h"
#include "vk_internal.h"

namespace {

using namespace rill_vk;

/* Each entry point runs its implementation under guarded(), so that no C++
   exception reaches the runtime. */
const rill_backend kVulkanBackend = {
    /* .abi_version = */ RILL_BACKEND_ABI_VERSION,
    /* .struct_size = */ static_cast<uint32_t>(sizeof(rill_backend)),
    /* .name = */ "vulkan",
    /* .device_count = */
    [](uint32_t* out_count) { return guarded("device_count", device_count, out_count); },
    /* .describe_device = */
    [](uint32_t index, rill_backend_device_info* out_info) {
      return guarded("describe_device", describe_device, index, out_info);
    },
    /* .context_create = */
    [](const rill_backend_context_options* options, rill_backend_context** out_ctx) {
      return guarded("context_create", context_create, options, out_ctx);
    },
    /* .context_destroy = */
    [](rill_backend_context* ctx) {
      guarded("context_destroy", [](rill_backend_context* c) {
        context_destroy(c);
        return RILL_OK;
      }, ctx);
    },
    /* .context_device_name = */ context_device_name,
    /* .synchronize = */ [](rill_backend_context* ctx) { return guarded("synchronize", synchronize, ctx); },
    /* .buffer_alloc = */
    [](rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer** out_buffer) {
      return guarded("buffer_alloc", buffer_alloc, ctx, bytes, out_buffer);
    },
    /* .buffer_free = */
    [](rill_backend_context* ctx, rill_backend_buffer* buffer) {
      guarded("buffer_free", [](rill_backend_context* c, rill_backend_buffer* b) {
        buffer_free(c, b);
        return RILL_OK;
      }, ctx, buffer);
    },
    /* .buffer_write = */
    [](rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, const void* src, uint64_t bytes) {
      return guarded("buffer_write", buffer_write, ctx, buffer, offset, src, bytes);
    },
    /* .buffer_read = */
    [](rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, void* dst, uint64_t bytes) {
      return guarded("buffer_read", buffer_read, ctx, buffer, offset, dst, bytes);
    },
    /* .buffer_copy = */
    [](rill_backend_context* ctx, rill_backend_buffer* src, uint64_t src_offset, rill_backend_buffer* dst,
       uint64_t dst_offset, uint64_t bytes) {
      return guarded("buffer_copy", buffer_copy, ctx, src, src_offset, dst, dst_offset, bytes);
    },
    /* .ops = */ &g_ops,
    /* .check_options = */
    [](const rill_backend_option* options, uint32_t count, uint32_t* out_rejected) {
      return guarded("check_options", check_options, options, count, out_rejected);
    },
};

rill_status vulkan_plugin_init(uint32_t abi_version, const rill_host_services* host,
                               const rill_backend** out_backend) {
  if (host == nullptr || out_backend == nullptr) return RILL_ERROR_INVALID_ARGUMENT;
  rill_vk::g_host = host;
  if (abi_version < 1u || abi_version > RILL_BACKEND_ABI_VERSION) {
    return rill_vk::fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                         "Vulkan plugin: interface version " + std::to_string(abi_version) +
                             " was agreed, but this plugin implements versions 1 to " +
                             std::to_string(RILL_BACKEND_ABI_VERSION));
  }
  *out_backend = backend_for_version(abi_version);
  return RILL_OK;
}

}  // namespace

const rill_backend* rill_vk::backend_for_version(uint32_t version) {
  static const rill_plugin::VersionedTables tables[] = {
      {kVulkanBackend, g_ops, 1u}, {kVulkanBackend, g_ops, 2u}, {kVulkanBackend, g_ops, 3u},
      {kVulkanBackend, g_ops, 4u}, {kVulkanBackend, g_ops, 5u}, {kVulkanBackend, g_ops, 6u},
      {kVulkanBackend, g_ops, 7u}, {kVulkanBackend, g_ops, 8u}};
  static_assert(sizeof tables / sizeof tables[0] == RILL_BACKEND_ABI_VERSION, "one table per version served");
  return tables[version - 1].backend();
}

RILL_BACKEND_PLUGIN_DEFINE(1u, RILL_BACKEND_ABI_VERSION, vulkan_plugin_init)
