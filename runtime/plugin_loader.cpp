#include "plugin_loader.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "host_services.h"
#include "logging.h"

namespace rill {
namespace {

// Bytes of rill_backend that interface version 1 defines: everything up to and
// including ops. A plugin's table must be at least this large.
constexpr size_t kBackendSizeV1 = offsetof(rill_backend, ops) + sizeof(const rill_backend_ops*);
// The ops table must hold at least its two header fields.
constexpr size_t kOpsHeaderSize = offsetof(rill_backend_ops, residual_add);

struct LoadedPlugin {
  Backend backend;
  void* handle = nullptr;
  // Handed to the plugin at init; the plugin may keep the pointer for ever.
  rill_host_services host{};
};

std::mutex g_plugins_mutex;
// Keyed by the resolved path of the file, so a plugin reached through two
// folders is loaded once.
std::map<std::string, std::unique_ptr<LoadedPlugin>> g_plugins;

struct Candidate {
  std::string folder;
  std::string via;  // why this folder is searched
};

// The folder that holds librill (or the program, when rill is linked statically).
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&rill_version_number), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::vector<Candidate> search_folders(const std::string& plugin_dir) {
  std::vector<Candidate> folders;
  if (!plugin_dir.empty()) folders.push_back({plugin_dir, "plugin_dir"});
  if (const char* env = std::getenv("RILL_PLUGIN_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      if (end > start) folders.push_back({list.substr(start, end - start), "RILL_PLUGIN_PATH"});
      start = end + 1;
    }
  }
  const std::string own = own_folder();
  if (!own.empty()) folders.push_back({own, "beside librill"});
  return folders;
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string resolved(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;
  std::string out = real;
  std::free(real);
  return out;
}

std::string dl_error_text() {
  const char* text = dlerror();
  return text != nullptr ? text : "no reason given";
}

// Checks the table a plugin's init returned against the agreed version.
bool table_is_valid(const rill_backend* table, const std::string& name, uint32_t version, std::string& reason) {
  if (table == nullptr) {
    reason = "rill_plugin_init succeeded but returned no backend table";
    return false;
  }
  if (table->abi_version != version) {
    reason = "its backend table says interface version " + std::to_string(table->abi_version) + ", but it agreed to " +
             std::to_string(version);
    return false;
  }
  if (table->struct_size < kBackendSizeV1) {
    reason = "its backend table has struct_size " + std::to_string(table->struct_size) + ", but interface version " +
             std::to_string(version) + " needs at least " + std::to_string(kBackendSizeV1);
    return false;
  }
  if (table->name == nullptr || name != table->name) {
    reason = "its backend table names it \"" + std::string(table->name != nullptr ? table->name : "(null)") +
             "\", expected \"" + name + "\"";
    return false;
  }
  struct Required {
    const char* member;
    bool present;
  };
  const Required required[] = {
      {"device_count", table->device_count != nullptr},
      {"describe_device", table->describe_device != nullptr},
      {"context_create", table->context_create != nullptr},
      {"context_destroy", table->context_destroy != nullptr},
      {"context_device_name", table->context_device_name != nullptr},
      {"synchronize", table->synchronize != nullptr},
      {"buffer_alloc", table->buffer_alloc != nullptr},
      {"buffer_free", table->buffer_free != nullptr},
      {"buffer_write", table->buffer_write != nullptr},
      {"buffer_read", table->buffer_read != nullptr},
      {"buffer_copy", table->buffer_copy != nullptr},
      {"ops", table->ops != nullptr},
  };
  for (const Required& r : required) {
    if (!r.present) {
      reason = std::string("its backend table leaves the required member '") + r.member + "' NULL";
      return false;
    }
  }
  if (table->ops->abi_version != version || table->ops->struct_size < kOpsHeaderSize) {
    reason = "its ops table has abi_version " + std::to_string(table->ops->abi_version) + " and struct_size " +
             std::to_string(table->ops->struct_size) + ", expected version " + std::to_string(version) +
             " and at least " + std::to_string(kOpsHeaderSize) + " bytes";
    return false;
  }
  return true;
}

// dlopens path and brings the plugin up. Returns nullptr with reason on failure.
std::unique_ptr<LoadedPlugin> open_plugin(const std::string& name, const std::string& path, std::string& reason) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    reason = "cannot load " + path + ": " + dl_error_text();
    return nullptr;
  }
  auto plugin = std::make_unique<LoadedPlugin>();
  plugin->handle = handle;
  plugin->backend.name = name;
  plugin->backend.origin = path;
  auto close_with = [&](const std::string& why) {
    reason = path + ": " + why;
    dlclose(handle);
    return nullptr;
  };
  dlerror();
  void* negotiate_symbol = dlsym(handle, RILL_PLUGIN_NEGOTIATE_SYMBOL);
  if (negotiate_symbol == nullptr) return close_with("no " RILL_PLUGIN_NEGOTIATE_SYMBOL " symbol: " + dl_error_text());
  dlerror();
  void* init_symbol = dlsym(handle, RILL_PLUGIN_INIT_SYMBOL);
  if (init_symbol == nullptr) return close_with("no " RILL_PLUGIN_INIT_SYMBOL " symbol: " + dl_error_text());
  auto negotiate = reinterpret_cast<rill_plugin_negotiate_fn>(negotiate_symbol);
  auto init = reinterpret_cast<rill_plugin_init_fn>(init_symbol);

  const uint32_t version = negotiate(RILL_BACKEND_ABI_MIN_VERSION, RILL_BACKEND_ABI_VERSION);
  const std::string offered =
      "[" + std::to_string(RILL_BACKEND_ABI_MIN_VERSION) + ", " + std::to_string(RILL_BACKEND_ABI_VERSION) + "]";
  if (version == 0) return close_with("refused the interface versions " + offered + " this runtime offers");
  if (version < RILL_BACKEND_ABI_MIN_VERSION || version > RILL_BACKEND_ABI_VERSION) {
    return close_with("answered interface version " + std::to_string(version) + ", outside the offered range " +
                      offered);
  }
  plugin->backend.abi_version = version;
  plugin->host = make_host_services(version);

  const rill_backend* table = nullptr;
  clear_backend_message();
  const rill_status status = init(version, &plugin->host, &table);
  if (status != RILL_OK) return close_with("rill_plugin_init failed: " + backend_message(status));
  std::string why;
  if (!table_is_valid(table, name, version, why)) return close_with(why);
  plugin->backend.table = table;
  return plugin;
}

}  // namespace

const Backend* load_plugin(const std::string& name, const std::string& plugin_dir, std::string& reason) {
  const std::string file = "librill-" + name + ".so";
  std::string searched;
  for (const Candidate& folder : search_folders(plugin_dir)) {
    const std::string path = folder.folder + "/" + file;
    if (!is_file(path)) {
      searched += (searched.empty() ? "" : ", ") + folder.folder + " (" + folder.via + ")";
      continue;
    }
    const std::string key = resolved(path);
    std::lock_guard<std::mutex> lock(g_plugins_mutex);
    auto found = g_plugins.find(key);
    if (found != g_plugins.end()) return &found->second->backend;
    std::unique_ptr<LoadedPlugin> plugin = open_plugin(name, path, reason);
    if (plugin == nullptr) return nullptr;
    log_message(RILL_LOG_DEBUG, "loaded " + path + " (backend interface version " +
                                    std::to_string(plugin->backend.abi_version) + ")");
    const Backend* backend = &plugin->backend;
    g_plugins.emplace(key, std::move(plugin));
    return backend;
  }
  reason = file + " not found; searched: " + (searched.empty() ? std::string("no folders") : searched);
  return nullptr;
}

}  // namespace rill
