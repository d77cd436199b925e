/* The Vulkan plugin's own [backend.vulkan] options, checked in one place:
   pipeline_cache (a non-empty path) and queue_priority (0.0 to 1.0). */
#include <cstdio>

#include "option_checks.h"
#include "vk_internal.h"

namespace rill_vk {

std::string float_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

namespace {

/* Empty when option's value is valid for its key (its type already checked); else why not. */
std::string value_problem(const rill_backend_option& option) {
  const std::string key = option.key;
  if (key == kPipelineCacheOption && option.string_value[0] == '\0') {
    return "'" + key + "': expected the path of a file, got an empty string";
  }
  /* Written so that NaN fails it too. */
  if (key == kQueuePriorityOption && !(option.float_value >= 0.0 && option.float_value <= 1.0)) {
    return "'" + key + "': expected 0.0 to 1.0, got " + float_text(option.float_value);
  }
  return "";
}

}  // namespace

rill_status check_options(const rill_backend_option* options, uint32_t count, uint32_t* out_rejected) {
  std::string problem = rill_options::check(
      options, count,
      {{kPipelineCacheOption, RILL_BACKEND_OPTION_STRING}, {kQueuePriorityOption, RILL_BACKEND_OPTION_FLOAT}},
      out_rejected);
  for (uint32_t i = 0; problem.empty() && i < count; ++i) {
    problem = value_problem(options[i]);
    if (!problem.empty()) *out_rejected = i;
  }
  return problem.empty() ? RILL_OK : fail(RILL_ERROR_CONFIG, "Vulkan: " + problem);
}

float queue_priority(const rill_backend_context_options* options) {
  const rill_backend_option* option =
      rill_options::has_option_list(options)
          ? rill_options::find(options->options, options->option_count, kQueuePriorityOption)
          : nullptr;
  return option != nullptr ? static_cast<float>(option->float_value) : kDefaultQueuePriority;
}

}  // namespace rill_vk
