#include "host_services.h"

#include "errors.h"
#include "logging.h"

namespace rill {
namespace {

thread_local std::string t_backend_message;
thread_local bool t_backend_reported = false;

void host_log(rill_log_level level, const char* backend, const char* message) {
  const int32_t value = enum_value(level);
  if (value < RILL_LOG_DEBUG || value > RILL_LOG_ERROR) level = RILL_LOG_ERROR;
  try {
    log_message(level, std::string(backend != nullptr ? backend : "?") + ": " + (message != nullptr ? message : ""));
  } catch (...) {
    // A message that cannot be built is dropped: logging never fails a call.
  }
}

rill_status host_fail(rill_status status, const char* message) {
  try {
    t_backend_message = message != nullptr ? message : "";
    t_backend_reported = true;
  } catch (...) {
    t_backend_reported = false;
  }
  return fail(status, message != nullptr ? message : "");
}

}  // namespace

rill_host_services make_host_services(uint32_t abi_version) {
  rill_host_services services{};
  services.abi_version = abi_version;
  services.struct_size = sizeof(rill_host_services);
  services.log = host_log;
  services.fail = host_fail;
  return services;
}

void clear_backend_message() {
  t_backend_reported = false;
  t_backend_message.clear();
}

std::string backend_message(rill_status status) {
  if (t_backend_reported && !t_backend_message.empty()) return t_backend_message;
  return std::string("failed with ") + rill_status_string(status) + " and gave no reason";
}

rill_status backend_failure(const char* function, const std::string& backend, rill_status status) {
  const rill_status reported = (status == RILL_OK || !is_known_status(status)) ? RILL_ERROR_BACKEND : status;
  std::string text = backend_message(status);
  if (status == RILL_OK) text = "returned no result";
  else if (!is_known_status(status)) text += " (returned unknown status " + std::to_string(enum_value(status)) + ")";
  return fail(reported, std::string(function) + ": " + backend + " backend: " + text);
}

}  // namespace rill
