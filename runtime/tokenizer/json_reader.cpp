#include "tokenizer/json_reader.h"

#include "tokenizer/utf8.h"

namespace rill::tok {

void JsonAt::fail(const std::string& what) const {
  throw LoadError{RILL_ERROR_CONFIG, *file + ": " + (path.empty() ? std::string("(top level)") : path) + ": " + what};
}

const Json* optional(const Json& value, const char* key) {
  if (!value.is_object()) return nullptr;
  const auto it = value.find(key);
  if (it == value.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json& required(const Json& value, const JsonAt& at, const char* key) {
  expect_object(value, at);
  const Json* member = optional(value, key);
  if (member == nullptr) (at / key).fail("missing (expected a value)");
  return *member;
}

const Json& expect_object(const Json& value, const JsonAt& at) {
  if (!value.is_object()) at.fail(std::string("expected an object, got ") + value.type_name());
  return value;
}

const Json& expect_array(const Json& value, const JsonAt& at) {
  if (!value.is_array()) at.fail(std::string("expected an array, got ") + value.type_name());
  return value;
}

std::string expect_string(const Json& value, const JsonAt& at) {
  if (!value.is_string()) at.fail(std::string("expected a string, got ") + value.type_name());
  std::string text = value.get<std::string>();
  if (find_invalid_utf8(text) != text.size()) at.fail("expected UTF-8 text, got invalid UTF-8");
  return text;
}

bool expect_bool(const Json& value, const JsonAt& at) {
  if (!value.is_boolean()) at.fail(std::string("expected true or false, got ") + value.type_name());
  return value.get<bool>();
}

int64_t expect_int(const Json& value, const JsonAt& at, int64_t min, int64_t max) {
  if (!value.is_number_integer()) at.fail(std::string("expected an integer, got ") + value.type_name());
  const int64_t n = value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                        ? INT64_MAX
                        : value.get<int64_t>();
  if (n < min || n > max) {
    at.fail("expected an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", got " + value.dump());
  }
  return n;
}

std::string string_or(const Json& object, const JsonAt& at, const char* key, const std::string& fallback) {
  const Json* member = optional(object, key);
  return member ? expect_string(*member, at / key) : fallback;
}

bool bool_or(const Json& object, const JsonAt& at, const char* key, bool fallback) {
  const Json* member = optional(object, key);
  return member ? expect_bool(*member, at / key) : fallback;
}

std::string component_type(const Json& component, const JsonAt& at) {
  // Sequences nest components; a bound keeps a hostile file from exhausting the stack.
  if (at.path.size() > 2048) at.fail("components nested too deeply (a path of more than 2048 characters)");
  return expect_string(required(component, at, "type"), at / "type");
}

void unknown_type(const JsonAt& at, const std::string& type, const char* supported) {
  (at / "type").fail("unsupported type '" + type + "' (supported: " + supported + ")");
}

uint32_t expect_char(const Json& value, const JsonAt& at) {
  const std::string text = expect_string(value, at);
  size_t i = 0;
  const uint32_t cp = text.empty() ? 0 : next_code_point(text, i);
  if (text.empty() || i != text.size()) at.fail("expected one character, got '" + text + "'");
  return cp;
}

}  // namespace rill::tok
