// Loads a backend plugin straight through its two entry points, without
// librill, for tests that drive a backend table directly (tensor views at any
// byte offset, which the public API never makes).
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "rill_backend.h"

// Returns 0 with *out_backend set when the plugin at path loads, negotiates,
// initialises and has at least one device; 77 (CTest's skip code) when it
// cannot be loaded or has no device; 1 on any other failure. Each outcome but
// success is printed with its reason. last_error is what host->fail recorded.
// The plugin stays loaded until the process exits, as the runtime keeps it.
inline int load_plugin_with_device(const char* path, const char* device_kind, const rill_host_services* host,
                                   const std::string& last_error, const rill_backend** out_backend) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::printf("skipped: cannot load %s: %s\n", path, dlerror());
    return 77;
  }
  auto negotiate = reinterpret_cast<rill_plugin_negotiate_fn>(dlsym(library, RILL_PLUGIN_NEGOTIATE_SYMBOL));
  auto init = reinterpret_cast<rill_plugin_init_fn>(dlsym(library, RILL_PLUGIN_INIT_SYMBOL));
  if (negotiate == nullptr || init == nullptr) {
    std::printf("the plugin lacks its entry points\n");
    return 1;
  }
  const uint32_t version = negotiate(RILL_BACKEND_ABI_MIN_VERSION, RILL_BACKEND_ABI_VERSION);
  if (version == 0 || init(version, host, out_backend) != RILL_OK) {
    std::printf("the plugin refused interface versions %u..%u: %s\n", RILL_BACKEND_ABI_MIN_VERSION,
                RILL_BACKEND_ABI_VERSION, last_error.c_str());
    return 1;
  }
  uint32_t count = 0;
  const rill_status status = (*out_backend)->device_count(&count);
  if (status == RILL_ERROR_BACKEND_UNAVAILABLE || (status == RILL_OK && count == 0)) {
    std::printf("skipped: no %s device (%s)\n", device_kind, last_error.c_str());
    return 77;
  }
  if (status != RILL_OK) {
    std::printf("device_count failed: %s\n", last_error.c_str());
    return 1;
  }
  return 0;
}
