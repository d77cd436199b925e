// `rill demo`: the quick start's second part (the main job was this until
// `rill generate` ran whole models). A Qwen2-0.5B-shaped decoder stack (hidden 896,
// 14 heads, 2 KV heads, head_dim 64, intermediate 4864, RMSNorm eps 1e-6,
// RoPE theta 1e6, QKV bias) with random weights from a fixed seed runs a
// prefill of 64 tokens and 16 decode steps against its KV cache on the
// configured backend, printing tokens/s for each phase. The CPU backend then
// runs all 80 tokens as one plain prefill, the reference the 64 + 16 outputs
// are compared with. `rill demo --ops` runs the op-level residual-stream demo.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "rill.h"

namespace rill_cli {
namespace {

constexpr int64_t kPrefill = 64;
constexpr int64_t kDecode = 16;
constexpr int64_t kTokens = kPrefill + kDecode;
constexpr uint64_t kSeed = 0x5eed2024;

void print_help(std::FILE* to) {
  std::fprintf(to,
               "usage: rill demo [--config FILE | --backend NAME] [--layers N] [--dtype f32|f16|bf16]\n"
               "       rill demo --ops [options of the op-level demo]\n\n"
               "Runs a Qwen2-0.5B-shaped decoder stack (hidden 896, 14 heads, 2 KV heads, head_dim 64,\n"
               "intermediate 4864, RMSNorm, RoPE theta 1e6, QKV bias) with random weights: a prefill of\n"
               "%lld tokens, then %lld decode steps against the KV cache, on the configured backend\n"
               "(default \"auto\"); prints tokens/s for each phase and the largest difference from the\n"
               "CPU backend running all %lld tokens as one prefill.\n"
               "  --config FILE   TOML config with a [runtime] table (see rill.h)\n"
               "  --backend NAME  auto, cpu, cuda or vulkan\n"
               "  --layers N      1 to 24 (default 4)\n"
               "  --dtype NAME    storage dtype (default f32)\n"
               "  --ops           the op-level demo instead (rill demo --ops --help)\n",
               static_cast<long long>(kPrefill), static_cast<long long>(kDecode), static_cast<long long>(kTokens));
}

// A small, fast generator (splitmix64) so that ~15M weights per layer take
// well under a second; uniform values with the given standard deviation.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  float uniform(float stddev) {
    state_ += 0x9e3779b97f4a7c15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float unit = static_cast<float>(z >> 40) / static_cast<float>(1ull << 24);  // [0, 1)
    return (unit * 2.0f - 1.0f) * stddev * 1.7320508f;                                // uniform on [-sqrt3 s, sqrt3 s]
  }

 private:
  uint64_t state_;
};

rill_model_desc qwen2_shape(int layers, rill_dtype dtype) {
  rill_model_desc d;
  rill_model_desc_init(&d);
  d.dtype = dtype;
  d.num_layers = layers;
  d.hidden_size = 896;
  d.num_heads = 14;
  d.num_kv_heads = 2;
  d.head_dim = 64;
  d.intermediate_size = 4864;
  d.norm_eps = 1e-6f;
  d.rope_theta = 1e6f;
  d.qkv_bias = 1;
  return d;
}

struct Failure {
  std::string message;
};

void check(rill_status status, const std::string& what) {
  if (status != RILL_OK) throw Failure{what + ": " + rill_status_string(status) + ": " + rill_last_error()};
}

// Sets every weight of models (all of one description) to the same random values.
void set_random_weights(const std::vector<rill_model*>& models, const rill_model_desc& d) {
  Random random(kSeed);
  const int64_t hidden = d.hidden_size, q = int64_t{d.num_heads} * d.head_dim;
  const int64_t kv = int64_t{d.num_kv_heads} * d.head_dim, inter = d.intermediate_size;
  std::vector<float> values;
  auto set = [&](const std::string& name, std::vector<int64_t> shape, float mean, float stddev) {
    size_t count = 1;
    for (int64_t s : shape) count *= static_cast<size_t>(s);
    values.resize(count);
    for (float& v : values) v = mean + random.uniform(stddev);
    for (rill_model* m : models) {
      check(rill_model_set_weight(m, name.c_str(), RILL_DTYPE_F32, static_cast<int32_t>(shape.size()), shape.data(),
                                  values.data(), count * sizeof(float)),
            name);
    }
  };
  const float in_scale = 1.0f / std::sqrt(static_cast<float>(hidden));
  for (int32_t i = 0; i < d.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    set(p + "self_attn.q_proj.weight", {q, hidden}, 0, in_scale);
    set(p + "self_attn.q_proj.bias", {q}, 0, 0.1f);
    set(p + "self_attn.k_proj.weight", {kv, hidden}, 0, in_scale);
    set(p + "self_attn.k_proj.bias", {kv}, 0, 0.1f);
    set(p + "self_attn.v_proj.weight", {kv, hidden}, 0, in_scale);
    set(p + "self_attn.v_proj.bias", {kv}, 0, 0.1f);
    set(p + "self_attn.o_proj.weight", {hidden, q}, 0, 1.0f / std::sqrt(static_cast<float>(q)));
    set(p + "mlp.gate_proj.weight", {inter, hidden}, 0, in_scale);
    set(p + "mlp.up_proj.weight", {inter, hidden}, 0, in_scale);
    set(p + "mlp.down_proj.weight", {hidden, inter}, 0, 1.0f / std::sqrt(static_cast<float>(inter)));
    set(p + "input_layernorm.weight", {hidden}, 1, 0.1f);
    set(p + "post_attention_layernorm.weight", {hidden}, 1, 0.1f);
  }
  set("model.norm.weight", {hidden}, 1, 0.1f);
}

// Runs tokens [first, first + count) of input through model (with cache, or
// none) and stores the outputs in output.
void run_span(rill_context* ctx, rill_model* model, rill_kv_cache* cache, rill_dtype dtype,
              const std::vector<float>& input, int64_t first, int64_t count, std::vector<float>& output) {
  const int64_t hidden = 896;
  const int64_t shape[3] = {1, count, hidden};
  rill_tensor* x = nullptr;
  check(rill_tensor_create(ctx, dtype, 3, shape, &x), "hidden states");
  const size_t offset = static_cast<size_t>(first * hidden), n = static_cast<size_t>(count * hidden);
  rill_status status = rill_tensor_write_f32(x, input.data() + offset, n);
  if (status == RILL_OK) status = rill_model_forward(model, cache, x, nullptr, 0);
  if (status == RILL_OK) status = rill_tensor_read_f32(x, output.data() + offset, n);
  rill_tensor_destroy(x);
  check(status, "forward");
}

double nmse_limit(rill_dtype dtype) {
  // Two implementations that each round every intermediate to the storage
  // dtype: f32 differs only in summation order.
  switch (dtype) {
    case RILL_DTYPE_F32: return 1e-8;
    case RILL_DTYPE_F16: return 1e-4;
    default: return 1e-2;
  }
}

}  // namespace

int model_demo_main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ops") == 0) {
      std::vector<char*> rest(argv, argv + argc);
      rest.erase(rest.begin() + i);
      return demo_main(static_cast<int>(rest.size()), rest.data());
    }
  }
  RuntimeOptions runtime;
  int layers = 4;
  rill_dtype dtype = RILL_DTYPE_F32;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (is_help_option(argv[i])) {
      print_help(stdout);
      return 0;
    } else if (runtime.take(argc, argv, i)) {
      continue;
    } else if (std::strcmp(argv[i], "--layers") == 0 && has_value) {
      if (!parse_int_option("demo", "--layers", argv[++i], 1, 24, layers)) return 2;
    } else if (std::strcmp(argv[i], "--dtype") == 0 && has_value) {
      if (!parse_dtype_name(argv[++i], dtype)) {
        std::fprintf(stderr, "rill demo: --dtype: expected f32, f16 or bf16, got '%s'\n", argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "rill demo: unexpected argument '%s'\n", argv[i]);
      print_help(stderr);
      return 2;
    }
  }
  std::string config;
  if (const int code = runtime.config_text("demo", config)) return code;

  rill_context* ctx = nullptr;
  rill_context* cpu = nullptr;
  rill_model* model = nullptr;
  rill_model* reference = nullptr;
  rill_kv_cache* cache = nullptr;
  int exit_code = 0;
  try {
    check(rill_context_create(config.c_str(), &ctx), "context");
    std::printf("backend: %s (%s)\nselection:\n%s\n", rill_context_backend_name(ctx), rill_context_device_name(ctx),
                rill_context_selection_report(ctx));
    const rill_model_desc desc = qwen2_shape(layers, dtype);
    std::printf(
        "model: Qwen2-0.5B-shaped stack, %d layers, hidden 896, 14 heads (2 KV), head_dim 64, "
        "intermediate 4864, %s, random weights\n",
        layers, rill_dtype_name(dtype));
    check(rill_model_create(ctx, &desc, &model), "model");
    const bool chosen_is_cpu = std::strcmp(rill_context_backend_name(ctx), "cpu") == 0;
    if (!chosen_is_cpu) {
      check(rill_context_create("[runtime]\nbackend = \"cpu\"\n", &cpu), "CPU context");
      check(rill_model_create(cpu, &desc, &reference), "CPU model");
    }
    std::vector<rill_model*> models = {model};
    if (reference != nullptr) models.push_back(reference);
    set_random_weights(models, desc);

    Random random(kSeed + 1);
    std::vector<float> input(static_cast<size_t>(kTokens * 896));
    for (float& v : input) v = random.uniform(1.0f);
    std::vector<float> output(input.size()), expected(input.size());

    check(rill_kv_cache_create(model, 1, static_cast<int32_t>(kTokens), &cache), "KV cache");
    // A warm-up prefill (scratch allocation, first-touch of weights), then
    // the cache is emptied again.
    run_span(ctx, model, cache, dtype, input, 0, kPrefill, output);
    check(rill_kv_cache_set_length(cache, 0, 0), "cache reset");

    auto start = std::chrono::steady_clock::now();
    run_span(ctx, model, cache, dtype, input, 0, kPrefill, output);
    const double prefill_seconds = seconds_since(start);
    start = std::chrono::steady_clock::now();
    for (int64_t t = kPrefill; t < kTokens; ++t) run_span(ctx, model, cache, dtype, input, t, 1, output);
    const double decode_seconds = seconds_since(start);
    std::printf("prefill: %lld tokens in %.1f ms: %.0f tokens/s\n", static_cast<long long>(kPrefill),
                prefill_seconds * 1e3, kPrefill / prefill_seconds);
    std::printf("decode:  %lld steps in %.1f ms: %.1f tokens/s (%.2f ms per token)\n", static_cast<long long>(kDecode),
                decode_seconds * 1e3, kDecode / decode_seconds, decode_seconds * 1e3 / kDecode);

    if (chosen_is_cpu) {
      run_span(ctx, model, nullptr, dtype, input, 0, kTokens, expected);
    } else {
      run_span(cpu, reference, nullptr, dtype, input, 0, kTokens, expected);
    }
    double largest = 0, error = 0, norm = 0;
    for (size_t i = 0; i < output.size(); ++i) {
      const double diff = double{output[i]} - expected[i];
      largest = std::max(largest, std::fabs(diff));
      error += diff * diff;
      norm += double{expected[i]} * expected[i];
    }
    const double nmse = std::isfinite(error) ? error / norm : INFINITY;
    std::printf(
        "against the CPU backend running all %lld tokens as one prefill: largest difference %.3g, "
        "NMSE %.3g (limit %.0e)\n",
        static_cast<long long>(kTokens), largest, nmse, nmse_limit(dtype));
    if (!(nmse <= nmse_limit(dtype))) {
      std::fprintf(stderr, "rill demo: the %s backend's result differs from the CPU reference\n",
                   rill_context_backend_name(ctx));
      exit_code = 1;
    }
  } catch (const Failure& failure) {
    std::fprintf(stderr, "rill demo: %s\n", failure.message.c_str());
    exit_code = 1;
  }
  rill_kv_cache_destroy(cache);
  rill_model_destroy(reference);
  rill_model_destroy(model);
  rill_context_destroy(cpu);
  rill_context_destroy(ctx);
  return exit_code;
}

}  // namespace rill_cli
