// A backend's own options: the keys of its [backend.<name>] table other than
// `device`, checked by the backend itself (rill_backend.check_options) and
// handed to context_create as a typed list. For version 1-2 backends, which
// predate that, the runtime reads the keys their context options had fields
// for (threads, tf32) and refuses the rest.
#pragma once

#include <cstdint>
#include <vector>

#include "backend_registry.h"
#include "config.h"

namespace rill {

// Asks backend whether it accepts table's options. Returns RILL_OK, or
// RILL_ERROR_CONFIG with rill_last_error() "function: source:line:column:
// backend.<name>: <what the backend said, naming the key>", the position
// being that of the key.
rill_status check_backend_options(const Backend& backend, const BackendTable& table, const char* function);

// The rill_backend_context_options for a context on device device_index of
// backend, with table's options (checked already). Owns the list it points at.
class ContextOptions {
 public:
  // host_device: a device the host owns (rill_vulkan_device), or NULL.
  ContextOptions(const Backend& backend, uint32_t device_index, const BackendTable& table,
                 const void* host_device = nullptr);
  ContextOptions(const ContextOptions&) = delete;
  ContextOptions& operator=(const ContextOptions&) = delete;

  const rill_backend_context_options* get() const { return &options_; }

 private:
  std::vector<rill_backend_option> list_;
  rill_backend_context_options options_{};
};

}  // namespace rill
