// Backend selection: turns a Config into a backend context, either the backend
// named in [runtime] backend, or the first backend of `prefer` that can be had
// when it is "auto", recording why each one before it was skipped.
#pragma once

#include <string>
#include <vector>

#include "backend_registry.h"
#include "config.h"

namespace rill {

struct Selection {
  const Backend* backend = nullptr;
  rill_backend_context* context = nullptr;  // owned by the caller once selected
  std::string device_name;
  std::string report;  // "name: chosen" / "name: skipped: reason" lines
};

// Creates the backend context the config asks for. First every backend with a
// [backend.<name>] table that can be loaded checks its options: a refusal
// returns RILL_ERROR_CONFIG. On failure to get a backend returns
// RILL_ERROR_BACKEND_UNAVAILABLE with rill_last_error() naming function and
// giving every reason. host_device (a rill_vulkan_device, or NULL): the
// Vulkan backend on the host's own device, whatever [runtime] backend says
// (the caller has checked it).
rill_status select_backend(const Config& config, const char* function, const void* host_device, Selection& out);

// Describes every device of backend. On failure returns the backend's status
// (RILL_ERROR_OUT_OF_MEMORY when it ran out of memory) with the reason.
rill_status describe_devices(const Backend& backend, std::vector<rill_backend_device_info>& out, std::string& reason);

// A short English name of a device type ("discrete GPU").
const char* device_type_name(rill_device_type type);

}  // namespace rill
