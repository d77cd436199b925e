#include "backend_registry.h"

#include "cpu_backend.h"
#include "host_services.h"
#include "plugin_loader.h"

namespace rill {
namespace {

const Backend& cpu_backend() {
  // Built on first use; the host table must outlive the process's contexts.
  static const rill_host_services host = make_host_services(RILL_BACKEND_ABI_VERSION);
  static const Backend backend = [] {
    Backend b;
    b.name = "cpu";
    b.origin = "built in";
    b.abi_version = RILL_BACKEND_ABI_VERSION;
    b.table = rill_cpu_backend_get(&host);
    return b;
  }();
  return backend;
}

}  // namespace

const Backend* acquire_backend(const std::string& name, const std::string& plugin_dir, std::string& reason) {
  if (name == "cpu") return &cpu_backend();
  return load_plugin(name, plugin_dir, reason);
}

}  // namespace rill
