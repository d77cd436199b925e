// Checks and factories shared by the tests of the C API (rill.h): a failed
// call's status and message, tensors that must be created, and model
// descriptors with the usual sizes set.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "rill.h"

namespace rill_test {

inline const char* const kCpuConfig = "[runtime]\nbackend = \"cpu\"\n";

// True in a build under AddressSanitizer (GCC's and clang's spellings).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// Checks that message holds every part. Parts are std::string so that a
// missing one is printed as text: doctest prints a bare const char* as an address.
inline void expect_message_has(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& part : parts) {
    CHECK_MESSAGE(message.find(part) != std::string::npos, "'", part, "' missing from: ", message);
  }
}

// Checks that the last call failed with status expected and that its message
// (rill_last_error) holds every part.
inline void expect_failure(rill_status got, rill_status expected, const std::vector<std::string>& parts) {
  CHECK_MESSAGE(got == expected, "got ", rill_status_string(got), ", expected ", rill_status_string(expected),
                "; message: ", rill_last_error());
  expect_message_has(rill_last_error(), parts);
}

// A tensor of the given shape and dtype on ctx; creating it must succeed.
inline rill_tensor* create_tensor(rill_context* ctx, const std::vector<int64_t>& shape,
                                  rill_dtype dtype = RILL_DTYPE_F32) {
  rill_tensor* t = nullptr;
  REQUIRE_MESSAGE(rill_tensor_create(ctx, dtype, static_cast<int32_t>(shape.size()), shape.data(), &t) == RILL_OK,
                  rill_last_error());
  return t;
}

// A context created from config (which must succeed), destroyed with this object.
struct ScopedContext {
  rill_context* ctx = nullptr;
  explicit ScopedContext(const std::string& config = kCpuConfig) {
    REQUIRE_MESSAGE(rill_context_create(config.c_str(), &ctx) == RILL_OK, rill_last_error());
  }
  ~ScopedContext() { rill_context_destroy(ctx); }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

  // A new tensor on this context; the caller destroys it.
  rill_tensor* tensor(std::initializer_list<int64_t> shape, rill_dtype dtype = RILL_DTYPE_F32) {
    return create_tensor(ctx, shape, dtype);
  }
};

// A descriptor with rill_model_desc_init's defaults and these sizes.
inline rill_model_desc model_desc(int32_t num_layers, int32_t hidden_size, int32_t num_heads,
                                  int32_t intermediate_size) {
  rill_model_desc d;
  rill_model_desc_init(&d);
  d.num_layers = num_layers;
  d.hidden_size = hidden_size;
  d.num_heads = num_heads;
  d.intermediate_size = intermediate_size;
  return d;
}

// Sets or removes an environment variable of this process (what rill's
// std::getenv then sees), on POSIX and Windows alike.
inline void set_env(const char* name, const std::string& value) {
#ifdef _WIN32
  REQUIRE(_putenv_s(name, value.c_str()) == 0);
#else
  REQUIRE(setenv(name, value.c_str(), 1) == 0);
#endif
}
inline void unset_env(const char* name) {
#ifdef _WIN32
  REQUIRE(_putenv_s(name, "") == 0);  // an empty value removes it on Windows
#else
  REQUIRE(unsetenv(name) == 0);
#endif
}

// A scratch file's path: TMPDIR (or /tmp), then the test's prefix and the name.
inline std::string scratch_path(const std::string& prefix, const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + prefix + name;
}

// Writes text (or any bytes) as the whole content of the file at path.
inline void write_text_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(text.data(), 1, text.size(), f) == text.size());
  std::fclose(f);
}

}  // namespace rill_test
