/* The plugin's entry points and its backend table. */
#include "vk_internal.h"

namespace {

const rill_backend kVulkanBackend = {
    /* .abi_version = */ 2u,
    /* .struct_size = */ static_cast<uint32_t>(sizeof(rill_backend)),
    /* .name = */ "vulkan",
    /* .device_count = */ rill_vk::device_count,
    /* .describe_device = */ rill_vk::describe_device,
    /* .context_create = */ rill_vk::context_create,
    /* .context_destroy = */ rill_vk::context_destroy,
    /* .context_device_name = */ rill_vk::context_device_name,
    /* .synchronize = */ rill_vk::synchronize,
    /* .buffer_alloc = */ rill_vk::buffer_alloc,
    /* .buffer_free = */ rill_vk::buffer_free,
    /* .buffer_write = */ rill_vk::buffer_write,
    /* .buffer_read = */ rill_vk::buffer_read,
    /* .buffer_copy = */ rill_vk::buffer_copy,
    /* .ops = */ &rill_vk::g_ops,
};

rill_status vulkan_plugin_init(uint32_t abi_version, const rill_host_services* host,
                               const rill_backend** out_backend) {
  if (host == nullptr || out_backend == nullptr) return RILL_ERROR_INVALID_ARGUMENT;
  rill_vk::g_host = host;
  if (abi_version < 1u || abi_version > 2u) {
    return rill_vk::fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                         "Vulkan plugin: interface version " + std::to_string(abi_version) +
                             " was agreed, but this plugin implements versions 1 to 2");
  }
  *out_backend = &kVulkanBackend;
  return RILL_OK;
}

}  // namespace

RILL_BACKEND_PLUGIN_DEFINE(1u, 2u, vulkan_plugin_init)
