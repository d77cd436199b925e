#include "backend_selection.h"

#include "backend_options.h"
#include "errors.h"
#include "host_services.h"
#include "logging.h"

namespace rill {
namespace {

std::string quoted(const char* text) { return std::string("'") + text + "'"; }

// True when part occurs in name, ignoring ASCII case ("radeon" finds
// "AMD Radeon RX 7900").
bool name_contains(const std::string& name, const std::string& part) {
  const auto lower = [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c); };
  std::string name_lower, part_lower;
  for (char c : name) name_lower += lower(static_cast<unsigned char>(c));
  for (char c : part) part_lower += lower(static_cast<unsigned char>(c));
  return name_lower.find(part_lower) != std::string::npos;
}

// "0 'llvmpipe (LLVM 15.0.6, 256 bits)', 1 '...'": what there is to choose from.
std::string device_list(const std::vector<rill_backend_device_info>& devices) {
  std::string list;
  for (size_t i = 0; i < devices.size(); ++i) {
    list += (list.empty() ? "" : ", ") + std::to_string(i) + " " + quoted(devices[i].name);
  }
  return list;
}

// How much a device is preferred when the config names none (lower first): a
// discrete GPU, then an integrated one (it shares the host's memory bandwidth),
// a virtual one, anything else, and a CPU implementation of a GPU API last.
int default_rank(rill_device_type type) {
  switch (enum_value(type)) {
    case RILL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case RILL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case RILL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case RILL_DEVICE_TYPE_CPU_IMPLEMENTATION: return 4;
    default: return 3;
  }
}

// The runtime's one device matcher: picks the device index that choice asks
// for, by index or by a part of the name (the first device whose name holds it,
// in any case). Without an explicit choice, the most preferred device type
// wins (default_rank), the first of that type on a tie. Returns false with
// the reason, naming what was asked and listing the devices, when none fits;
// out_of_memory is set when listing the devices ran out of memory.
bool pick_device(const Backend& backend, const DeviceChoice& choice, uint32_t& index, rill_backend_device_info& info,
                 std::string& reason, bool& out_of_memory) {
  std::vector<rill_backend_device_info> devices;
  const rill_status described = describe_devices(backend, devices, reason);
  if (described != RILL_OK) {
    out_of_memory = described == RILL_ERROR_OUT_OF_MEMORY;
    return false;
  }
  if (devices.empty()) {
    reason = "no device found";
    return false;
  }
  if (!choice.name.empty()) {
    for (uint32_t i = 0; i < devices.size(); ++i) {
      if (name_contains(devices[i].name, choice.name)) {
        index = i;
        info = devices[i];
        return true;
      }
    }
    reason = "no device whose name contains '" + choice.name + "' (" + choice.where +
             "); devices: " + device_list(devices);
    return false;
  }
  if (choice.explicit_choice) {
    if (choice.index >= static_cast<int64_t>(devices.size())) {
      reason = "no device " + std::to_string(choice.index) + " (" + choice.where +
               "); devices: " + device_list(devices);
      return false;
    }
    index = static_cast<uint32_t>(choice.index);
    info = devices[index];
    return true;
  }
  index = 0;
  for (uint32_t i = 1; i < devices.size(); ++i) {
    if (default_rank(devices[i].type) < default_rank(devices[index].type)) index = i;
  }
  info = devices[index];
  return true;
}

// Tries one backend. In auto mode a device that is a CPU implementation of a
// GPU API is refused unless the config names it: the CPU backend does the same
// work faster.
// With a host-owned device the backend is given that device: no device is
// listed or picked. failure: the status a failure reports when this backend
// was the one asked for: RILL_ERROR_OUT_OF_MEMORY when listing its devices
// or creating its context ran out of memory, RILL_ERROR_INVALID_ARGUMENT
// when the backend refused the host's device as described, otherwise
// RILL_ERROR_BACKEND_UNAVAILABLE.
bool try_backend(const Config& config, const std::string& name, bool auto_mode, const void* host_device,
                 Selection& out, std::string& reason, rill_status& failure) {
  failure = RILL_ERROR_BACKEND_UNAVAILABLE;
  bool out_of_memory = false;
  const Backend* backend = acquire_backend(name, config.plugin_dir, reason);
  if (backend == nullptr) return false;
  const BackendTable& table = config.backend_table(name);
  uint32_t index = 0;
  rill_backend_device_info info{};
  if (host_device != nullptr) {
    if (backend->abi_version < 4) {
      reason = "the plugin speaks interface version " + std::to_string(backend->abi_version) +
               ", and a host's own device needs version 4";
      return false;
    }
  } else {
    if (!pick_device(*backend, table.device, index, info, reason, out_of_memory)) {
      if (out_of_memory) failure = RILL_ERROR_OUT_OF_MEMORY;
      return false;
    }
    if (auto_mode && !table.device.explicit_choice && info.type == RILL_DEVICE_TYPE_CPU_IMPLEMENTATION &&
        name != "cpu") {
      reason = "device " + std::to_string(index) + " " + quoted(info.name) +
               " is a CPU implementation; the cpu backend is faster there";
      return false;
    }
  }
  const ContextOptions options(*backend, index, table, host_device);
  rill_backend_context* context = nullptr;
  clear_backend_message();
  const rill_status status = backend->table->context_create(options.get(), &context);
  if (status != RILL_OK || context == nullptr) {
    // Out of memory is not unavailability: the same backend may work once
    // memory is freed. A host's device the backend cannot use as described
    // is the caller's argument to mend.
    if (status == RILL_ERROR_OUT_OF_MEMORY) failure = status;
    if (status == RILL_ERROR_INVALID_ARGUMENT && host_device != nullptr) failure = status;
    const std::string where =
        host_device != nullptr ? std::string("the host's device") : "device " + std::to_string(index) + " " + quoted(info.name);
    reason = "cannot create a context on " + where + ": " +
             (status == RILL_OK ? std::string("the backend returned no context") : backend_message(status));
    return false;
  }
  out.backend = backend;
  out.context = context;
  try {
    const char* device_name = backend->table->context_device_name(context);
    out.device_name = device_name != nullptr ? device_name : info.name;
  } catch (...) {
    backend->table->context_destroy(context);
    throw;
  }
  return true;
}

// Every backend the config has a table for checks its own keys, whether or not
// it is the one chosen, so that a mistake is found on every machine where that
// backend loads. A backend that cannot be loaded cannot check: that is logged.
rill_status check_configured_backends(const Config& config, const char* function) {
  for (const auto& [name, table] : config.backends) {
    std::string reason;
    const Backend* backend = acquire_backend(name, config.plugin_dir, reason);
    if (backend == nullptr) {
      log_message(RILL_LOG_WARNING, std::string(function) + ": " + table.where + ": the keys of [backend." + name +
                                        "] are not checked: " + reason);
      continue;
    }
    const rill_status status = check_backend_options(*backend, table, function);
    if (status != RILL_OK) return status;
  }
  return RILL_OK;
}

}  // namespace

const char* device_type_name(rill_device_type type) {
  switch (enum_value(type)) {
    case RILL_DEVICE_TYPE_CPU: return "CPU";
    case RILL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case RILL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case RILL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case RILL_DEVICE_TYPE_CPU_IMPLEMENTATION: return "CPU implementation";
    case RILL_DEVICE_TYPE_OTHER: return "other";
    default: return "unknown";
  }
}

rill_status describe_devices(const Backend& backend, std::vector<rill_backend_device_info>& out, std::string& reason) {
  uint32_t count = 0;
  clear_backend_message();
  rill_status status = backend.table->device_count(&count);
  if (status != RILL_OK) {
    reason = backend_message(status);
    return status;
  }
  out.clear();
  for (uint32_t i = 0; i < count; ++i) {
    rill_backend_device_info info{};
    info.struct_size = sizeof(info);
    clear_backend_message();
    status = backend.table->describe_device(i, &info);
    if (status != RILL_OK) {
      reason = "cannot describe device " + std::to_string(i) + ": " + backend_message(status);
      return status;
    }
    // The strings come from another library: never trust their termination.
    info.name[sizeof(info.name) - 1] = '\0';
    info.details[sizeof(info.details) - 1] = '\0';
    out.push_back(info);
  }
  return RILL_OK;
}

rill_status select_backend(const Config& config, const char* function, const void* host_device, Selection& out) {
  const rill_status checked = check_configured_backends(config, function);
  if (checked != RILL_OK) return checked;
  const bool auto_mode = config.backend == "auto" && host_device == nullptr;
  const std::vector<std::string> names = host_device != nullptr ? std::vector<std::string>{"vulkan"}
                                         : auto_mode             ? config.prefer
                                                                 : std::vector<std::string>{config.backend};
  std::string report;
  std::string reason;
  rill_status failure = RILL_ERROR_BACKEND_UNAVAILABLE;
  for (const std::string& name : names) {
    reason.clear();
    Selection selection;
    if (try_backend(config, name, auto_mode, host_device, selection, reason, failure)) {
      try {  // the report's allocations can fail once the backend context exists
        report += name + ": chosen";
        log_message(RILL_LOG_INFO, "backend selection:\n" + report);
      } catch (...) {
        selection.backend->table->context_destroy(selection.context);
        throw;
      }
      selection.report = std::move(report);
      out = std::move(selection);
      return RILL_OK;
    }
    report += name + ": skipped: " + reason + "\n";
  }
  if (!report.empty() && report.back() == '\n') report.pop_back();
  log_message(RILL_LOG_INFO, "backend selection failed:\n" + report);
  if (!auto_mode) {
    const std::string name = host_device != nullptr ? "vulkan" : config.backend;
    if (failure == RILL_ERROR_INVALID_ARGUMENT) return fail(failure, std::string(function) + ": " + reason);
    return fail(failure, std::string(function) + ": backend '" + name + "' is unavailable: " + reason);
  }
  return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
              std::string(function) + ": no backend of runtime.prefer could be had:\n" + report);
}

}  // namespace rill
