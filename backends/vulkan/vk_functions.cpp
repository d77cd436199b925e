/* Opens the system's Vulkan loader at run time and fetches the functions the
   plugin calls (see vk_functions.h). */
#include "vk_functions.h"

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <dlfcn.h>
#endif

#include <mutex>
#include <string>

#include "vk_internal.h"

PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define RILL_VK_DEFINE(name) PFN_##name name = nullptr;
RILL_VK_GLOBAL_FUNCTIONS(RILL_VK_DEFINE)
RILL_VK_INSTANCE_FUNCTIONS(RILL_VK_DEFINE)
#undef RILL_VK_DEFINE

namespace rill_vk {
namespace {

#ifdef _WIN32
constexpr const char* kLoaderName = "vulkan-1.dll";

void* open_loader(std::string& error) {
  HMODULE module = LoadLibraryW(L"vulkan-1.dll");
  if (module == nullptr) error = "Windows error " + std::to_string(GetLastError());
  return reinterpret_cast<void*>(module);
}

PFN_vkGetInstanceProcAddr loader_entry(void* loader) {
  return reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      reinterpret_cast<void*>(GetProcAddress(reinterpret_cast<HMODULE>(loader), "vkGetInstanceProcAddr")));
}
#else
constexpr const char* kLoaderName = "libvulkan.so.1";

void* open_loader(std::string& error) {
  void* handle = dlopen(kLoaderName, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* text = dlerror();
    error = text != nullptr ? text : "no reason given";
  }
  return handle;
}

PFN_vkGetInstanceProcAddr loader_entry(void* loader) {
  return reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(loader, "vkGetInstanceProcAddr"));
}
#endif

std::mutex g_load_mutex;
// Set once and never cleared: the loader stays open for the life of the process.
bool g_globals_loaded = false;
bool g_instance_functions_loaded = false;

}  // namespace

rill_status load_vulkan() {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  if (g_globals_loaded) return RILL_OK;
  std::string error;
  void* loader = open_loader(error);
  if (loader == nullptr) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                std::string("Vulkan: cannot load the Vulkan loader ") + kLoaderName + ": " + error);
  }
  vkGetInstanceProcAddr = loader_entry(loader);
  if (vkGetInstanceProcAddr == nullptr) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                std::string("Vulkan: ") + kLoaderName + " has no vkGetInstanceProcAddr");
  }
#define RILL_VK_LOAD_GLOBAL(name)                                                                           \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));                         \
  if (name == nullptr) {                                                                                     \
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE, std::string("Vulkan: ") + kLoaderName + " has no " #name);  \
  }
  RILL_VK_GLOBAL_FUNCTIONS(RILL_VK_LOAD_GLOBAL)
#undef RILL_VK_LOAD_GLOBAL
  g_globals_loaded = true;
  return RILL_OK;
}

rill_status load_instance_functions(VkInstance instance) {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  if (g_instance_functions_loaded) return RILL_OK;
#define RILL_VK_LOAD_INSTANCE(name)                                                                         \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));                               \
  if (name == nullptr) {                                                                                     \
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE, std::string("Vulkan: the loader has no " #name));           \
  }
  RILL_VK_INSTANCE_FUNCTIONS(RILL_VK_LOAD_INSTANCE)
#undef RILL_VK_LOAD_INSTANCE
  g_instance_functions_loaded = true;
  return RILL_OK;
}

}  // namespace rill_vk
