// Loading backend plugins: every way a plugin can fail gives
// RILL_ERROR_BACKEND_UNAVAILABLE with its reason; a working plugin is found
// through plugin_dir and RILL_PLUGIN_PATH; absent ops are RILL_ERROR_UNSUPPORTED
// and failing ops RILL_ERROR_BACKEND. The plugins are built from
// fake_plugins/fake_backend.c into RILL_FAKE_PLUGIN_DIR.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "rill.h"
#include "test_helpers.h"

// Under AddressSanitizer a huge allocation aborts by default; these tests need
// it to fail the ordinary way, returning NULL, to reach RILL_ERROR_OUT_OF_MEMORY.
#ifndef _WIN32
extern "C" __attribute__((visibility("default"), used)) const char* __asan_default_options();
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace {

using rill_test::expect_failure;

// A plugin's file name, and where the loader looks for it, as this system spells them.
std::string plugin_file(const std::string& name) { return RILL_FAKE_PLUGIN_PREFIX + name + RILL_FAKE_PLUGIN_SUFFIX; }
#ifdef _WIN32
const std::string kFolderSeparator = "\\", kListSeparator = ";";
#else
const std::string kFolderSeparator = "/", kListSeparator = ":";
#endif
const std::string kPluginDir = RILL_FAKE_PLUGIN_DIR;

std::string config_for(const std::string& backend, const std::string& plugin_dir = RILL_FAKE_PLUGIN_DIR) {
  std::string text = "[runtime]\nbackend = \"" + backend + "\"\n";
  // A TOML literal string: Windows paths hold backslashes.
  if (!plugin_dir.empty()) text += "plugin_dir = '" + plugin_dir + "'\n";
  return text;
}

// Creating a context on backend must fail as unavailable with every part in the message.
void expect_unavailable(const std::string& backend, std::initializer_list<std::string> parts) {
  CAPTURE(backend);
  rill_context* ctx = nullptr;
  const rill_status status = rill_context_create(config_for(backend).c_str(), &ctx);
  CHECK_MESSAGE(status == RILL_ERROR_BACKEND_UNAVAILABLE, rill_status_string(status), ": ", rill_last_error());
  CHECK(ctx == nullptr);
  const std::string message = rill_last_error();
  CHECK_MESSAGE(message.find("backend '" + backend + "' is unavailable") != std::string::npos, message);
  rill_test::expect_message_has(message, parts);
}

// A context on a fake plugin (fakehost by default).
struct FakeContext : rill_test::ScopedContext {
  explicit FakeContext(const std::string& config = config_for("fakehost")) : ScopedContext(config) {}
};

}  // namespace

TEST_CASE("plugin not found: the message lists the folders searched") {
  expect_unavailable("absent", {plugin_file("absent") + " not found", kPluginDir + " (plugin_dir)", "beside librill"});
}

TEST_CASE("a file that is not a shared object") {
  // The reason after the path is the dynamic loader's own ("invalid ELF header" with glibc).
  expect_unavailable("notelf", {"cannot load " + kPluginDir + kFolderSeparator + plugin_file("notelf") + ": "});
}

TEST_CASE("a plugin whose dependency is missing reports the dynamic loader's text") {
#ifdef _WIN32
  // Windows does not name the missing DLL; the loader says what kind of failure it is.
  expect_unavailable("missingdep", {plugin_file("missingdep"), "(error 126)", "a DLL it depends on was not found"});
#else
  expect_unavailable("missingdep",
                     {"librill-missingdep.so", "librill_fake_dependency.so", "cannot open shared object file"});
#endif
}

TEST_CASE("a plugin without its init symbol") {
  expect_unavailable("nosymbol", {"no rill_plugin_init symbol"});
}

TEST_CASE("ABI negotiation: refused, or answered outside the offer") {
  expect_unavailable("refuses", {"refused the interface versions"});
  expect_unavailable("outofrange", {"outside the offered range"});
}

TEST_CASE("init failing passes the plugin's reason on") {
  expect_unavailable("initfails", {"rill_plugin_init failed", "driver version 0.0 is older"});
}

TEST_CASE("device enumeration: failing, zero devices, a device that cannot be described") {
  expect_unavailable("nodriver", {"libfakedriver.so.1"});
  expect_unavailable("nodevices", {"no device found"});
  expect_unavailable("nodescribe", {"cannot describe device 0", "fake: device query timed out"});
}

TEST_CASE("backend tables that do not fit") {
  expect_unavailable("notable", {"returned no backend table"});
  expect_unavailable("smalltable", {"struct_size", "needs at least"});
  expect_unavailable("misnamed", {"names it \"someone_else\"", "expected \"misnamed\""});
}

TEST_CASE("a working plugin: found by plugin_dir, runs its op") {
  FakeContext context;
  CHECK(std::string(rill_context_backend_name(context.ctx)) == "fakehost");
  CHECK(std::string(rill_context_device_name(context.ctx)) == "fake host device");
  CHECK(std::string(rill_context_selection_report(context.ctx)) == "fakehost: chosen");
  rill_tensor* r = context.tensor({2, 3});
  rill_tensor* u = context.tensor({2, 3});
  rill_tensor* g = context.tensor({3});
  const std::vector<float> rv = {1, 2, 3, 4, 5, 6}, uv = {10, 20, 30, 40, 50, 60}, gv = {1, 0, -1};
  REQUIRE(rill_tensor_write_f32(r, rv.data(), 6) == RILL_OK);
  REQUIRE(rill_tensor_write_f32(u, uv.data(), 6) == RILL_OK);
  REQUIRE(rill_tensor_write_f32(g, gv.data(), 3) == RILL_OK);
  REQUIRE(rill_residual_add(context.ctx, r, u, g, 2.0f, 0.5f) == RILL_OK);
  REQUIRE(rill_context_synchronize(context.ctx) == RILL_OK);
  std::vector<float> out(6);
  REQUIRE(rill_tensor_read_f32(r, out.data(), 6) == RILL_OK);
  for (size_t i = 0; i < 6; ++i) CHECK(out[i] == 2.0f * rv[i] + 0.5f * gv[i % 3] * uv[i]);
  for (rill_tensor* t : {r, u, g}) rill_tensor_destroy(t);
}

TEST_CASE("a version 3 plugin receives the keys of its [backend.<name>] table, typed") {
  // fakeopts names in its device name the options it received, in the order
  // received (toml++ keeps a table's keys sorted).
  FakeContext context(config_for("fakeopts") +
                      "[backend.fakeopts]\ndevice = 0\nqueue_depth = 4\nlabel = \"left eye\"\nscale = 0.5\n"
                      "verbose = true\n");
  CHECK(std::string(rill_context_device_name(context.ctx)) ==
        "fake host device (label=\"left eye\", queue_depth=4, scale=0.5, verbose=true)");
}

TEST_CASE("a version 3 plugin's refusal names the key and its line:column, whichever backend is chosen") {
  struct Refused {
    const char* table;  // the [backend.fakeopts] keys
    const char* at;     // the key the position must point at
    const char* says;   // what the plugin's message must say
  };
  for (const Refused& r : {Refused{"queue_depth = 4\ndepth = 2\n", "depth = 2", "unknown key 'depth'"},
                           Refused{"label = 3\n", "label", "'label': expected a string"},
                           Refused{"scale = 1\n", "scale", "'scale': expected a float"},
                           Refused{"verbose = \"yes\"\n", "verbose", "'verbose': expected true or false"},
                           Refused{"queue_depth = 65\n", "queue_depth", "'queue_depth': expected 1 to 64, got 65"}}) {
    // The CPU backend is the one chosen: the plugin checks its table all the same.
    const std::string text = config_for("cpu") + "[backend.fakeopts]\n" + r.table;
    CAPTURE(text);
    rill_context* ctx = nullptr;
    CHECK(rill_context_create(text.c_str(), &ctx) == RILL_ERROR_CONFIG);
    CHECK(ctx == nullptr);
    const size_t at = text.find(r.at);
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + at, '\n'));
    rill_test::expect_message_has(rill_last_error(),
                                  {"config:" + std::to_string(line) + ":1: backend.fakeopts: fake: " + r.says});
  }
}

TEST_CASE("a version 1 plugin: the runtime fills threads and allow_tf32 and refuses other keys") {
  {
    FakeContext context(config_for("fakehost") + "[backend.fakehost]\nthreads = 3\ntf32 = true\n");
    CHECK(std::string(rill_context_device_name(context.ctx)) == "fake host device (threads=3, allow_tf32=1)");
  }
  rill_context* ctx = nullptr;
  const std::string text = config_for("fakehost") + "[backend.fakehost]\nqueue_depth = 4\n";
  CHECK(rill_context_create(text.c_str(), &ctx) == RILL_ERROR_CONFIG);
  rill_test::expect_message_has(rill_last_error(), {"config:5:1: backend.fakehost: unknown key 'queue_depth'",
                                                    "(interface version 1) takes: device, threads, tf32"});
  const std::string wrong = config_for("fakehost") + "[backend.fakehost]\nthreads = -1\n";
  CHECK(rill_context_create(wrong.c_str(), &ctx) == RILL_ERROR_CONFIG);
  rill_test::expect_message_has(rill_last_error(), {"config:5:1: backend.fakehost: 'threads': expected an integer"});
}

TEST_CASE("found through RILL_PLUGIN_PATH when no plugin_dir is set") {
  // An empty entry between two separators is skipped.
  const std::string path = "/nonexistent/rill-plugins" + kListSeparator + kListSeparator + kPluginDir;
  rill_test::set_env("RILL_PLUGIN_PATH", path);
  {
    FakeContext context(config_for("fakehost", ""));
    CHECK(std::string(rill_context_backend_name(context.ctx)) == "fakehost");
  }
  rill_context* ctx = nullptr;
  CHECK(rill_context_create(config_for("absent", "").c_str(), &ctx) == RILL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(std::string(rill_last_error()).find("/nonexistent/rill-plugins (RILL_PLUGIN_PATH)") != std::string::npos);
  rill_test::unset_env("RILL_PLUGIN_PATH");
  CHECK(rill_context_create(config_for("fakehost", "").c_str(), &ctx) == RILL_ERROR_BACKEND_UNAVAILABLE);
}

TEST_CASE("UTF-8 paths: a plugin_dir and a config file whose names are not ASCII") {
  // Copies of the working plugin and a config in a folder named in three
  // scripts; on Windows the loader and the file APIs must get them as UTF-16.
  namespace fs = std::filesystem;
  const std::string folder_utf8 = kPluginDir + kFolderSeparator + "utf8-\xC3\xB1-\xE6\x97\xA5\xE6\x9C\xAC-\xD0\xB6";
  const fs::path folder = fs::u8path(folder_utf8);
  fs::remove_all(folder);
  fs::create_directories(folder);
  fs::copy_file(fs::u8path(kPluginDir + kFolderSeparator + plugin_file("fakehost")), folder / plugin_file("fakehost"));
  {
    FakeContext context(config_for("fakehost", folder_utf8));
    CHECK(std::string(rill_context_backend_name(context.ctx)) == "fakehost");
  }
  const std::string config_utf8 = folder_utf8 + kFolderSeparator + "r\xC3\xA9glages.toml";
  {
    std::ofstream config(fs::u8path(config_utf8), std::ios::binary);
    // TOML literal strings ('...') keep Windows backslashes as they are.
    config << "[runtime]\nbackend = \"fakehost\"\nplugin_dir = '" << folder_utf8 << "'\n";
  }
  rill_context* ctx = nullptr;
  REQUIRE_MESSAGE(rill_context_create_from_file(config_utf8.c_str(), &ctx) == RILL_OK, rill_last_error());
  CHECK(std::string(rill_context_backend_name(ctx)) == "fakehost");
  rill_context_destroy(ctx);
  // The same name with one byte changed is not found, and the message keeps the UTF-8 name.
  const std::string missing = folder_utf8 + "-x";
  CHECK(rill_context_create(config_for("fakehost", missing).c_str(), &ctx) == RILL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(std::string(rill_last_error()).find(missing + " (plugin_dir)") != std::string::npos);
}

TEST_CASE("absent ops are RILL_ERROR_UNSUPPORTED; failing ops RILL_ERROR_BACKEND") {
  FakeContext context;
  rill_context* ctx = context.ctx;
  rill_tensor* x = context.tensor({2, 4});
  rill_tensor* r = context.tensor({2, 4});
  rill_tensor* w = context.tensor({4, 4});
  rill_tensor* out = context.tensor({2, 4});
  rill_tensor* h = context.tensor({2, 4}, RILL_DTYPE_F16);
  rill_tensor* h2 = context.tensor({2, 4}, RILL_DTYPE_F16);
  // layer_norm and the fused ops are NULL in the plugin's table.
  expect_failure(rill_layer_norm(ctx, x, nullptr, nullptr, 1e-5f, out), RILL_ERROR_UNSUPPORTED,
                 {"rill_layer_norm: the fakehost backend does not implement layer_norm"});
  expect_failure(rill_fused_add_rms_norm(ctx, x, r, nullptr, nullptr, 1e-6f, 1, 1), RILL_ERROR_UNSUPPORTED,
                 {"fused_add_rms_norm"});
  expect_failure(rill_fused_add_layer_norm(ctx, x, r, nullptr, nullptr, nullptr, 1e-6f, 1, 1), RILL_ERROR_UNSUPPORTED,
                 {"fused_add_layer_norm"});
  // gemm lies beyond the table's struct_size; calling it would abort the test.
  expect_failure(rill_gemm(ctx, x, w, nullptr, 1, 0, out), RILL_ERROR_UNSUPPORTED, {"does not implement gemm"});
  // rms_norm fails at run time with the plugin's message.
  expect_failure(rill_rms_norm(ctx, x, nullptr, 1e-6f, out), RILL_ERROR_BACKEND,
                 {"rill_rms_norm: fakehost backend: fake: simulated device loss"});
  // residual_add exists but refuses f16: the plugin's status and message come through.
  expect_failure(rill_residual_add(ctx, h, h2, nullptr, 1, 1), RILL_ERROR_UNSUPPORTED,
                 {"fake: residual_add supports f32 only"});
  // A tensor larger than memory: the plugin's allocation fails.
  const int64_t absurd[2] = {int64_t{1} << 30, int64_t{1} << 30};
  rill_tensor* none = nullptr;
  expect_failure(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, absurd, &none), RILL_ERROR_OUT_OF_MEMORY,
                 {"fakehost backend"});
  CHECK(none == nullptr);
  for (rill_tensor* t : {x, r, w, out, h, h2}) rill_tensor_destroy(t);
}

TEST_CASE("auto: skips what fails and a CPU implementation, and says why") {
  const std::string text = std::string("[runtime]\nprefer = [\"absent\", \"initfails\", \"cpuimpl\", \"fakehost\", \"cpu\"]\n"
                                       "plugin_dir = \"") + RILL_FAKE_PLUGIN_DIR + "\"\n";
  FakeContext context(text);
  CHECK(std::string(rill_context_backend_name(context.ctx)) == "fakehost");
  const std::string report = rill_context_selection_report(context.ctx);
  CAPTURE(report);
  CHECK(report.find("absent: skipped: " + plugin_file("absent") + " not found") == 0);
  CHECK(report.find("\ninitfails: skipped: ") != std::string::npos);
  CHECK(report.find("\ncpuimpl: skipped: device 0 'fake host device' is a CPU implementation") != std::string::npos);
  CHECK(report.find("\nfakehost: chosen") != std::string::npos);
  CHECK(report.find("cpu: chosen") == std::string::npos);
  // Asked for by name, the CPU implementation is used: the host chose it.
  FakeContext named(config_for("cpuimpl"));
  CHECK(std::string(rill_context_backend_name(named.ctx)) == "cpuimpl");
}

TEST_CASE("without a device in the config: discrete before integrated before virtual, a CPU implementation last") {
  FakeContext ranked(config_for("manydevices"));
  CHECK(std::string(rill_context_device_name(ranked.ctx)) == "fake discrete gpu A");
  // Named by index or by name, any device is opened, a CPU implementation
  // too, even in auto mode.
  const std::string dir = std::string("plugin_dir = \"") + RILL_FAKE_PLUGIN_DIR + "\"\n";
  FakeContext by_index("[runtime]\nbackend = \"manydevices\"\n" + dir + "[backend.manydevices]\ndevice = 3\n");
  CHECK(std::string(rill_context_device_name(by_index.ctx)) == "fake integrated gpu");
  FakeContext asked("[runtime]\nprefer = [\"manydevices\"]\n" + dir + "[backend.manydevices]\ndevice = \"CPU impl\"\n");
  CHECK(std::string(rill_context_device_name(asked.ctx)) == "fake cpu implementation");
}

TEST_CASE("auto: when nothing in prefer can be had, every reason is given") {
  rill_context* ctx = nullptr;
  const std::string text = std::string("[runtime]\nprefer = [\"nodevices\", \"refuses\"]\nplugin_dir = \"") +
                           RILL_FAKE_PLUGIN_DIR + "\"\n";
  CHECK(rill_context_create(text.c_str(), &ctx) == RILL_ERROR_BACKEND_UNAVAILABLE);
  const std::string message = rill_last_error();
  CHECK(message.find("nodevices: skipped: no device found") != std::string::npos);
  CHECK(message.find("refuses: skipped: ") != std::string::npos);
}

TEST_CASE("rill_info_report lists plugins the config names, with their state") {
  const std::string text = std::string("[runtime]\nprefer = [\"fakehost\", \"initfails\", \"cpuimpl\"]\nplugin_dir = \"") +
                           RILL_FAKE_PLUGIN_DIR + "\"\n";
  size_t size = 0;
  REQUIRE(rill_info_report(text.c_str(), nullptr, 0, &size) == RILL_OK);
  std::string report(size, '\0');
  REQUIRE(rill_info_report(text.c_str(), report.data(), report.size(), &size) == RILL_OK);
  CAPTURE(report);
  CHECK(report.find("  fakehost: available") != std::string::npos);
  CHECK(report.find("device 0: fake host device") != std::string::npos);
  CHECK(report.find("  initfails: unavailable: ") != std::string::npos);
  const size_t cpuimpl = report.find("  cpuimpl: available");
  REQUIRE(cpuimpl != std::string::npos);
  CHECK(report.find("type: CPU implementation", cpuimpl) != std::string::npos);
  CHECK(report.find("(backend \"auto\" skips it)", cpuimpl) != std::string::npos);
}
