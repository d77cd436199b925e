// Weights shared between contexts (rill_lm_create_shared) on the backend
// RILL_TEST_BACKEND names (default cpu; exits 77 when it is unavailable): the
// memory is not held twice, the logits equal those of the source and of an
// unshared load, the models and contexts may go in either order, two threads
// may run the two contexts at once, and mismatched contexts are refused.
//
// Memory is measured from outside the code under test: on Vulkan from the
// plugin's "new memory block of N bytes" log lines (a buffer above half a
// 64 MiB block gets a block of its own, so the model's 34 MiB embedding table
// shows), on the CPU from glibc's mallinfo2. An unshared second load is the
// control that shows each measure sees a copy.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "rill.h"
#include "safetensors_file.h"
#include "test_helpers.h"

using rill_test::expect_failure;

namespace {

// One-layer Llamas with tied embeddings: the large one's table, vocab x
// hidden f32, is above half of the Vulkan plugin's 64 MiB memory block (for
// the memory measure); the small one keeps the other cases quick on lavapipe.
constexpr int kLargeVocab = 135168, kSmallVocab = 512, kHidden = 64;
constexpr uint64_t kTableBytes = uint64_t{kLargeVocab} * kHidden * 4;

std::string backend_name() {
  const char* env = std::getenv("RILL_TEST_BACKEND");
  return env != nullptr && *env != '\0' ? env : "cpu";
}

std::string config_for(const std::string& backend) { return "[runtime]\nbackend = \"" + backend + "\"\n"; }

std::string write_folder(int vocab) {
    const std::string path = rill_test::scratch_path("rill_lm_share_test_", "tied" + std::to_string(vocab));
    ::mkdir(path.c_str(), 0755);
    rill_test::write_text_file(
        path + "/config.json",
        R"({"model_type": "llama", "vocab_size": )" + std::to_string(vocab) + R"(, "hidden_size": )" +
            std::to_string(kHidden) + R"(, "intermediate_size": 128, "num_hidden_layers": 1,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
            "rms_norm_eps": 1e-5, "tie_word_embeddings": true, "torch_dtype": "float32"})");
    const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
        {"model.embed_tokens.weight", {vocab, kHidden}},
        {"model.layers.0.self_attn.q_proj.weight", {kHidden, kHidden}},
        {"model.layers.0.self_attn.k_proj.weight", {kHidden / 2, kHidden}},
        {"model.layers.0.self_attn.v_proj.weight", {kHidden / 2, kHidden}},
        {"model.layers.0.self_attn.o_proj.weight", {kHidden, kHidden}},
        {"model.layers.0.mlp.gate_proj.weight", {128, kHidden}},
        {"model.layers.0.mlp.up_proj.weight", {128, kHidden}},
        {"model.layers.0.mlp.down_proj.weight", {kHidden, 128}},
        {"model.layers.0.input_layernorm.weight", {kHidden}},
        {"model.layers.0.post_attention_layernorm.weight", {kHidden}},
        {"model.norm.weight", {kHidden}},
    };
    rill_test::write_text_file(path + "/model.safetensors",
                               rill_test::f32_safetensors(rill_test::random_f32_tensors(shapes, 2024, 0.2f)));
    return path;
}

const std::string& large_folder() {
  static const std::string folder = write_folder(kLargeVocab);
  return folder;
}

const std::string& small_folder() {
  static const std::string folder = write_folder(kSmallVocab);
  return folder;
}

// Device or heap bytes allocated since the last reset, seen from outside rill.
struct MemoryMeter {
  bool vulkan = backend_name() == "vulkan";
  uint64_t vulkan_block_bytes = 0;

  MemoryMeter() { REQUIRE(rill_set_log_callback(&MemoryMeter::on_log, this, RILL_LOG_DEBUG) == RILL_OK); }
  ~MemoryMeter() { rill_set_log_callback(nullptr, nullptr, RILL_LOG_WARNING); }
  MemoryMeter(const MemoryMeter&) = delete;
  MemoryMeter& operator=(const MemoryMeter&) = delete;

  static void on_log(rill_log_level, const char* message, void* self) {
    unsigned long long bytes = 0;
    const char* line = std::strstr(message, "new memory block of ");
    if (line != nullptr && std::sscanf(line, "new memory block of %llu bytes", &bytes) == 1) {
      static_cast<MemoryMeter*>(self)->vulkan_block_bytes += bytes;
    }
  }

  // Bytes in use now: device memory blocks made so far on Vulkan, the heap on the CPU.
  uint64_t now() const {
    if (vulkan) return vulkan_block_bytes;
#if defined(__GLIBC__)
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
  }
};

struct Context {
  rill_context* ctx = nullptr;
  explicit Context(const std::string& backend = backend_name()) {
    const rill_status status = rill_context_create(config_for(backend).c_str(), &ctx);
    if (status == RILL_ERROR_BACKEND_UNAVAILABLE) {
      std::printf("skipped: backend %s unavailable: %s\n", backend.c_str(), rill_last_error());
      std::exit(77);
    }
    REQUIRE_MESSAGE(status == RILL_OK, rill_last_error());
  }
  ~Context() { rill_context_destroy(ctx); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

// copy_weights: 1 to copy the tensors the CPU backend would read in place
// from the file's map, so that a load allocates what the meter can see.
rill_lm* load(rill_context* ctx, const std::string& folder = small_folder(), uint32_t copy_weights = 0) {
  rill_lm_load_options options;
  rill_lm_load_options_init(&options);
  options.copy_weights = copy_weights;
  rill_lm* lm = nullptr;
  REQUIRE_MESSAGE(rill_lm_load(ctx, folder.c_str(), &options, &lm) == RILL_OK, rill_last_error());
  return lm;
}

rill_lm* share(rill_context* ctx, rill_lm* source) {
  rill_lm* lm = nullptr;
  REQUIRE_MESSAGE(rill_lm_create_shared(ctx, source, &lm) == RILL_OK, rill_last_error());
  return lm;
}

const std::vector<int32_t> kIds = {1, 400, 77, 511, 9};

// The last token's logits of kIds in one prefill.
std::vector<float> last_logits(rill_lm* lm, int vocab) {
  std::vector<float> out(static_cast<size_t>(vocab));
  REQUIRE_MESSAGE(rill_lm_logits(lm, nullptr, 1, static_cast<int32_t>(kIds.size()), kIds.data(), 1, out.data(),
                                 out.size()) == RILL_OK,
                  rill_last_error());
  return out;
}

// The same, checked against decode steps through a cache of the model (so
// that the cache and scratch are exercised too); the small model.
std::vector<float> logits(rill_lm* lm) {
  const std::vector<float> prefill = last_logits(lm, kSmallVocab);
  std::vector<float> step(kSmallVocab);
  rill_kv_cache* cache = nullptr;
  REQUIRE(rill_kv_cache_create(rill_lm_model(lm), 1, 16, &cache) == RILL_OK);
  for (int32_t id : kIds) {
    REQUIRE_MESSAGE(rill_lm_logits(lm, cache, 1, 1, &id, 1, step.data(), step.size()) == RILL_OK, rill_last_error());
  }
  rill_kv_cache_destroy(cache);
  // Decode steps and the prefill agree closely (not bitwise: other shapes).
  double worst = 0;
  for (size_t i = 0; i < prefill.size(); ++i) worst = std::max(worst, std::fabs(double(prefill[i]) - step[i]));
  CHECK(worst < 1e-4);
  return prefill;
}

}  // namespace

// (The logits of shared models are compared below, on the small model: the
// large one's LM head is slow on lavapipe.)
TEST_CASE("a shared model holds no second copy of the weights") {
  MemoryMeter meter;
  Context a, b;
  const uint64_t before_load = meter.now();
  rill_lm* source = load(a.ctx, large_folder(), 1);
  const uint64_t load_bytes = meter.now() - before_load;

  const uint64_t before_share = meter.now();
  rill_lm* shared = share(b.ctx, source);
  const uint64_t share_bytes = meter.now() - before_share;

  // The control: an unshared load into b holds a second copy, which the meter sees.
  const uint64_t before_copy = meter.now();
  rill_lm* copy = load(b.ctx, large_folder(), 1);
  const uint64_t copy_bytes = meter.now() - before_copy;

  MESSAGE("memory on " << backend_name() << ": load " << load_bytes << " bytes, share " << share_bytes
                       << ", unshared second load " << copy_bytes << " (table " << kTableBytes << ")");
  if (load_bytes == 0 && !meter.vulkan) {
    MESSAGE("memory not measured: the allocator reports nothing (a sanitizer's)");
  } else {
    CHECK(load_bytes >= kTableBytes);
    CHECK(copy_bytes >= kTableBytes);
    CHECK(share_bytes < kTableBytes / 16);
  }
  rill_lm_destroy(copy);
  rill_lm_destroy(shared);
  rill_lm_destroy(source);
}

TEST_CASE("source and shared models, and their contexts, may be destroyed in either order") {
  std::vector<float> expected;
  {
    Context reference;
    rill_lm* lm = load(reference.ctx);
    expected = logits(lm);
    rill_lm_destroy(lm);
  }
  SUBCASE("the source and its context first") {
    auto* a = new Context();
    Context b;
    rill_lm* source = load(a->ctx);
    rill_lm* shared = share(b.ctx, source);
    rill_lm_destroy(source);
    CHECK(logits(shared) == expected);
    delete a;
    CHECK(logits(shared) == expected);
    rill_lm_destroy(shared);
  }
  SUBCASE("the shared model first") {
    Context a, b;
    rill_lm* source = load(a.ctx);
    rill_lm* shared = share(b.ctx, source);
    CHECK(logits(shared) == expected);
    rill_lm_destroy(shared);
    CHECK(logits(source) == expected);
    rill_lm_destroy(source);
  }
  SUBCASE("the shared model's context first, the source running on") {
    Context a;
    rill_lm* source = load(a.ctx);
    {
      Context b;
      rill_lm* shared = share(b.ctx, source);
      CHECK(logits(shared) == expected);
      rill_lm_destroy(shared);
    }
    CHECK(logits(source) == expected);
    rill_lm_destroy(source);
  }
  SUBCASE("shared into the source's own context, and shared again from a shared model") {
    Context a, b;
    rill_lm* source = load(a.ctx);
    rill_lm* same = share(a.ctx, source);
    rill_lm* again = share(b.ctx, same);
    rill_lm_destroy(source);
    rill_lm_destroy(same);
    CHECK(logits(again) == expected);
    rill_lm_destroy(again);
  }
}

TEST_CASE("two threads run the two contexts of shared weights at once") {
  Context a, b;
  rill_lm* source = load(a.ctx);
  rill_lm* shared = share(b.ctx, source);
  const std::vector<float> expected = logits(source);
  std::vector<float> got_a, got_b;
  bool same_a = true, same_b = true;
  std::thread other([&] {
    for (int i = 0; i < 4; ++i) {
      std::vector<float> out(kSmallVocab);
      if (rill_lm_logits(source, nullptr, 1, static_cast<int32_t>(kIds.size()), kIds.data(), 1, out.data(),
                         out.size()) != RILL_OK || out != expected) {
        same_a = false;
      }
    }
  });
  for (int i = 0; i < 4; ++i) {
    std::vector<float> out(kSmallVocab);
    if (rill_lm_logits(shared, nullptr, 1, static_cast<int32_t>(kIds.size()), kIds.data(), 1, out.data(),
                       out.size()) != RILL_OK || out != expected) {
      same_b = false;
    }
  }
  other.join();
  CHECK(same_a);
  CHECK(same_b);
  rill_lm_destroy(shared);
  rill_lm_destroy(source);
}

TEST_CASE("rill_lm_create_shared refuses NULLs and a context of another backend") {
  Context a;
  rill_lm* source = load(a.ctx);
  rill_lm* out = nullptr;
  expect_failure(rill_lm_create_shared(nullptr, source, &out), RILL_ERROR_INVALID_ARGUMENT, {"ctx", "NULL"});
  expect_failure(rill_lm_create_shared(a.ctx, nullptr, &out), RILL_ERROR_INVALID_ARGUMENT, {"source", "NULL"});
  expect_failure(rill_lm_create_shared(a.ctx, source, nullptr), RILL_ERROR_INVALID_ARGUMENT, {"out", "NULL"});
  CHECK(out == nullptr);
  const std::string other = backend_name() == "cpu" ? "vulkan" : "cpu";
  rill_context* foreign = nullptr;
  if (rill_context_create(config_for(other).c_str(), &foreign) == RILL_OK) {
    expect_failure(rill_lm_create_shared(foreign, source, &out), RILL_ERROR_INVALID_ARGUMENT,
                   {"ctx", backend_name().c_str(), other.c_str()});
    CHECK(out == nullptr);
    rill_context_destroy(foreign);
  } else {
    MESSAGE("not checked: no " << other << " backend here to mismatch with");
  }
  rill_lm_destroy(source);
}

TEST_CASE("Vulkan: contexts on different VkDevices are refused, naming both") {
  if (backend_name() != "vulkan") return;
  if (rill_test::kAddressSanitizer) {
    // The second device's instance loads the validation layer and drops it
    // when destroyed; LeakSanitizer then reports the allocations the Vulkan
    // loader and the layer keep (tests/sanitizers/lsan.supp) from an unloaded
    // module, whose frames its fast unwinder cannot name.
    MESSAGE("not checked under AddressSanitizer: a second instance with the other validation setting");
    return;
  }
  Context a;
  rill_lm* source = load(a.ctx);
  // The other validation setting opens a device of its own on the same GPU.
  const char* env = std::getenv("RILL_VULKAN_VALIDATION");
  const std::string saved = env != nullptr ? env : "";
  const bool validating = saved == "1";
  rill_test::set_env("RILL_VULKAN_VALIDATION", validating ? "" : "1");
  rill_context* other = nullptr;
  const rill_status made = rill_context_create(config_for("vulkan").c_str(), &other);
  rill_test::set_env("RILL_VULKAN_VALIDATION", saved);
  if (made == RILL_OK) {
    rill_lm* out = nullptr;
    expect_failure(rill_lm_create_shared(other, source, &out), RILL_ERROR_INVALID_ARGUMENT,
                   {"rill_lm_create_shared", "ctx", "different VkDevices", "validation on"});
    CHECK(out == nullptr);
    rill_context_destroy(other);
  } else {
    MESSAGE("not checked: no context with validation " << (validating ? "off" : "on") << ": " << rill_last_error());
  }
  rill_lm_destroy(source);
}
