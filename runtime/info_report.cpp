// rill_info_report: the version, every known backend with its availability
// and devices — what `rill info` prints.
#include <cstdio>
#include <cstring>
#include <new>

#include "backend_selection.h"
#include "config.h"
#include "errors.h"

namespace rill {
namespace {

std::string memory_text(uint64_t bytes) {
  if (bytes == 0) return "unknown";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

void describe_backend(const Config& config, const std::string& name, std::string& report) {
  std::string reason;
  const Backend* backend = acquire_backend(name, config.plugin_dir, reason);
  if (backend == nullptr) {
    report += "  " + name + ": unavailable: " + reason + "\n";
    return;
  }
  std::vector<rill_backend_device_info> devices;
  const rill_status described = describe_devices(*backend, devices, reason);
  // Out of memory is the report's failure, not the backend's unavailability.
  if (described == RILL_ERROR_OUT_OF_MEMORY) throw std::bad_alloc();
  if (described != RILL_OK) {
    report += "  " + name + ": unavailable: " + reason + " (" + backend->origin + ")\n";
    return;
  }
  if (devices.empty()) {
    report += "  " + name + ": unavailable: no device found (" + backend->origin + ")\n";
    return;
  }
  report += "  " + name + ": available (" + backend->origin + ", backend interface version " +
            std::to_string(backend->abi_version) + ")\n";
  for (size_t i = 0; i < devices.size(); ++i) {
    const rill_backend_device_info& d = devices[i];
    report += "    device " + std::to_string(i) + ": " + d.name + "\n";
    report += "      type: " + std::string(device_type_name(d.type)) + ", memory: " + memory_text(d.memory_bytes) +
              ", subgroup size: " + (d.subgroup_size ? std::to_string(d.subgroup_size) : std::string("n/a")) +
              (d.type == RILL_DEVICE_TYPE_CPU_IMPLEMENTATION && name != "cpu" ? " (backend \"auto\" skips it)" : "") +
              "\n";
    if (d.details[0] != '\0') report += "      details: " + std::string(d.details) + "\n";
  }
}

std::string build_report(const Config& config) {
  const uint32_t v = rill_version_number();
  std::string report = "rill " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                       std::to_string(v % 100) + "\nbackends:\n";
  // The three rill ships, then any plugin the config names.
  std::vector<std::string> names = {"cpu", "cuda", "vulkan"};
  std::vector<std::string> wanted = config.prefer;
  if (config.backend != "auto") wanted.push_back(config.backend);
  for (const std::string& name : wanted) {
    bool listed = false;
    for (const std::string& n : names) listed = listed || n == name;
    if (!listed) names.push_back(name);
  }
  for (const std::string& name : names) describe_backend(config, name, report);
  return report;
}

}  // namespace
}  // namespace rill

extern "C" RILL_API rill_status rill_info_report(const char* config_toml, char* buf, size_t buf_size,
                                                 size_t* out_required) {
  constexpr const char* fn = "rill_info_report";
  return rill::guarded(fn, [&] {
    if (out_required == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": out_required: expected a pointer, got NULL");
    }
    if (buf == nullptr && buf_size != 0) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": buf: expected a buffer of buf_size " +
                                                         std::to_string(buf_size) + " bytes, got NULL");
    }
    rill::Config config;
    const rill_status parsed = rill::parse_config(config_toml != nullptr ? config_toml : "", "config", fn, config);
    if (parsed != RILL_OK) return parsed;
    const std::string report = rill::build_report(config);
    const size_t required = report.size() + 1;
    if (buf != nullptr && buf_size < required) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": buf_size: expected at least " +
                                                         std::to_string(required) + " bytes for the report, got " +
                                                         std::to_string(buf_size));
    }
    if (buf != nullptr) std::memcpy(buf, report.c_str(), required);
    *out_required = required;
    return RILL_OK;
  });
}
