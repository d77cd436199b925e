// Reading tokenizer.json's fields with errors that name the file, the JSON
// path of the field and what was expected. Loading throws LoadError; the
// loader's caller turns it into a status.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "rill.h"

namespace rill::tok {

using Json = nlohmann::json;

struct LoadError {
  rill_status status;
  std::string message;
};

// Where a JSON value sits: the file and the path inside it ("model.merges[3]").
struct JsonAt {
  const std::string* file;
  std::string path;

  JsonAt operator/(const std::string& key) const { return {file, path.empty() ? key : path + "." + key}; }
  JsonAt operator[](size_t index) const { return {file, path + "[" + std::to_string(index) + "]"}; }
  // Throws RILL_ERROR_CONFIG: "<file>: <path>: <what>".
  [[noreturn]] void fail(const std::string& what) const;
};

// The member key of object value at, which must exist.
const Json& required(const Json& value, const JsonAt& at, const char* key);
// The member key, or nullptr when it is absent or null.
const Json* optional(const Json& value, const char* key);

// Checks value's type, failing with "expected <what>, got <type>".
const Json& expect_object(const Json& value, const JsonAt& at);
const Json& expect_array(const Json& value, const JsonAt& at);
std::string expect_string(const Json& value, const JsonAt& at);
bool expect_bool(const Json& value, const JsonAt& at);
int64_t expect_int(const Json& value, const JsonAt& at, int64_t min, int64_t max);

// Members read with a default when absent or null.
std::string string_or(const Json& object, const JsonAt& at, const char* key, const std::string& fallback);
bool bool_or(const Json& object, const JsonAt& at, const char* key, bool fallback);

// The "type" member of a component.
std::string component_type(const Json& component, const JsonAt& at);
// Fails naming an unknown component type and the supported ones.
[[noreturn]] void unknown_type(const JsonAt& at, const std::string& type, const char* supported);

// A one-character string member (Metaspace's replacement, Strip's content).
uint32_t expect_char(const Json& value, const JsonAt& at);

}  // namespace rill::tok
