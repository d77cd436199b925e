/* Vulkan instance creation, physical-device enumeration and description, and
   the mapping of VkResult to rill statuses. */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "vk_internal.h"

namespace rill_vk {

const rill_host_services* g_host = nullptr;

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
constexpr const char* kMemoryBudgetExtension = "VK_EXT_memory_budget";

/* Devices found by the first enumeration; the list does not change while the
   process runs. */
std::mutex g_devices_mutex;
bool g_devices_known = false;
std::vector<DeviceCaps> g_devices;

bool has_layer(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(count);
  if (vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
  for (const VkLayerProperties& layer : layers) {
    if (std::strcmp(layer.layerName, name) == 0) return true;
  }
  return false;
}

const char* device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU implementation";
    default: return "other";
  }
}

rill_device_type to_rill_type(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return RILL_DEVICE_TYPE_DISCRETE_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return RILL_DEVICE_TYPE_INTEGRATED_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return RILL_DEVICE_TYPE_VIRTUAL_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return RILL_DEVICE_TYPE_CPU_IMPLEMENTATION;
    default: return RILL_DEVICE_TYPE_OTHER;
  }
}

rill_status enumerate_devices() {
  std::lock_guard<std::mutex> lock(g_devices_mutex);
  if (g_devices_known) return RILL_OK;
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  rill_status status = create_instance(false, nullptr, nullptr, &instance, &messenger);
  if (status != RILL_OK) return status;
  std::vector<VkPhysicalDevice> physicals;
  status = list_physical_devices(instance, &physicals);
  if (status != RILL_OK) {
    destroy_instance(instance, messenger);
    return status;
  }
  for (VkPhysicalDevice physical : physicals) g_devices.push_back(query_caps(instance, physical));
  destroy_instance(instance, messenger);
  g_devices_known = true;
  return RILL_OK;
}

/* The shape gemm_coopmat.comp would run with on physical (whose extension
   list has VK_KHR_cooperative_matrix): none unless the plugin embeds the
   shader and the device has the features the shader's SPIR-V declares. */
CoopmatTile query_coopmat_tile(VkInstance instance, VkPhysicalDevice physical, const DeviceCaps& caps) {
#if RILL_VULKAN_COOPMAT_BUILT
  PhysicalDeviceCooperativeMatrixFeatures coopmat{};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{};
  memory_model.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES;
  memory_model.pNext = &coopmat;
  VkPhysicalDeviceShaderFloat16Int8Features float16{};
  float16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  float16.pNext = &memory_model;
  VkPhysicalDeviceFeatures2 features2{};
  features2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features2.pNext = &float16;
  vkGetPhysicalDeviceFeatures2(physical, &features2);
  const auto get_properties = reinterpret_cast<GetCooperativeMatrixProperties>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  if (coopmat.cooperativeMatrix != VK_TRUE || float16.shaderFloat16 != VK_TRUE ||
      memory_model.vulkanMemoryModel != VK_TRUE || !caps.storage_16bit || get_properties == nullptr) {
    return {};
  }
  uint32_t count = 0;
  if (get_properties(physical, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<CooperativeMatrixProperties> reports(count);
  if (get_properties(physical, &count, reports.data()) != VK_SUCCESS) return {};
  reports.resize(count);
  CoopmatLimits limits;
  limits.subgroup_size = caps.subgroup_size;
  limits.max_shared_bytes = caps.limits.maxComputeSharedMemorySize;
  limits.max_invocations = caps.limits.maxComputeWorkGroupInvocations;
  limits.max_workgroup_size_x = caps.limits.maxComputeWorkGroupSize[0];
  return choose_coopmat_tile(reports, limits);
#else
  (void)instance;
  (void)physical;
  (void)caps;
  return {};
#endif
}

/* The details' words on cooperative matrices. */
std::string describe_coopmat(const DeviceCaps& caps) {
  if (!caps.cooperative_matrix) return "no";
  if (!RILL_VULKAN_COOPMAT_BUILT) return "yes, unused (the plugin was built without the shader)";
  if (!caps.coopmat_tile.usable()) return "yes, unused (no f16 shape or feature rill can use)";
  const CoopmatTile& tile = caps.coopmat_tile;
  return "f16 " + std::to_string(tile.m) + "x" + std::to_string(tile.n) + "x" + std::to_string(tile.k) +
         " (the f16 prefill GEMM)";
}

}  // namespace

rill_status list_physical_devices(VkInstance instance, std::vector<VkPhysicalDevice>* out) {
  uint32_t count = 0;
  VkResult result = vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> physicals(count);
  if (result == VK_SUCCESS && count > 0) result = vkEnumeratePhysicalDevices(instance, &count, physicals.data());
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) return fail_vk(result, "vkEnumeratePhysicalDevices");
  physicals.resize(count);
  std::vector<DeviceIdentity> identities(count);
  for (uint32_t i = 0; i < count; ++i) {
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(physicals[i], &props);
    identities[i].api_version = props.apiVersion;
    if (props.apiVersion < VK_API_VERSION_1_1) continue; /* no deviceUUID before 1.1 */
    VkPhysicalDeviceIDProperties id{};
    id.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
    VkPhysicalDeviceProperties2 props2{};
    props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    props2.pNext = &id;
    vkGetPhysicalDeviceProperties2(physicals[i], &props2);
    std::memcpy(identities[i].uuid.data(), id.deviceUUID, VK_UUID_SIZE);
  }
  out->clear();
  for (size_t index : unique_devices(identities)) out->push_back(physicals[index]);
  return RILL_OK;
}

rill_status fail(rill_status status, const std::string& message) {
  if (g_host != nullptr && g_host->fail != nullptr) return g_host->fail(status, message.c_str());
  return status;
}

rill_status fail_static(rill_status status, const char* what, const char* problem) noexcept {
  char message[256];
  std::snprintf(message, sizeof message, "Vulkan: %s: %s", what, problem);
  if (g_host != nullptr && g_host->fail != nullptr) return g_host->fail(status, message);
  return status;
}

void log_message(rill_log_level level, const std::string& message) {
  if (g_host != nullptr && g_host->log != nullptr) g_host->log(level, "vulkan", message.c_str());
}

const char* vk_result_name(VkResult result) {
  switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_UNKNOWN: return "VK_ERROR_UNKNOWN";
    default: return "VkResult (unlisted value)";
  }
}

rill_status fail_vk(VkResult result, const char* what) {
  rill_status status = RILL_ERROR_BACKEND;
  const char* hint = "";
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
      status = RILL_ERROR_OUT_OF_MEMORY;
      break;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      status = RILL_ERROR_BACKEND_UNAVAILABLE;
      hint = " (no Vulkan driver (ICD) supports Vulkan 1.2 on this machine)";
      break;
    case VK_ERROR_INITIALIZATION_FAILED:
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
      status = RILL_ERROR_BACKEND_UNAVAILABLE;
      break;
    case VK_ERROR_DEVICE_LOST:
      hint = " (the device was lost; destroy the context and create a new one)";
      break;
    default:
      break;
  }
  return fail(status, std::string("Vulkan: ") + what + " failed: " + vk_result_name(result) + hint);
}

bool validation_requested() {
  const char* value = std::getenv("RILL_VULKAN_VALIDATION");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

rill_status create_instance(bool validation, PFN_vkDebugUtilsMessengerCallbackEXT callback, void* user_data,
                            VkInstance* out_instance, VkDebugUtilsMessengerEXT* out_messenger) {
  const rill_status loaded = load_vulkan();
  if (loaded != RILL_OK) return loaded;
  if (validation && !has_layer(kValidationLayer)) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                std::string("Vulkan: RILL_VULKAN_VALIDATION=1 asks for ") + kValidationLayer +
                    ", which is not installed");
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "rill";
  app.pEngineName = "rill";
  app.apiVersion = VK_API_VERSION_1_2;

  VkDebugUtilsMessengerCreateInfoEXT messenger_info{};
  messenger_info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  messenger_info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = callback;
  messenger_info.pUserData = user_data;

  /* Synchronization validation checks that the barriers placed from tracked
     accesses cover every hazard. */
  VkValidationFeatureEnableEXT enabled_features[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT validation_features{};
  validation_features.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
  validation_features.enabledValidationFeatureCount = 1;
  validation_features.pEnabledValidationFeatures = enabled_features;
  validation_features.pNext = &messenger_info;

  const char* layers[] = {kValidationLayer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  if (validation) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
    info.pNext = &validation_features; /* the messenger also covers vkCreateInstance itself */
  }
  VkInstance instance = VK_NULL_HANDLE;
  VkResult result = vkCreateInstance(&info, nullptr, &instance);
  if (result != VK_SUCCESS) return fail_vk(result, "vkCreateInstance");
  const rill_status functions = load_instance_functions(instance);
  if (functions != RILL_OK) {
    if (vkDestroyInstance != nullptr) vkDestroyInstance(instance, nullptr);
    return functions;
  }

  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  if (validation) {
    auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    result = create_messenger != nullptr ? create_messenger(instance, &messenger_info, nullptr, &messenger)
                                         : VK_ERROR_EXTENSION_NOT_PRESENT;
    if (result != VK_SUCCESS) {
      vkDestroyInstance(instance, nullptr);
      return fail_vk(result, "vkCreateDebugUtilsMessengerEXT");
    }
  }
  *out_instance = instance;
  *out_messenger = messenger;
  return RILL_OK;
}

void destroy_instance(VkInstance instance, VkDebugUtilsMessengerEXT messenger) {
  if (instance == VK_NULL_HANDLE) return;
  if (messenger != VK_NULL_HANDLE) {
    auto destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy_messenger != nullptr) destroy_messenger(instance, messenger, nullptr);
  }
  vkDestroyInstance(instance, nullptr);
}

DeviceCaps query_caps(VkInstance instance, VkPhysicalDevice physical) {
  DeviceCaps caps;
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(physical, &props);
  caps.api_version = props.apiVersion;
  caps.type = props.deviceType;
  caps.limits = props.limits;
  caps.gemm_limits.max_invocations = props.limits.maxComputeWorkGroupInvocations;
  caps.gemm_limits.max_size_x = props.limits.maxComputeWorkGroupSize[0];
  caps.gemm_limits.max_size_y = props.limits.maxComputeWorkGroupSize[1];
  caps.gemm_limits.max_shared_bytes = props.limits.maxComputeSharedMemorySize;
  caps.name = props.deviceName;

  std::string driver = "unknown driver";
  if (props.apiVersion >= VK_API_VERSION_1_2) {
    VkPhysicalDeviceSubgroupProperties subgroup{};
    subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceMaintenance3Properties maintenance3{};
    maintenance3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
    maintenance3.pNext = &subgroup;
    VkPhysicalDeviceFloatControlsProperties float_controls{};
    float_controls.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES;
    float_controls.pNext = &maintenance3;
    VkPhysicalDeviceDriverProperties driver_props{};
    driver_props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
    driver_props.pNext = &float_controls;
    VkPhysicalDeviceProperties2 props2{};
    props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    props2.pNext = &driver_props;
    vkGetPhysicalDeviceProperties2(physical, &props2);
    caps.subgroup_size = subgroup.subgroupSize;
    caps.max_allocation_bytes = maintenance3.maxMemoryAllocationSize;
    const VkSubgroupFeatureFlags needed = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    caps.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                               (subgroup.supportedOperations & needed) == needed;
    driver = std::string(driver_props.driverName) + " " + driver_props.driverInfo;
    caps.f16_float_controls = rill_vk::supported_f16_float_controls(float_controls);

    VkPhysicalDeviceTimelineSemaphoreFeatures timeline{};
    timeline.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
    VkPhysicalDevice16BitStorageFeatures storage16{};
    storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    storage16.pNext = &timeline;
    VkPhysicalDeviceFeatures2 features2{};
    features2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    features2.pNext = &storage16;
    vkGetPhysicalDeviceFeatures2(physical, &features2);
    caps.storage_16bit = storage16.storageBuffer16BitAccess == VK_TRUE;
    caps.timeline_semaphore = timeline.timelineSemaphore == VK_TRUE;
  }

  uint32_t extension_count = 0;
  if (vkEnumerateDeviceExtensionProperties(physical, nullptr, &extension_count, nullptr) == VK_SUCCESS) {
    std::vector<VkExtensionProperties> extensions(extension_count);
    if (vkEnumerateDeviceExtensionProperties(physical, nullptr, &extension_count, extensions.data()) == VK_SUCCESS) {
      for (const VkExtensionProperties& extension : extensions) {
        if (std::strcmp(extension.extensionName, kCooperativeMatrixExtensionName) == 0) caps.cooperative_matrix = true;
        if (std::strcmp(extension.extensionName, kMemoryBudgetExtension) == 0) caps.memory_budget = true;
      }
    }
  }

  if (caps.cooperative_matrix && props.apiVersion >= VK_API_VERSION_1_2) {
    caps.coopmat_tile = query_coopmat_tile(instance, physical, caps);
  }

  VkPhysicalDeviceMemoryProperties memory{};
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i) {
    if ((memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0) {
      caps.device_local_bytes += memory.memoryHeaps[i].size;
    }
  }

  const F16FloatControls& f16 = caps.f16_float_controls;
  char details[512];
  std::snprintf(details, sizeof details,
                "%s, Vulkan %u.%u.%u, driver %s; 16-bit storage: %s; subgroup arithmetic: %s; "
                "f16 rounding: %s; f16 denormals: %s; cooperative matrix: %s%s",
                device_type_name(props.deviceType), VK_API_VERSION_MAJOR(props.apiVersion),
                VK_API_VERSION_MINOR(props.apiVersion), VK_API_VERSION_PATCH(props.apiVersion), driver.c_str(),
                caps.storage_16bit ? "yes" : "no (f32 only)", caps.subgroup_arithmetic ? "yes" : "no",
                f16.round_to_nearest_even ? "nearest even (RoundingModeRTE)" : "the driver's (no RTE mode)",
                f16.denorm_preserve ? "preserved (DenormPreserve)" : "the driver's (no DenormPreserve mode)",
                describe_coopmat(caps).c_str(),
                props.apiVersion >= VK_API_VERSION_1_2 ? "" : "; unusable: rill needs Vulkan 1.2");
  caps.details = details;
  return caps;
}

rill_status device_count(uint32_t* out_count) {
  rill_status status = enumerate_devices();
  if (status != RILL_OK) return status;
  std::lock_guard<std::mutex> lock(g_devices_mutex);
  *out_count = static_cast<uint32_t>(g_devices.size());
  return RILL_OK;
}

rill_status describe_device(uint32_t index, rill_backend_device_info* out_info) {
  if (out_info->struct_size < sizeof out_info->struct_size) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, "describe_device: out_info->struct_size must be at least 4, given " +
                                                 std::to_string(out_info->struct_size));
  }
  rill_status status = enumerate_devices();
  if (status != RILL_OK) return status;
  std::lock_guard<std::mutex> lock(g_devices_mutex);
  if (index >= g_devices.size()) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, "describe_device: index " + std::to_string(index) +
                                                 " is out of range; there are " + std::to_string(g_devices.size()) +
                                                 " Vulkan devices");
  }
  const DeviceCaps& caps = g_devices[index];
  rill_backend_device_info info{};
  const uint32_t caller_size = out_info->struct_size;
  info.struct_size = caller_size < sizeof info ? caller_size : static_cast<uint32_t>(sizeof info);
  std::snprintf(info.name, sizeof info.name, "%s", caps.name.c_str());
  info.type = to_rill_type(caps.type);
  info.memory_bytes = caps.device_local_bytes;
  info.subgroup_size = caps.subgroup_size;
  std::snprintf(info.details, sizeof info.details, "%s", caps.details.c_str());
  /* Only the fields inside the caller's struct_size are written. */
  std::memcpy(out_info, &info, info.struct_size);
  return RILL_OK;
}

}  // namespace rill_vk
