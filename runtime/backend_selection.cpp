#include "backend_selection.h"

#include "errors.h"
#include "host_services.h"
#include "logging.h"

namespace rill {
namespace {

// What the config says about one backend's context.
struct BackendOptions {
  DeviceChoice device;
  uint32_t threads = 0;
  bool tf32 = false;
};

BackendOptions options_for(const Config& config, const std::string& name) {
  BackendOptions options;
  if (name == "cpu") options.threads = config.cpu_threads;
  if (name == "cuda") {
    options.device = config.cuda_device;
    options.tf32 = config.cuda_tf32;
  }
  if (name == "vulkan") options.device = config.vulkan_device;
  return options;
}

std::string quoted(const char* text) { return std::string("'") + text + "'"; }

// Picks the device index the options ask for. Without an explicit choice, the
// first device that is not a CPU implementation of a GPU API wins (device 0
// when all are). Returns false with the reason when no device fits.
bool pick_device(const Backend& backend, const BackendOptions& options, uint32_t& index,
                 rill_backend_device_info& info, std::string& reason) {
  std::vector<rill_backend_device_info> devices;
  if (!describe_devices(backend, devices, reason)) return false;
  if (devices.empty()) {
    reason = "no device found";
    return false;
  }
  const DeviceChoice& choice = options.device;
  if (!choice.name.empty()) {
    std::string names;
    for (uint32_t i = 0; i < devices.size(); ++i) {
      if (std::string(devices[i].name).find(choice.name) != std::string::npos) {
        index = i;
        info = devices[i];
        return true;
      }
      names += (names.empty() ? "" : ", ") + quoted(devices[i].name);
    }
    reason = "no device whose name contains '" + choice.name + "' (devices: " + names + ")";
    return false;
  }
  if (choice.explicit_choice) {
    if (choice.index >= static_cast<int64_t>(devices.size())) {
      reason = "device " + std::to_string(choice.index) + " asked for, but there are " +
               std::to_string(devices.size()) + " device(s)";
      return false;
    }
    index = static_cast<uint32_t>(choice.index);
    info = devices[index];
    return true;
  }
  index = 0;
  for (uint32_t i = 0; i < devices.size(); ++i) {
    if (devices[i].type != RILL_DEVICE_TYPE_CPU_IMPLEMENTATION) {
      index = i;
      break;
    }
  }
  info = devices[index];
  return true;
}

// Tries one backend. In auto mode a device that is a CPU implementation of a
// GPU API is refused: the CPU backend does the same work faster.
bool try_backend(const Config& config, const std::string& name, bool auto_mode, Selection& out,
                 std::string& reason) {
  const Backend* backend = acquire_backend(name, config.plugin_dir, reason);
  if (backend == nullptr) return false;
  const BackendOptions options = options_for(config, name);
  uint32_t index = 0;
  rill_backend_device_info info{};
  if (!pick_device(*backend, options, index, info, reason)) return false;
  if (auto_mode && info.type == RILL_DEVICE_TYPE_CPU_IMPLEMENTATION && name != "cpu") {
    reason = "device " + std::to_string(index) + " " + quoted(info.name) +
             " is a CPU implementation; the cpu backend is faster there";
    return false;
  }
  rill_backend_context_options context_options{};
  context_options.struct_size = sizeof(context_options);
  context_options.device_index = static_cast<int32_t>(index);
  context_options.device_name = nullptr;
  context_options.threads = options.threads;
  context_options.allow_tf32 = options.tf32 ? 1u : 0u;
  rill_backend_context* context = nullptr;
  clear_backend_message();
  const rill_status status = backend->table->context_create(&context_options, &context);
  if (status != RILL_OK || context == nullptr) {
    reason = "cannot create a context on device " + std::to_string(index) + " " + quoted(info.name) + ": " +
             (status == RILL_OK ? std::string("the backend returned no context") : backend_message(status));
    return false;
  }
  const char* device_name = backend->table->context_device_name(context);
  out.backend = backend;
  out.context = context;
  out.device_name = device_name != nullptr ? device_name : info.name;
  return true;
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

bool describe_devices(const Backend& backend, std::vector<rill_backend_device_info>& out, std::string& reason) {
  uint32_t count = 0;
  clear_backend_message();
  rill_status status = backend.table->device_count(&count);
  if (status != RILL_OK) {
    reason = backend_message(status);
    return false;
  }
  out.clear();
  for (uint32_t i = 0; i < count; ++i) {
    rill_backend_device_info info{};
    info.struct_size = sizeof(info);
    clear_backend_message();
    status = backend.table->describe_device(i, &info);
    if (status != RILL_OK) {
      reason = "cannot describe device " + std::to_string(i) + ": " + backend_message(status);
      return false;
    }
    // The strings come from another library: never trust their termination.
    info.name[sizeof(info.name) - 1] = '\0';
    info.details[sizeof(info.details) - 1] = '\0';
    out.push_back(info);
  }
  return true;
}

rill_status select_backend(const Config& config, const char* function, Selection& out) {
  const bool auto_mode = config.backend == "auto";
  const std::vector<std::string> names = auto_mode ? config.prefer : std::vector<std::string>{config.backend};
  std::string report;
  std::string reason;
  for (const std::string& name : names) {
    reason.clear();
    Selection selection;
    if (try_backend(config, name, auto_mode, selection, reason)) {
      report += name + ": chosen";
      log_message(RILL_LOG_INFO, "backend selection:\n" + report);
      selection.report = std::move(report);
      out = std::move(selection);
      return RILL_OK;
    }
    report += name + ": skipped: " + reason + "\n";
  }
  if (!report.empty() && report.back() == '\n') report.pop_back();
  log_message(RILL_LOG_INFO, "backend selection failed:\n" + report);
  if (!auto_mode) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                std::string(function) + ": backend '" + config.backend + "' is unavailable: " + reason);
  }
  return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
              std::string(function) + ": no backend of runtime.prefer could be had:\n" + report);
}

}  // namespace rill
