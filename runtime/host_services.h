// The service table the runtime hands to every backend (logging, error
// reporting), and the bookkeeping that turns a backend's failure into a
// message for rill_last_error().
#pragma once

#include <cstdint>
#include <string>

#include "rill_backend.h"

namespace rill {

// A host services table for a backend that speaks interface version abi_version.
rill_host_services make_host_services(uint32_t abi_version);

// Forgets any message a backend recorded on this thread; call before a
// backend call whose failure is to be reported.
void clear_backend_message();

// The message the backend recorded on this thread through host->fail since
// clear_backend_message(), or a note that it recorded none.
std::string backend_message(rill_status status);

// Builds "<function>: <backend> backend: <message>" for a failed backend call,
// records it as the last error and returns the status to hand to the caller
// (a status the backend should not return becomes RILL_ERROR_BACKEND).
rill_status backend_failure(const char* function, const std::string& backend, rill_status status);

}  // namespace rill
