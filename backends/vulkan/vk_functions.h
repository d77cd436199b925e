/* The Vulkan functions the plugin calls, loaded at run time from the system's
   Vulkan loader (libvulkan.so.1, or vulkan-1.dll on Windows) rather than
   linked: the plugin then needs no import library (Debian ships none for
   MinGW), and a machine without Vulkan reports the backend unavailable instead
   of failing to load the plugin. The build defines VK_NO_PROTOTYPES, so each
   name below is a function pointer with the name of the Vulkan function, and
   the code calls it as it would call the function. A function the plugin
   starts to use is added to one of the lists. */
#pragma once

#include <vulkan/vulkan.h>

#include "rill_backend.h"

/* Loaded with vkGetInstanceProcAddr(NULL, ...): usable before an instance exists. */
#define RILL_VK_GLOBAL_FUNCTIONS(X) \
  X(vkCreateInstance)               \
  X(vkEnumerateInstanceLayerProperties)

/* Loaded with vkGetInstanceProcAddr(instance, ...) once an instance exists. The
   loader returns its dispatching entry points, which serve every instance and
   the devices made from them. */
#define RILL_VK_INSTANCE_FUNCTIONS(X)          \
  X(vkAllocateCommandBuffers)                  \
  X(vkAllocateDescriptorSets)                  \
  X(vkAllocateMemory)                          \
  X(vkBeginCommandBuffer)                      \
  X(vkBindBufferMemory)                        \
  X(vkCmdBindDescriptorSets)                   \
  X(vkCmdBindPipeline)                         \
  X(vkCmdCopyBuffer)                           \
  X(vkCmdDispatch)                             \
  X(vkCmdPipelineBarrier)                      \
  X(vkCmdPushConstants)                        \
  X(vkCreateBuffer)                            \
  X(vkCreateCommandPool)                       \
  X(vkCreateComputePipelines)                  \
  X(vkCreateDescriptorPool)                    \
  X(vkCreateDescriptorSetLayout)               \
  X(vkCreateDevice)                            \
  X(vkCreateFence)                             \
  X(vkCreatePipelineCache)                     \
  X(vkCreatePipelineLayout)                    \
  X(vkCreateShaderModule)                      \
  X(vkDestroyBuffer)                           \
  X(vkDestroyCommandPool)                      \
  X(vkDestroyDescriptorPool)                   \
  X(vkDestroyDescriptorSetLayout)              \
  X(vkDestroyDevice)                           \
  X(vkDestroyFence)                            \
  X(vkDestroyInstance)                         \
  X(vkDestroyPipeline)                         \
  X(vkDestroyPipelineCache)                    \
  X(vkDestroyPipelineLayout)                   \
  X(vkDestroyShaderModule)                     \
  X(vkDeviceWaitIdle)                          \
  X(vkEndCommandBuffer)                        \
  X(vkEnumerateDeviceExtensionProperties)      \
  X(vkEnumeratePhysicalDevices)                \
  X(vkFreeMemory)                              \
  X(vkGetBufferMemoryRequirements)             \
  X(vkGetDeviceQueue)                          \
  X(vkGetPhysicalDeviceFeatures2)              \
  X(vkGetPhysicalDeviceMemoryProperties)       \
  X(vkGetPhysicalDeviceMemoryProperties2)      \
  X(vkGetPhysicalDeviceProperties)             \
  X(vkGetPhysicalDeviceProperties2)            \
  X(vkGetPhysicalDeviceQueueFamilyProperties)  \
  X(vkGetPipelineCacheData)                    \
  X(vkGetSemaphoreCounterValue)                \
  X(vkMapMemory)                               \
  X(vkQueueSubmit)                             \
  X(vkResetDescriptorPool)                     \
  X(vkResetFences)                             \
  X(vkUnmapMemory)                             \
  X(vkUpdateDescriptorSets)                    \
  X(vkWaitForFences)

#define RILL_VK_DECLARE(name) extern PFN_##name name;
extern PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
RILL_VK_GLOBAL_FUNCTIONS(RILL_VK_DECLARE)
RILL_VK_INSTANCE_FUNCTIONS(RILL_VK_DECLARE)
#undef RILL_VK_DECLARE

namespace rill_vk {

/* Opens the Vulkan loader and fetches the global functions, once per process.
   RILL_ERROR_BACKEND_UNAVAILABLE, naming the library, when there is none. */
rill_status load_vulkan();

/* Fetches the instance functions through instance, once per process; a
   function the loader does not have fails with RILL_ERROR_BACKEND_UNAVAILABLE. */
rill_status load_instance_functions(VkInstance instance);

}  // namespace rill_vk
