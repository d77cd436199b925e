#include "errors.h"

namespace rill {
namespace {

thread_local std::string t_last_error_storage;
// Points at t_last_error_storage, or at a static text when storing failed.
thread_local const char* t_last_error = "";

}  // namespace

rill_status fail(rill_status status, const std::string& message) noexcept {
  try {
    t_last_error_storage = message;
    t_last_error = t_last_error_storage.c_str();
  } catch (...) {
    t_last_error = "rill: out of host memory while recording an error message";
  }
  return status;
}

bool is_known_status(rill_status status) {
  const int32_t value = enum_value(status);
  return value >= RILL_OK && value <= RILL_ERROR_NOT_FOUND;
}

}  // namespace rill

extern "C" {

RILL_API const char* rill_last_error(void) { return rill::t_last_error; }

RILL_API const char* rill_status_string(rill_status status) {
  switch (rill::enum_value(status)) {
    case RILL_OK: return "RILL_OK";
    case RILL_ERROR_INVALID_ARGUMENT: return "RILL_ERROR_INVALID_ARGUMENT";
    case RILL_ERROR_SHAPE: return "RILL_ERROR_SHAPE";
    case RILL_ERROR_DTYPE: return "RILL_ERROR_DTYPE";
    case RILL_ERROR_OUT_OF_MEMORY: return "RILL_ERROR_OUT_OF_MEMORY";
    case RILL_ERROR_BACKEND_UNAVAILABLE: return "RILL_ERROR_BACKEND_UNAVAILABLE";
    case RILL_ERROR_CONFIG: return "RILL_ERROR_CONFIG";
    case RILL_ERROR_IO: return "RILL_ERROR_IO";
    case RILL_ERROR_UNSUPPORTED: return "RILL_ERROR_UNSUPPORTED";
    case RILL_ERROR_BACKEND: return "RILL_ERROR_BACKEND";
    case RILL_ERROR_INTERNAL: return "RILL_ERROR_INTERNAL";
    case RILL_ERROR_NOT_FOUND: return "RILL_ERROR_NOT_FOUND";
    default: return "RILL_STATUS_UNKNOWN";
  }
}

}  // extern "C"
