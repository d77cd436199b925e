#include "logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "errors.h"

namespace rill {
namespace {

// Above every real level: the default sink is silent when RILL_LOG is unset.
constexpr int kSilent = RILL_LOG_ERROR + 1;

const char* level_name(rill_log_level level) {
  switch (level) {
    case RILL_LOG_DEBUG: return "debug";
    case RILL_LOG_INFO: return "info";
    case RILL_LOG_WARNING: return "warning";
    case RILL_LOG_ERROR: return "error";
    default: return "?";
  }
}

// The default sink's threshold, from RILL_LOG. Read at each message rather
// than once, so that a host may set RILL_LOG after loading rill; messages are
// rare (context creation, plugin loading), so the lookup costs nothing.
int default_threshold() {
  const char* value = std::getenv("RILL_LOG");
  if (value == nullptr || *value == '\0') return kSilent;
  for (int level = RILL_LOG_DEBUG; level <= RILL_LOG_ERROR; ++level) {
    if (std::strcmp(value, level_name(static_cast<rill_log_level>(level))) == 0) return level;
  }
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    std::fprintf(stderr, "rill: RILL_LOG='%s' is not one of debug, info, warning, error; logging warnings\n", value);
  }
  return static_cast<int>(RILL_LOG_WARNING);
}

struct Sink {
  rill_log_fn fn = nullptr;
  void* user_data = nullptr;
  int min_level = 0;
};

// A shared lock is held while a callback runs, so that once
// rill_set_log_callback returns no message reaches the callback it replaced.
std::shared_mutex g_sink_mutex;
Sink g_sink;

}  // namespace

void log_message(rill_log_level level, const std::string& message) noexcept {
  std::shared_lock<std::shared_mutex> lock(g_sink_mutex);
  if (g_sink.fn != nullptr) {
    if (static_cast<int>(level) >= g_sink.min_level) g_sink.fn(level, message.c_str(), g_sink.user_data);
    return;
  }
  if (static_cast<int>(level) >= default_threshold()) {
    std::fprintf(stderr, "rill [%s] %s\n", level_name(level), message.c_str());
  }
}

}  // namespace rill

extern "C" RILL_API rill_status rill_set_log_callback(rill_log_fn fn, void* user_data, rill_log_level min_level) {
  return rill::guarded("rill_set_log_callback", [&] {
    const int32_t level = rill::enum_value(min_level);
    if (level < RILL_LOG_DEBUG || level > RILL_LOG_ERROR) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                        "rill_set_log_callback: min_level: expected RILL_LOG_DEBUG (0) to RILL_LOG_ERROR (3), got " +
                            std::to_string(level));
    }
    std::unique_lock<std::shared_mutex> lock(rill::g_sink_mutex);
    rill::g_sink.fn = fn;
    rill::g_sink.user_data = user_data;
    rill::g_sink.min_level = level;
    return RILL_OK;
  });
}
