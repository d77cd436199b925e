// A GPU backend's own [backend.<name>] keys, checked by the backend itself and
// reached through rill_context_create: an unknown key or a wrong type is
// RILL_ERROR_CONFIG naming the key and its line:column, also when another
// backend is the one chosen. Checking options needs no device, only the plugin:
// where librill-<name>.so cannot be loaded the test reports skipped (exit 77).
// Run with RILL_TEST_BACKEND=<name>; the CPU backend's keys are in config_test.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rill.h"
#include "test_helpers.h"

namespace {

std::string g_backend;

// The text of rill_info_report for the default config ("" if it fails).
// Called from main, outside any test case: no doctest assertions.
std::string info_report() {
  size_t size = 0;
  if (rill_info_report(nullptr, nullptr, 0, &size) != RILL_OK) return "";
  std::vector<char> text(size);
  if (rill_info_report(nullptr, text.data(), text.size(), &size) != RILL_OK) return "";
  return text.data();
}

// The CPU backend is chosen; g_backend's table holds keys.
std::string config_with(const std::string& keys) {
  return "[runtime]\nbackend = \"cpu\"\n[backend." + g_backend + "]\n" + keys;
}

void expect_refused(const std::string& keys, const std::string& says) {
  const std::string text = config_with(keys);
  CAPTURE(text);
  rill_context* ctx = nullptr;
  CHECK(rill_context_create(text.c_str(), &ctx) == RILL_ERROR_CONFIG);
  CHECK(ctx == nullptr);
  rill_test::expect_message_has(rill_last_error(), {"config:4:1: backend." + g_backend + ": ", says});
}

}  // namespace

TEST_CASE("an unknown key is refused with its line:column") {
  expect_refused("no_such_key = 1\n", "unknown key 'no_such_key'");
}

TEST_CASE("cuda: tf32 is a boolean") {
  expect_refused("tf32 = 1\n", "'tf32': expected true or false");
  rill_test::ScopedContext accepted(config_with("tf32 = true\n"));
  CHECK(std::string(rill_context_backend_name(accepted.ctx)) == "cpu");
}

TEST_CASE("vulkan: pipeline_cache is a non-empty path; version 2's threads and tf32 are refused") {
  expect_refused("threads = 2\n", "unknown key 'threads'; expected one of: device, pipeline_cache, queue_priority");
  expect_refused("tf32 = true\n", "unknown key 'tf32'; expected one of: device, pipeline_cache, queue_priority");
  expect_refused("pipeline_cache = 1\n", "'pipeline_cache': expected a string, got an integer");
  expect_refused("pipeline_cache = \"\"\n", "'pipeline_cache': expected the path of a file, got an empty string");
  rill_test::ScopedContext accepted(config_with("pipeline_cache = \"rill-vulkan.cache\"\n"));
  CHECK(std::string(rill_context_backend_name(accepted.ctx)) == "cpu");
}

TEST_CASE("vulkan: queue_priority is a float from 0.0 to 1.0") {
  expect_refused("queue_priority = -0.1\n", "'queue_priority': expected 0.0 to 1.0, got -0.1");
  expect_refused("queue_priority = 1.5\n", "'queue_priority': expected 0.0 to 1.0, got 1.5");
  expect_refused("queue_priority = nan\n", "'queue_priority': expected 0.0 to 1.0, got nan");
  expect_refused("queue_priority = \"high\"\n", "'queue_priority': expected a float, got a string");
  // TOML tells 1 from 1.0: an integer is refused, not converted.
  expect_refused("queue_priority = 1\n", "'queue_priority': expected a float, got an integer");
  for (const char* accepted_value : {"0.0", "0.5", "1.0"}) {
    rill_test::ScopedContext accepted(config_with(std::string("queue_priority = ") + accepted_value + "\n"));
    CHECK(std::string(rill_context_backend_name(accepted.ctx)) == "cpu");
  }
}

int main(int argc, char** argv) {
  const char* env = std::getenv("RILL_TEST_BACKEND");
  g_backend = env != nullptr && *env != '\0' ? env : "vulkan";
  const std::string report = info_report();
  if (report.empty()) {
    std::fprintf(stderr, "backend_options: rill_info_report failed: %s\n", rill_last_error());
    return 1;
  }
  const std::string line = "  " + g_backend + ": unavailable: ";
  const size_t at = report.find(line);
  if (at != std::string::npos && (report.compare(at + line.size(), 7, "librill") == 0 ||
                                  report.compare(at + line.size(), 11, "cannot load") == 0)) {
    std::printf("SKIPPED: %s", report.substr(at).c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  // Test cases named "<backend>: ..." apply to that backend alone.
  context.addFilter("test-case-exclude", g_backend == "cuda" ? "vulkan: *" : "cuda: *");
  return context.run();
}
