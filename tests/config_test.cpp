// The TOML config: defaults, every key accepted, and each kind of error
// (unknown key, wrong type, bad value, syntax) reported as RILL_ERROR_CONFIG
// with the key and its line:column; the runtime's one device matcher. The keys
// a backend checks itself are tested here on the CPU backend, on plugins in
// plugin_loader_test and on each GPU backend in backend_options_test.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <unistd.h>

#include "rill.h"

namespace {

// "line:column" (1-based) of the first occurrence of needle in text, computed
// from the text itself so that the expectation does not depend on the parser.
std::string position_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  size_t line = 1, column = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

// Creates a context from text, expecting RILL_ERROR_CONFIG with a message that
// names key and the position of at (the first occurrence of that text).
void expect_config_error(const std::string& text, const std::string& key, const std::string& at) {
  CAPTURE(text);
  rill_context* ctx = nullptr;
  const rill_status status = rill_context_create(text.c_str(), &ctx);
  CHECK_MESSAGE(status == RILL_ERROR_CONFIG, rill_status_string(status), ": ", rill_last_error());
  CHECK(ctx == nullptr);
  const std::string message = rill_last_error();
  CHECK_MESSAGE(message.find(key) != std::string::npos, "key '", key, "' missing from: ", message);
  const std::string where = ":" + position_of(text, at) + ":";
  CHECK_MESSAGE(message.find(where) != std::string::npos, "position ", where, " missing from: ", message);
}

// A config that must be refused: the text, the key the message names and the
// text whose position it gives.
struct ConfigError {
  const char* text;
  const char* key;
  const char* at;
};

void expect_config_errors(std::initializer_list<ConfigError> cases) {
  for (const ConfigError& c : cases) expect_config_error(c.text, c.key, c.at);
}

std::string create_backend(const char* text) {
  rill_context* ctx = nullptr;
  const rill_status status = rill_context_create(text, &ctx);
  REQUIRE_MESSAGE(status == RILL_OK, rill_status_string(status), ": ", rill_last_error());
  std::string name = rill_context_backend_name(ctx);
  rill_context_destroy(ctx);
  return name;
}

}  // namespace

TEST_CASE("defaults: NULL, empty and comment-only configs create a context") {
  CHECK(!create_backend(nullptr).empty());
  CHECK(!create_backend("").empty());
  CHECK(!create_backend("# nothing but a comment\n\n").empty());
}

TEST_CASE("every documented key is accepted") {
  const char* text =
      "[runtime]\n"
      "backend = \"cpu\"\n"
      "prefer = [\"cuda\", \"vulkan\", \"cpu\"]\n"
      "plugin_dir = \"/opt/game/rill\"\n"
      "[backend.cpu]\n"
      "threads = 1\n"
      "[backend.cuda]\n"
      "device = 0\n"
      "tf32 = true\n"
      "[backend.vulkan]\n"
      "device = \"Radeon\"\n";
  CHECK(create_backend(text) == "cpu");
  CHECK(create_backend("[backend.vulkan]\ndevice = 3\n[runtime]\nbackend = \"cpu\"\n") == "cpu");
  // `device` may name a device on every backend; it is matched only when that backend is tried.
  CHECK(create_backend("[runtime]\nbackend = \"cpu\"\n[backend.cuda]\ndevice = \"H200\"\n") == "cpu");
  CHECK(create_backend("runtime.backend = \"auto\"\nruntime.prefer = [\"cpu\"]\n") == "cpu");
}

TEST_CASE("unknown keys and tables") {
  expect_config_errors({
      {"bogus = 1\n", "bogus", "bogus"},
      {"[runtime]\nbackend = \"cpu\"\nbakend = \"cpu\"\n", "runtime.bakend", "bakend"},
      {"[backend.cpu]\nthreads = 2\nthread_count = 2\n", "backend.cpu: unknown key 'thread_count'", "thread_count"},
      {"[runtime]\nbackend = \"cpu\"\n[backend.cpu]\n  device = 0\n  affinity = \"compact\"\n",
       "backend.cpu: unknown key 'affinity'", "affinity"},
      {"[backend.Vulkan]\ndevice = 0\n", "backend.Vulkan", "Vulkan"},
  });
}

TEST_CASE("wrong types") {
  expect_config_errors({
      {"runtime = 3\n", "runtime", "3"},
      {"[runtime]\nbackend = 1\n", "runtime.backend", "1"},
      {"[runtime]\nprefer = \"cpu\"\n", "runtime.prefer", "\"cpu\""},
      {"[runtime]\nprefer = [\"cpu\", 2]\n", "runtime.prefer", "2"},
      {"[runtime]\nplugin_dir = false\n", "runtime.plugin_dir", "false"},
      {"backend = \"cpu\"\n", "backend", "\"cpu\""},
      {"[backend]\ncpu = 3\n", "'backend.cpu' must be a table, got an integer", "3"},
      {"[backend.cpu]\nthreads = \"four\"\n", "backend.cpu: 'threads': expected an integer, got a string", "threads"},
      {"[backend.cpu]\nthreads = 1.5\n", "backend.cpu: 'threads': expected an integer, got a float", "threads"},
      {"[backend.vulkan]\ndevice = [0]\n", "backend.vulkan.device", "[0]"},
      {"[backend.cuda]\ndevice = 1.0\n", "backend.cuda.device", "1.0"},
      // Backend options are scalars: the runtime refuses the rest for any backend.
      {"[backend.cpu]\nthreads = [1, 2]\n", "backend.cpu.threads", "[1, 2]"},
      {"[backend.acme]\nqueues = { compute = 2 }\n", "backend.acme.queues", "{"},
  });
}

TEST_CASE("bad values") {
  expect_config_errors({
      {"[runtime]\nbackend = \"Vulkan\"\n", "runtime.backend", "\"Vulkan\""},
      {"[runtime]\nbackend = \"\"\n", "runtime.backend", "\"\""},
      {"[runtime]\nbackend = \"../evil\"\n", "runtime.backend", "\"../evil\""},
      {"[runtime]\nprefer = []\n", "runtime.prefer", "[]"},
      {"[runtime]\nprefer = [\"cpu\", \"auto\"]\n", "runtime.prefer", "\"auto\""},
      {"[runtime]\nprefer = [\"cpu\", \"cuda\", \"cpu\"]\n", "runtime.prefer", "\"cpu\"]"},
      {"[runtime]\nplugin_dir = \"\"\n", "runtime.plugin_dir", "\"\""},
      {"[backend.cpu]\nthreads = -1\n", "backend.cpu: 'threads': expected 0 to 1024, got -1", "threads"},
      {"[backend.cpu]\nthreads = 1025\n", "backend.cpu: 'threads': expected 0 to 1024, got 1025", "threads"},
      {"[backend.cpu]\nthreads = 100000000\n", "backend.cpu: 'threads': expected 0 to 1024, got 100000000", "threads"},
      {"[backend.cuda]\ndevice = -2\n", "backend.cuda.device", "-2"},
      {"[backend.vulkan]\ndevice = \"\"\n", "backend.vulkan.device", "\"\""},
  });
}

TEST_CASE("syntax errors carry line:column") {
  for (const char* text : {"[runtime\nbackend = \"cpu\"\n", "[runtime]\nbackend = \n", "[runtime]\nbackend = \"cpu\n",
                           "[runtime]\nbackend = \"cpu\"\nbackend = \"cpu\"\n"}) {
    CAPTURE(text);
    rill_context* ctx = nullptr;
    CHECK(rill_context_create(text, &ctx) == RILL_ERROR_CONFIG);
    const std::string message = rill_last_error();
    CHECK_MESSAGE(message.find("TOML syntax error") != std::string::npos, message);
    // "config:<line>:<column>: ": digits on both sides of the colon.
    const size_t at = message.find("config:");
    REQUIRE(at != std::string::npos);
    int line = 0, column = 0;
    CHECK(std::sscanf(message.c_str() + at, "config:%d:%d:", &line, &column) == 2);
    CHECK(line >= 1);
    CHECK(line <= 3);
    CHECK(column >= 1);
  }
}

TEST_CASE("a plugin name is accepted and looked up, not rejected as config") {
  rill_context* ctx = nullptr;
  CHECK(rill_context_create("[runtime]\nbackend = \"acme_npu2\"\n", &ctx) == RILL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(std::string(rill_last_error()).find("librill-acme_npu2.so not found") != std::string::npos);
  CHECK(rill_context_create("[runtime]\nprefer = [\"acme_npu2\"]\n", &ctx) == RILL_ERROR_BACKEND_UNAVAILABLE);
  const std::string message = rill_last_error();
  CHECK_MESSAGE(message.find("acme_npu2: skipped: ") != std::string::npos, message);
  CHECK(ctx == nullptr);
}

TEST_CASE("config files: errors name the file") {
  std::string pattern = (std::filesystem::temp_directory_path() / "rill_config_test_XXXXXX").string();
  char* path = pattern.data();
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string text = "[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = -4\n";
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  rill_context* ctx = nullptr;
  CHECK(rill_context_create_from_file(path, &ctx) == RILL_ERROR_CONFIG);
  const std::string message = rill_last_error();
  CHECK_MESSAGE(message.find(std::string(path) + ":" + position_of(text, "threads")) != std::string::npos, message);
  CHECK(message.find("backend.cpu: 'threads'") != std::string::npos);
  std::FILE* file = std::fopen(path, "w");
  REQUIRE(file != nullptr);
  std::fputs("[runtime]\nbackend = \"cpu\"\n", file);
  std::fclose(file);
  REQUIRE(rill_context_create_from_file(path, &ctx) == RILL_OK);
  CHECK(std::string(rill_context_backend_name(ctx)) == "cpu");
  rill_context_destroy(ctx);
  std::remove(path);
}

TEST_CASE("[backend.<name>] is accepted for any backend name; one that cannot be loaded is not checked") {
  CHECK(create_backend("[runtime]\nbackend = \"cpu\"\n\n[backend.tpu]\ncores = 4\n") == "cpu");
  CHECK(create_backend("[runtime]\nbackend = \"cpu\"\n[backend.acme_npu2]\ndevice = \"npu\"\nfirmware = \"x.bin\"\n") ==
        "cpu");
}

TEST_CASE("device: by index or by any part of the name in any case; a miss lists the devices") {
  // The CPU backend's one device is named "x86-64 CPU, <n> threads, <isa>".
  CHECK(create_backend("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\ndevice = 0\n") == "cpu");
  CHECK(create_backend("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\ndevice = \"x86-64\"\n") == "cpu");
  CHECK(create_backend("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\ndevice = \"X86-64 cpu\"\n") == "cpu");
  for (const char* device : {"\"radeon\"", "1"}) {
    const std::string text = std::string("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\ndevice = ") + device + "\n";
    CAPTURE(text);
    rill_context* ctx = nullptr;
    CHECK(rill_context_create(text.c_str(), &ctx) == RILL_ERROR_BACKEND_UNAVAILABLE);
    CHECK(ctx == nullptr);
    const std::string message = rill_last_error();
    const std::string asked = device[0] == '"' ? "no device whose name contains 'radeon'" : "no device 1";
    CHECK_MESSAGE(message.find(asked + " (config:" + position_of(text, device) + "); devices: 0 'x86-64 CPU") !=
                      std::string::npos,
                  message);
  }
}

TEST_CASE("the CPU backend reads threads from its table") {
  for (const char* threads : {"1", "3"}) {
    const std::string text = std::string("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = ") + threads + "\n";
    rill_context* ctx = nullptr;
    REQUIRE_MESSAGE(rill_context_create(text.c_str(), &ctx) == RILL_OK, rill_last_error());
    // The device name counts the context's threads: "x86-64 CPU, 3 threads, AVX2".
    const std::string expected = std::string(", ") + threads + (threads[0] == '1' ? " thread," : " threads,");
    CHECK_MESSAGE(std::string(rill_context_device_name(ctx)).find(expected) != std::string::npos,
                  rill_context_device_name(ctx));
    rill_context_destroy(ctx);
  }
}
