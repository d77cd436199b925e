#include "plugin_loader.h"

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <dlfcn.h>
#include <sys/stat.h>
#endif

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "host_services.h"
#include "logging.h"
#include "platform.h"

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

// The operating system's side of loading: file names, folders, and the dynamic
// loader (dlopen on POSIX, LoadLibrary on Windows).
#ifdef _WIN32

constexpr const char* kPluginPrefix = "rill-";
constexpr const char* kPluginSuffix = ".dll";
constexpr char kListSeparator = ';';
constexpr char kFolderSeparator = '\\';

std::string system_error_text(DWORD code) {
  wchar_t* text = nullptr;
  const DWORD length = FormatMessageW(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0,
      reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::string out = length > 0 ? platform::to_utf8(std::wstring(text, length)) : "no reason given";
  LocalFree(text);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.pop_back();
  out += " (error " + std::to_string(code) + ")";
  // Windows does not name the DLL that is missing; say at least that it is a
  // dependency, since the plugin itself was found.
  if (code == ERROR_MOD_NOT_FOUND) out += "; a DLL it depends on was not found";
  return out;
}

// The folder that holds rill.dll (or the program, when rill is linked statically).
std::string own_folder() {
  HMODULE module = nullptr;
  if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                          reinterpret_cast<LPCWSTR>(&rill_version_number), &module)) {
    return {};
  }
  std::wstring path(MAX_PATH, L'\0');
  for (;;) {
    const DWORD length = GetModuleFileNameW(module, path.data(), static_cast<DWORD>(path.size()));
    if (length == 0) return {};
    if (length < path.size()) {
      path.resize(length);
      break;
    }
    path.resize(path.size() * 2);
  }
  const std::string utf8 = platform::to_utf8(path);
  const size_t slash = utf8.find_last_of("\\/");
  return slash == std::string::npos ? std::string(".") : utf8.substr(0, slash);
}

bool is_file(const std::string& path) {
  const DWORD attributes = GetFileAttributesW(platform::to_wide(path).c_str());
  return attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY) == 0;
}

std::string resolved(const std::string& path) {
  const std::wstring wide = platform::to_wide(path);
  const DWORD length = GetFullPathNameW(wide.c_str(), 0, nullptr, nullptr);
  if (length == 0) return path;
  std::wstring full(length, L'\0');
  const DWORD written = GetFullPathNameW(wide.c_str(), length, full.data(), nullptr);
  if (written == 0 || written >= length) return path;
  full.resize(written);
  // Windows file names are case-insensitive: one key for every spelling.
  CharLowerBuffW(full.data(), static_cast<DWORD>(full.size()));
  return platform::to_utf8(full);
}

void* open_library(const std::string& path, std::string& error) {
  std::wstring wide = platform::to_wide(path);
  for (wchar_t& c : wide) {
    if (c == L'/') c = L'\\';
  }
  // The plugin's own folder is searched for the DLLs it depends on.
  HMODULE module = LoadLibraryExW(wide.c_str(), nullptr, LOAD_WITH_ALTERED_SEARCH_PATH);
  if (module == nullptr) error = system_error_text(GetLastError());
  return reinterpret_cast<void*>(module);
}

void* library_symbol(void* library, const char* symbol, std::string& error) {
  FARPROC address = GetProcAddress(reinterpret_cast<HMODULE>(library), symbol);
  if (address == nullptr) error = system_error_text(GetLastError());
  return reinterpret_cast<void*>(address);
}

void close_library(void* library) { FreeLibrary(reinterpret_cast<HMODULE>(library)); }

#else

constexpr const char* kPluginPrefix = "librill-";
constexpr const char* kPluginSuffix = ".so";
constexpr char kListSeparator = ':';
constexpr char kFolderSeparator = '/';

std::string dl_error_text() {
  const char* text = dlerror();
  return text != nullptr ? text : "no reason given";
}

// The folder that holds librill (or the program, when rill is linked statically).
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&rill_version_number), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string resolved(const std::string& path) {
  const std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  return real != nullptr ? std::string(real.get()) : path;
}

void* open_library(const std::string& path, std::string& error) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) error = dl_error_text();
  return handle;
}

void* library_symbol(void* library, const char* symbol, std::string& error) {
  dlerror();
  void* address = dlsym(library, symbol);
  if (address == nullptr) error = dl_error_text();
  return address;
}

void close_library(void* library) { dlclose(library); }

#endif

std::vector<Candidate> search_folders(const std::string& plugin_dir) {
  std::vector<Candidate> folders;
  if (!plugin_dir.empty()) folders.push_back({plugin_dir, "plugin_dir"});
  if (const char* env = std::getenv("RILL_PLUGIN_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(kListSeparator, start);
      if (end == std::string::npos) end = list.size();
      if (end > start) folders.push_back({list.substr(start, end - start), "RILL_PLUGIN_PATH"});
      start = end + 1;
    }
  }
  const std::string own = own_folder();
  if (!own.empty()) folders.push_back({own, "beside librill"});
  return folders;
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

// Loads the library at path and brings the plugin up. Returns nullptr with
// reason on failure.
std::unique_ptr<LoadedPlugin> open_plugin(const std::string& name, const std::string& path, std::string& reason) {
  std::string error;
  void* handle = open_library(path, error);
  if (handle == nullptr) {
    reason = "cannot load " + path + ": " + error;
    return nullptr;
  }
  auto plugin = std::make_unique<LoadedPlugin>();
  plugin->handle = handle;
  plugin->backend.name = name;
  plugin->backend.origin = path;
  auto close_with = [&](const std::string& why) {
    reason = path + ": " + why;
    close_library(handle);
    return nullptr;
  };
  void* negotiate_symbol = library_symbol(handle, RILL_PLUGIN_NEGOTIATE_SYMBOL, error);
  if (negotiate_symbol == nullptr) return close_with("no " RILL_PLUGIN_NEGOTIATE_SYMBOL " symbol: " + error);
  void* init_symbol = library_symbol(handle, RILL_PLUGIN_INIT_SYMBOL, error);
  if (init_symbol == nullptr) return close_with("no " RILL_PLUGIN_INIT_SYMBOL " symbol: " + error);
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
  const std::string file = kPluginPrefix + name + kPluginSuffix;
  std::string searched;
  for (const Candidate& folder : search_folders(plugin_dir)) {
    const std::string path = folder.folder + kFolderSeparator + file;
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
