/* Shared devices: the VkDevice, compute queue and memory that every context
   opening the same device holds together, so that N contexts keep one device
   (and may use each other's buffers) instead of N. A registry, guarded by one
   lock, finds a device by what a context asks for and counts its users. */
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "option_checks.h"
#include "vk_internal.h"

namespace rill_vk {

namespace {

std::mutex g_registry_mutex;
std::vector<SharedDevice*> g_registry; /* guarded by g_registry_mutex */

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                      VkDebugUtilsMessageTypeFlagsEXT,
                                                      const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                      void* user_data) {
  auto* shared = static_cast<SharedDevice*>(user_data);
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(shared->validation_mutex);
    first = shared->validation_messages++ == 0;
  }
  // The layer calls this from C, so nothing may be thrown through it. Out of
  // memory for the text, the message still counts (the op still fails) and
  // only its text is lost (check_usable says so).
  try {
    std::string message = std::string("validation: ") + (data != nullptr && data->pMessage ? data->pMessage : "");
    log_message(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? RILL_LOG_ERROR : RILL_LOG_WARNING, message);
    if (first) {
      std::lock_guard<std::mutex> lock(shared->validation_mutex);
      shared->first_validation_message = std::move(message);
    }
  } catch (const std::bad_alloc&) {
  }
  return VK_FALSE;
}

rill_status check_api_version(const SharedDevice& shared) {
  if (shared.caps.api_version < VK_API_VERSION_1_2) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                "Vulkan: device \"" + shared.caps.name + "\" supports only Vulkan " +
                    std::to_string(VK_API_VERSION_MAJOR(shared.caps.api_version)) + "." +
                    std::to_string(VK_API_VERSION_MINOR(shared.caps.api_version)) + "; rill needs 1.2");
  }
  return RILL_OK;
}

/* Opens the physical device shared->device_index. The runtime matches the
   config's `device` to that index; the plugin never matches names itself. */
rill_status pick_device(SharedDevice* shared) {
  std::vector<VkPhysicalDevice> physicals;
  const rill_status status = list_physical_devices(shared->instance, &physicals);
  if (status != RILL_OK) return status;
  if (physicals.empty()) return fail(RILL_ERROR_BACKEND_UNAVAILABLE, "Vulkan: no Vulkan device found");
  const int32_t index = shared->device_index;
  if (index < 0 || static_cast<uint32_t>(index) >= physicals.size()) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE, "Vulkan: device index: expected 0 to " +
                                                    std::to_string(physicals.size() - 1) + ", got " +
                                                    std::to_string(index));
  }
  shared->physical = physicals[static_cast<size_t>(index)];
  shared->caps = query_caps(shared->instance, shared->physical);
  return check_api_version(*shared);
}

/* Takes the host's own device (rill_context_create_on_vulkan_device) instead
   of making one: checks what Vulkan lets rill check, and uses only what the
   host says it enabled. */
rill_status adopt_host_device(SharedDevice* shared, const rill_vulkan_device* host) {
  shared->owned = false;
  rill_status status = load_vulkan();
  if (status == RILL_OK) status = load_instance_functions(static_cast<VkInstance>(host->instance));
  if (status != RILL_OK) return status;
  shared->instance = static_cast<VkInstance>(host->instance);
  shared->physical = static_cast<VkPhysicalDevice>(host->physical_device);
  shared->caps = query_caps(shared->instance, shared->physical);
  if ((status = check_api_version(*shared)) != RILL_OK) return status;
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(shared->physical, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(shared->physical, &family_count, families.data());
  if (host->queue_family >= family_count || (families[host->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0) {
    return fail(RILL_ERROR_INVALID_ARGUMENT,
                "Vulkan: device->queue_family: expected a family with compute among the " +
                    std::to_string(family_count) + " of device \"" + shared->caps.name + "\", got " +
                    std::to_string(host->queue_family));
  }
  shared->device = static_cast<VkDevice>(host->device);
  shared->queue = static_cast<VkQueue>(host->queue);
  shared->queue_family = host->queue_family;
  /* Features and extensions count only when the host enabled them. */
  shared->caps.storage_16bit = shared->caps.storage_16bit && shared->host_storage_16bit;
  shared->caps.memory_budget = false;
  shared->caps.coopmat_tile = CoopmatTile{};
  memory_init(shared);
  return RILL_OK;
}

rill_status create_device(SharedDevice* shared) {
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(shared->physical, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(shared->physical, &family_count, families.data());
  uint32_t chosen = UINT32_MAX;
  for (uint32_t i = 0; i < family_count; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0) continue;
    /* Prefer a compute queue without graphics (often an async compute queue). */
    if (chosen == UINT32_MAX || (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) == 0) chosen = i;
  }
  if (chosen == UINT32_MAX) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE, "Vulkan: device \"" + shared->caps.name + "\" has no compute queue");
  }
  shared->queue_family = chosen;

  VkDeviceQueueCreateInfo queue_info{};
  queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue_info.queueFamilyIndex = chosen;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &shared->queue_priority;

  VkPhysicalDeviceVulkan11Features features11{};
  features11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  features11.storageBuffer16BitAccess = shared->caps.storage_16bit ? VK_TRUE : VK_FALSE;
  /* VK_EXT_memory_budget only adds a query; it is enabled where present so
     that allocations respect what the rest of the system leaves free. */
  std::vector<const char*> extensions;
  if (shared->caps.memory_budget) extensions.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  /* gemm_coopmat.comp's SPIR-V declares CooperativeMatrixKHR, Float16 and
     VulkanMemoryModel: enabled where a shape was chosen (query_caps). */
  PhysicalDeviceCooperativeMatrixFeatures coopmat{};
  coopmat.cooperativeMatrix = VK_TRUE;
  VkPhysicalDeviceVulkan12Features features12{};
  features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  features12.shaderFloat16 = VK_TRUE;
  features12.vulkanMemoryModel = VK_TRUE;
  features12.pNext = &coopmat;
  if (shared->caps.coopmat_tile.usable()) {
    extensions.push_back(kCooperativeMatrixExtensionName);
    features11.pNext = &features12;
  }
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.pNext = &features11;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  VkResult result = vkCreateDevice(shared->physical, &info, nullptr, &shared->device);
  if (result != VK_SUCCESS) return fail_vk(result, "vkCreateDevice");
  vkGetDeviceQueue(shared->device, chosen, 0, &shared->queue);
  memory_init(shared);
  log_message(RILL_LOG_DEBUG, "new VkDevice on \"" + shared->caps.name + "\"");
  return RILL_OK;
}

/* Destroys what rill made of shared (nothing of a host's) and shared itself. */
void destroy_shared(SharedDevice* shared) {
  if (shared->device != VK_NULL_HANDLE) {
    /* A lost device answers VK_ERROR_DEVICE_LOST here; destruction goes on.
       The host's device may be busy with the host's work: each context has
       waited for its own frames. */
    if (shared->owned) vkDeviceWaitIdle(shared->device);
    memory_destroy(shared);
    if (shared->owned) vkDestroyDevice(shared->device, nullptr);
  }
  if (shared->owned) destroy_instance(shared->instance, shared->messenger);
  delete shared;
}

/* Releases a device that failed part-way, also when an allocation threw. */
struct SharedDeviceDeleter {
  void operator()(SharedDevice* shared) const { destroy_shared(shared); }
};

/* Whether shared is the device that these options ask for. */
bool matches(const SharedDevice& shared, bool validation, int32_t device_index, float priority,
             const rill_vulkan_device* host) {
  if (host != nullptr) {
    return shared.host_device == static_cast<VkDevice>(host->device) &&
           shared.host_queue == static_cast<VkQueue>(host->queue) &&
           shared.host_storage_16bit == (host->storage_16bit != 0);
  }
  return shared.host_device == VK_NULL_HANDLE && shared.validation == validation &&
         shared.device_index == device_index && shared.queue_priority == priority;
}

rill_status open_device(SharedDevice* shared, const rill_vulkan_device* host) {
  if (host != nullptr) return adopt_host_device(shared, host);
  rill_status status =
      create_instance(shared->validation, on_validation_message, shared, &shared->instance, &shared->messenger);
  if (status == RILL_OK) status = pick_device(shared);
  if (status == RILL_OK) status = create_device(shared);
  return status;
}

}  // namespace

rill_status acquire_device(const rill_backend_context_options* options, SharedDevice** out) {
  const auto* host = options != nullptr && RILL_STRUCT_HAS(rill_backend_context_options, options, host_device)
                         ? static_cast<const rill_vulkan_device*>(options->host_device)
                         : nullptr;
  // Only the members inside the caller's struct_size are read.
  const int32_t device_index =
      host != nullptr ? -1
      : options != nullptr && RILL_STRUCT_HAS(rill_backend_context_options, options, device_index)
          ? options->device_index
          : 0;
  const bool validation = host == nullptr && validation_requested();
  const float priority = queue_priority(options);
  /* The host made its queue, with its own priority: one asked for here
     cannot be given. Ignored with a warning, not refused: the runtime reports
     any failure here as an unavailable backend, which a config is not. */
  if (host != nullptr && rill_options::has_option_list(options) &&
      rill_options::find(options->options, options->option_count, kQueuePriorityOption) != nullptr) {
    log_message(RILL_LOG_WARNING, std::string("Vulkan: '") + kQueuePriorityOption + "' = " + float_text(priority) +
                                      " ignored: on a host's VkDevice the host created the queue and set its priority");
  }
  /* Held while a device is made, so that two threads asking for one device
     at once make it once. */
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  for (SharedDevice* shared : g_registry) {
    if (matches(*shared, validation, device_index, priority, host)) {
      ++shared->contexts;
      *out = shared;
      return RILL_OK;
    }
  }
  g_registry.reserve(g_registry.size() + 1);
  std::unique_ptr<SharedDevice, SharedDeviceDeleter> shared(new SharedDevice());
  shared->validation = validation;
  shared->device_index = device_index;
  shared->queue_priority = priority;
  if (host != nullptr) {
    shared->host_device = static_cast<VkDevice>(host->device);
    shared->host_queue = static_cast<VkQueue>(host->queue);
    shared->host_storage_16bit = host->storage_16bit != 0;
  }
  const rill_status status = open_device(shared.get(), host);
  if (status != RILL_OK) return status;
  shared->contexts = 1;
  g_registry.push_back(shared.get()); /* reserved above: does not throw */
  *out = shared.release();
  return RILL_OK;
}

rill_status shares_buffers(rill_backend_context* ctx, rill_backend_context* other) {
  if (ctx->shared == other->shared) return RILL_OK;
  const auto describe = [](const SharedDevice& shared) {
    return "\"" + shared.caps.name + "\" (" +
           (shared.host_device != VK_NULL_HANDLE ? std::string("a host's VkDevice")
                                                 : "device index " + std::to_string(shared.device_index) +
                                                       ", queue priority " + float_text(shared.queue_priority) +
                                                       (shared.validation ? ", validation on" : "")) +
           ")";
  };
  return fail(RILL_ERROR_INVALID_ARGUMENT,
              "Vulkan: the contexts hold different VkDevices: " + describe(*ctx->shared) + " and " +
                  describe(*other->shared) +
                  "; contexts share one only when they open the same device index with the same validation "
                  "setting and queue priority, or the same host device and queue");
}

void release_device(SharedDevice* shared) {
  if (shared == nullptr) return;
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  if (--shared->contexts > 0) return;
  g_registry.erase(std::find(g_registry.begin(), g_registry.end(), shared));
  destroy_shared(shared);
}

}  // namespace rill_vk
