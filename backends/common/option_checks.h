/* Checks of a backend's own options (rill_backend.check_options) against the
   keys it takes, shared by the C++ backends so that every one words unknown
   keys, wrong types and ranges alike. Header-only: plugins do not link librill. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "rill_backend.h"

namespace rill_options {

/* One key a backend takes: its type and, for integers, its range. */
struct Key {
  const char* name;
  rill_backend_option_type type;
  int64_t min = 0;
  int64_t max = 0;
};

inline const char* type_text(rill_backend_option_type type) {
  switch (type) {
    case RILL_BACKEND_OPTION_BOOL: return "true or false";
    case RILL_BACKEND_OPTION_INT: return "an integer";
    case RILL_BACKEND_OPTION_FLOAT: return "a float";
    case RILL_BACKEND_OPTION_STRING: return "a string";
    default: return "a value";
  }
}

/* Empty when option is one of keys with the right type and range; else the
   problem with it, naming its key. */
inline std::string problem_with(const rill_backend_option& option, std::initializer_list<Key> keys) {
  const Key* known = nullptr;
  std::string list;
  for (const Key& key : keys) {
    if (std::string(key.name) == option.key) known = &key;
    list += (list.empty() ? "" : ", ") + std::string(key.name);
  }
  if (known == nullptr) return std::string("unknown key '") + option.key + "'; expected one of: device, " + list;
  if (option.type != known->type) {
    return std::string("'") + option.key + "': expected " + type_text(known->type) + ", got " +
           type_text(option.type);
  }
  if (option.type == RILL_BACKEND_OPTION_INT && (option.int_value < known->min || option.int_value > known->max)) {
    return std::string("'") + option.key + "': expected " + std::to_string(known->min) + " to " +
           std::to_string(known->max) + ", got " + std::to_string(option.int_value);
  }
  return "";
}

/* Returns "" when every option is one of keys with the right type and range,
   leaving *out_rejected alone (rill_backend.h's check_options); otherwise the
   problem with the first one that is not (naming its key), and its index in
   *out_rejected. */
inline std::string check(const rill_backend_option* options, uint32_t count, std::initializer_list<Key> keys,
                         uint32_t* out_rejected) {
  for (uint32_t i = 0; i < count; ++i) {
    std::string problem = problem_with(options[i], keys);
    if (!problem.empty()) {
      *out_rejected = i;
      return problem;
    }
  }
  return "";
}

/* The option called name, or nullptr. */
inline const rill_backend_option* find(const rill_backend_option* options, uint32_t count, const char* name) {
  for (uint32_t i = 0; i < count; ++i) {
    if (std::string(options[i].key) == name) return &options[i];
  }
  return nullptr;
}

/* True when options (a context_create argument) is a version 3 struct that
   carries the option list; false for a version 1-2 caller's shorter struct. */
inline bool has_option_list(const rill_backend_context_options* options) {
  return options != nullptr && RILL_STRUCT_HAS(rill_backend_context_options, options, option_count);
}

}  // namespace rill_options
