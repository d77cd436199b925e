// The one TOML validator: every table the runtime reads from TOML (the config's
// [runtime] and [backend.<name>] tables, a model's [model] table) is checked
// with it, so that unknown keys, wrong types and out-of-range values read the
// same everywhere, each with the key and its source:line:column.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include <toml++/toml.h>

#include "rill.h"

namespace rill {

// Thrown by TomlChecker; the entry point turns it into RILL_ERROR_CONFIG.
struct TomlError {
  std::string message;
};

// "line:column" (1-based) of region's start.
std::string toml_position(const toml::source_region& region);

// "an integer", "a table", ...: what a node holds, for messages.
const char* toml_type_name(const toml::node& node);

// Parses text into out. On a syntax error returns RILL_ERROR_CONFIG with
// "function: source:line:column: TOML syntax error: ..." as rill_last_error().
rill_status parse_toml(std::string_view text, const std::string& source, const char* function, toml::table& out);

class TomlChecker {
 public:
  // source names the text in messages (a file path, or "config").
  explicit TomlChecker(std::string source) : source_(std::move(source)) {}

  // "source:line:column" of node, or of region.
  std::string where(const toml::node& node) const;
  std::string where(const toml::source_region& region) const;

  // Throws TomlError "source:line:column: text" for the position of region.
  [[noreturn]] void error_at(const toml::source_region& region, const std::string& text) const;

  // Rejects the first key of table that allowed does not list, naming it as
  // prefix + key with the list of keys allowed.
  void only_keys(const toml::table& table, const std::string& prefix,
                 std::initializer_list<std::string_view> allowed) const;

  // parent[key] as a table, nullptr when absent; an error when it is another type.
  const toml::table* table_at(const toml::table& parent, std::string_view key, const std::string& full) const;

  [[noreturn]] void wrong_type(const toml::node& node, const std::string& key, const std::string& expected) const;

  // The value of node, which must be an integer in [min, max].
  int64_t integer(const toml::node& node, const std::string& key, int64_t min, int64_t max) const;
  // The value of node, which must be an integer or a float.
  double number(const toml::node& node, const std::string& key) const;
  bool boolean(const toml::node& node, const std::string& key) const;
  // The value of node, which must be a non-empty string; what says what it
  // should hold ("a folder path").
  std::string nonempty_string(const toml::node& node, const std::string& key, const char* what) const;

  // The value paired with node's string among options.
  template <class Value>
  Value choice(const toml::node& node, const std::string& key,
               std::initializer_list<std::pair<const char*, Value>> options) const {
    std::string list;
    for (const auto& option : options) list += (list.empty() ? "\"" : ", \"") + std::string(option.first) + "\"";
    if (!node.is_string()) wrong_type(node, key, "one of " + list);
    const std::string& value = node.as_string()->get();
    for (const auto& option : options) {
      if (value == option.first) return option.second;
    }
    error_at(node.source(), "'" + key + "': expected one of " + list + ", got \"" + value + "\"");
  }

 private:
  std::string source_;
};

}  // namespace rill
