// The library's logger: routes messages to the host's callback, or by default
// to stderr at the level named by the RILL_LOG environment variable.
#pragma once

#include <string>

#include "rill.h"

namespace rill {

// Emits message at level. Never throws; safe from any thread.
void log_message(rill_log_level level, const std::string& message) noexcept;

}  // namespace rill
