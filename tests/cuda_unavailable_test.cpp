// The CUDA backend on a machine without a usable GPU: asked for by name it is
// unavailable with a reason, "auto" skips it and records why, and nothing
// crashes. On a machine where a CUDA context can be created this test has
// nothing to check and reports skipped (77); the conformance suite covers that
// machine.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "rill.h"

namespace {

const char* const kCudaConfig = "[runtime]\nbackend = \"cuda\"\n";

std::string cuda_line(const std::string& report) {
  std::size_t start = 0;
  while (start < report.size()) {
    std::size_t end = report.find('\n', start);
    if (end == std::string::npos) end = report.size();
    const std::string line = report.substr(start, end - start);
    if (line.rfind("cuda: ", 0) == 0) return line;
    start = end + 1;
  }
  return "";
}

}  // namespace

TEST_CASE("backend = \"cuda\" is unavailable with a reason") {
  rill_context* ctx = nullptr;
  const rill_status status = rill_context_create(kCudaConfig, &ctx);
  CHECK(status == RILL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(ctx == nullptr);  // out-parameter untouched on failure
  const std::string reason = rill_last_error();
  INFO("reason: " << reason);
  CHECK(reason.find("cuda") != std::string::npos);
  // More than the backend's name: the CUDA error string or the loader's reason.
  CHECK(reason.size() > std::string("backend 'cuda' is unavailable: ").size() + 8);
}

TEST_CASE("every [backend.cuda] setting still gives unavailable, not a config error") {
  const char* const configs[] = {
      "[runtime]\nbackend = \"cuda\"\n[backend.cuda]\ndevice = 0\ntf32 = true\n",
      "[runtime]\nbackend = \"cuda\"\n[backend.cuda]\ndevice = 3\n",
  };
  for (const char* config : configs) {
    INFO("config: " << std::string(config));
    rill_context* ctx = nullptr;
    CHECK(rill_context_create(config, &ctx) == RILL_ERROR_BACKEND_UNAVAILABLE);
    CHECK(ctx == nullptr);
    INFO("reason: " << std::string(rill_last_error()));
    CHECK(std::string(rill_last_error()).find("cuda") != std::string::npos);
  }
}

TEST_CASE("\"auto\" skips cuda, records why, and runs on the CPU") {
  rill_context* ctx = nullptr;
  REQUIRE(rill_context_create("[runtime]\nbackend = \"auto\"\nprefer = [\"cuda\", \"cpu\"]\n", &ctx) == RILL_OK);
  REQUIRE(ctx != nullptr);
  CHECK(std::string(rill_context_backend_name(ctx)) == "cpu");
  const std::string report = rill_context_selection_report(ctx);
  INFO("selection report: " << report);
  const std::string line = cuda_line(report);
  const std::string prefix = "cuda: skipped: ";
  REQUIRE(line.rfind(prefix, 0) == 0);
  CHECK(line.size() > prefix.size());

  // The context the CPU took over works.
  const int64_t shape[2] = {2, 8};
  rill_tensor* x = nullptr;
  REQUIRE(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, shape, &x) == RILL_OK);
  std::vector<float> values(16, 2.0f);
  REQUIRE(rill_tensor_write_f32(x, values.data(), values.size()) == RILL_OK);
  REQUIRE(rill_rms_norm(ctx, x, nullptr, 0.0f, x) == RILL_OK);
  REQUIRE(rill_tensor_read_f32(x, values.data(), values.size()) == RILL_OK);
  for (float v : values) CHECK(v == doctest::Approx(1.0f));
  rill_tensor_destroy(x);
  rill_context_destroy(ctx);
}

TEST_CASE("rill_info_report lists cuda as unavailable with the reason") {
  size_t required = 0;
  REQUIRE(rill_info_report(nullptr, nullptr, 0, &required) == RILL_OK);
  std::vector<char> buf(required);
  REQUIRE(rill_info_report(nullptr, buf.data(), buf.size(), &required) == RILL_OK);
  const std::string report(buf.data());
  INFO("report: " << report);
  CHECK(report.find("cuda") != std::string::npos);
  CHECK(report.find("unavailable") != std::string::npos);
}

int main(int argc, char** argv) {
  rill_context* ctx = nullptr;
  if (rill_context_create(kCudaConfig, &ctx) == RILL_OK) {
    std::printf("skipped: a CUDA context could be created on %s; this test covers machines without a GPU\n",
                rill_context_device_name(ctx));
    rill_context_destroy(ctx);
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
