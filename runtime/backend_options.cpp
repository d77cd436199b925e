#include "backend_options.h"

#include <cstddef>
#include <string>

#include "errors.h"
#include "host_services.h"

namespace rill {
namespace {

bool is_legacy(const Backend& backend) { return backend.abi_version < 3; }

// The backend's check_options, or nullptr when its table predates version 3,
// is too short to hold it, or leaves it NULL.
decltype(rill_backend::check_options) check_options_of(const Backend& backend) {
  const rill_backend* table = backend.table;
  if (is_legacy(backend)) return nullptr;
  if (table->struct_size < offsetof(rill_backend, check_options) + sizeof(table->check_options)) return nullptr;
  return table->check_options;
}

// "function: source:line:column: backend.<name>: problem", problem naming the key.
rill_status refuse(const char* function, const std::string& where, const std::string& backend,
                   const std::string& problem) {
  return fail(RILL_ERROR_CONFIG, std::string(function) + ": " + where + ": backend." + backend + ": " + problem);
}

// Version 1-2 backends: the keys their context options have a field for.
rill_status check_legacy_options(const Backend& backend, const BackendTable& table, const char* function) {
  for (const BackendOptionValue& option : table.options) {
    const std::string key = "'" + option.key + "'";
    if (option.key == "threads") {
      if (option.type != RILL_BACKEND_OPTION_INT || option.int_value < 0 || option.int_value > UINT32_MAX) {
        return refuse(function, option.where, backend.name,
                      key + ": expected an integer from 0 to " + std::to_string(UINT32_MAX));
      }
    } else if (option.key == "tf32") {
      if (option.type != RILL_BACKEND_OPTION_BOOL) {
        return refuse(function, option.where, backend.name, key + ": expected true or false");
      }
    } else {
      return refuse(function, option.where, backend.name,
                    "unknown key " + key + "; the " + backend.name + " backend (interface version " +
                        std::to_string(backend.abi_version) + ") takes: device, threads, tf32");
    }
  }
  return RILL_OK;
}

rill_backend_option to_backend_option(const BackendOptionValue& value) {
  rill_backend_option option{};
  option.key = value.key.c_str();
  option.type = value.type;
  option.int_value = value.int_value;
  option.float_value = value.float_value;
  option.string_value = value.type == RILL_BACKEND_OPTION_STRING ? value.string_value.c_str() : nullptr;
  return option;
}

}  // namespace

rill_status check_backend_options(const Backend& backend, const BackendTable& table, const char* function) {
  if (table.options.empty()) return RILL_OK;
  if (is_legacy(backend)) return check_legacy_options(backend, table, function);
  const auto check = check_options_of(backend);
  if (check == nullptr) {
    const BackendOptionValue& first = table.options.front();
    return refuse(function, first.where, backend.name,
                  "unknown key '" + first.key + "'; the " + backend.name + " backend takes no options but device");
  }
  std::vector<rill_backend_option> list;
  for (const BackendOptionValue& option : table.options) list.push_back(to_backend_option(option));
  uint32_t rejected = UINT32_MAX;
  clear_backend_message();
  const rill_status status = check(list.data(), static_cast<uint32_t>(list.size()), &rejected);
  if (status == RILL_OK) return RILL_OK;
  if (status != RILL_ERROR_CONFIG) return backend_failure(function, backend.name, status);
  // A backend that does not say which key is at fault is pointed at its table.
  const std::string& where = rejected < list.size() ? table.options[rejected].where : table.where;
  return refuse(function, where, backend.name, backend_message(status));
}

ContextOptions::ContextOptions(const Backend& backend, uint32_t device_index, const BackendTable& table,
                               const void* host_device) {
  options_.device_index = static_cast<int32_t>(device_index);
  options_.device_name = nullptr;
  if (is_legacy(backend)) {
    options_.struct_size = static_cast<uint32_t>(offsetof(rill_backend_context_options, options));
    for (const BackendOptionValue& option : table.options) {
      if (option.key == "threads") options_.threads = static_cast<uint32_t>(option.int_value);
      if (option.key == "tf32") options_.allow_tf32 = option.int_value != 0 ? 1u : 0u;
    }
    return;
  }
  options_.struct_size = sizeof(options_);
  for (const BackendOptionValue& option : table.options) list_.push_back(to_backend_option(option));
  options_.options = list_.empty() ? nullptr : list_.data();
  options_.option_count = static_cast<uint32_t>(list_.size());
  options_.host_device = host_device;
}

}  // namespace rill
