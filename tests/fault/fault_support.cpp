#include "fault_support.h"

#include <doctest/doctest.h>

#include <cstring>

#include "alloc_hook.h"
#include "safetensors_file.h"

namespace rill_fault {

namespace {

struct WeightFile {
  std::string name;
  std::vector<int64_t> shape;
};

const std::vector<WeightFile>& tiny_weights() {
  static const std::vector<WeightFile> weights = {
      {"model.layers.0.input_layernorm.weight", {4}},          {"model.layers.0.self_attn.q_proj.weight", {4, 4}},
      {"model.layers.0.self_attn.k_proj.weight", {4, 4}},      {"model.layers.0.self_attn.v_proj.weight", {4, 4}},
      {"model.layers.0.self_attn.o_proj.weight", {4, 4}},      {"model.layers.0.post_attention_layernorm.weight", {4}},
      {"model.layers.0.mlp.up_proj.weight", {4, 4}},           {"model.layers.0.mlp.down_proj.weight", {4, 4}}};
  return weights;
}

}  // namespace

WalkResult walk_host(const char* what, const std::function<rill_status()>& call,
                     const std::function<void()>& after_failure, const std::function<void()>& undo,
                     const std::function<void()>& before) {
  WalkResult result;
  for (long n = 1;; ++n) {
    before();
    rill_fault::fail_allocation(n);
    const rill_status status = call();
    const bool hit = rill_fault::allocation_failed();
    rill_fault::fail_allocation(0);
    if (!hit) {
      const std::string error = std::string(what) + ": " + rill_last_error();
      REQUIRE_MESSAGE(status == RILL_OK, error);
      result.succeeded_at = n;
      const std::string summary = std::string(what) + ": " + std::to_string(result.failed_calls) + " of " +
                                  std::to_string(n - 1) + " allocation failures failed the call";
      MESSAGE(summary);
      return result;
    }
    if (status == RILL_OK) {
      undo();
      continue;
    }
    ++result.failed_calls;
    const std::string failure = std::string(what) + " with allocation " + std::to_string(n) +
                                " failing: " + rill_status_string(status) + ": " + rill_last_error();
    CHECK_MESSAGE(status == RILL_ERROR_OUT_OF_MEMORY, failure);
    CHECK_MESSAGE(std::strlen(rill_last_error()) > 0, failure);
    after_failure();
  }
}


rill_model_desc tiny_desc() {
  rill_model_desc d = rill_test::model_desc(1, 4, 1, 4);
  d.activation = RILL_MLP_RELU;
  d.final_norm = 0;
  return d;
}

std::string scratch_path(const std::string& name) { return rill_test::scratch_path("rill_fault_test_", name); }

std::string write_tiny_checkpoint(const char* file, float seed) {
  std::vector<rill_test::F32Tensor> tensors;
  for (size_t t = 0; t < tiny_weights().size(); ++t) {
    const WeightFile& w = tiny_weights()[t];
    std::vector<float> values(w.shape.size() == 1 ? 4 : 16);
    for (size_t i = 0; i < values.size(); ++i) values[i] = seed + 0.01f * static_cast<float>(t * 16 + i);
    tensors.push_back({w.name, w.shape, values});
  }
  const std::string bytes = rill_test::f32_safetensors(tensors);
  const std::string path = scratch_path(file);
  rill_test::write_text_file(path, bytes);
  return path;
}

TinyModel::TinyModel(const std::string& config) : context(config) {
  const rill_model_desc d = tiny_desc();
  REQUIRE_MESSAGE(rill_model_create(context.ctx, &d, &model) == RILL_OK, rill_last_error());
}

std::vector<float> TinyModel::run() {
  rill_tensor* h = context.tensor({1, 2, 4});
  std::vector<float> x = kTinyInput;
  REQUIRE(rill_tensor_write_f32(h, x.data(), x.size()) == RILL_OK);
  REQUIRE_MESSAGE(rill_model_forward(model, nullptr, h, nullptr, 0) == RILL_OK, rill_last_error());
  REQUIRE(rill_tensor_read_f32(h, x.data(), x.size()) == RILL_OK);
  rill_tensor_destroy(h);
  return x;
}

std::string TinyModel::missing() const {
  return rill_model_check_weights(model) == RILL_OK ? std::string() : std::string(rill_last_error());
}

void walk_forward(const char* what, TinyModel& tiny) {
  rill_kv_cache* cache = nullptr;
  REQUIRE(rill_kv_cache_create(tiny.model, 1, 8, &cache) == RILL_OK);
  rill_tensor* h = tiny.context.tensor({1, 2, 4});
  walk_host(what, [&] { return rill_model_forward(tiny.model, cache, h, nullptr, 0); },
            [&] {
              int32_t length = -1;
              CHECK(rill_kv_cache_get_length(cache, 0, &length) == RILL_OK);
              CHECK(length == 0);
            },
            [&] { REQUIRE(rill_kv_cache_set_length(cache, 0, 0) == RILL_OK); },
            [&] { REQUIRE(rill_tensor_write_f32(h, kTinyInput.data(), kTinyInput.size()) == RILL_OK); });
  std::vector<float> with_cache(kTinyInput.size());
  REQUIRE(rill_tensor_read_f32(h, with_cache.data(), with_cache.size()) == RILL_OK);
  CHECK(with_cache == tiny.run());  // the prefill into the cache equals one without
  rill_tensor_destroy(h);
  rill_kv_cache_destroy(cache);
}

}  // namespace rill_fault
