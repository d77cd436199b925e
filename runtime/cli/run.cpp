// `rill run`: runs hidden states from an .npy file through a decoder stack
// described by a TOML [model] table with safetensors weights, and writes the
// output as .npy. With --decode-from N the first N tokens run as one prefill
// and each later token as a decode step against the KV cache.
#include <toml++/toml.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "io/npy.h"
#include "rill.h"

namespace rill_cli {
namespace {

void print_help(std::FILE* to) {
  std::fprintf(to,
               "usage: rill run --config MODEL.toml --weights W.safetensors --input X.npy --output Y.npy\n"
               "                [--backend cpu|cuda|vulkan] [--decode-from N]\n\n"
               "Runs float32 hidden states X [B, T, D] (positions 0..T-1 in every sequence) through the\n"
               "decoder stack of the config's [model] table with the weights of W, on the backend of its\n"
               "[runtime] table or --backend, and writes the stack's output Y [B, T, D] as float32.\n"
               "  --decode-from N   tokens [0, N) run as one prefill, every later token as a decode\n"
               "                    step against the KV cache (0 <= N <= T); Y matches the plain run\n");
}

int fail(const std::string& message) {
  std::fprintf(stderr, "rill run: %s\n", message.c_str());
  return 1;
}

int fail_status(const std::string& what, rill_status status) {
  return fail(what + ": " + rill_status_string(status) + ": " + rill_last_error());
}

// The config text with [runtime] backend set to backend.
bool override_backend(const std::string& text, const std::string& path, const std::string& backend, std::string& out,
                      std::string& error) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    error = path + ":" + std::to_string(e.source().begin.line) + ":" + std::to_string(e.source().begin.column) +
            ": TOML syntax error: " + std::string(e.description());
    return false;
  }
  toml::node* runtime = root.get("runtime");
  if (runtime == nullptr) {
    root.insert("runtime", toml::table{});
    runtime = root.get("runtime");
  }
  if (!runtime->is_table()) {
    error = path + ": 'runtime' must be a table";
    return false;
  }
  runtime->as_table()->insert_or_assign("backend", backend);
  std::ostringstream serialized;
  serialized << root;
  out = serialized.str();
  return true;
}

struct Handles {
  rill_context* ctx = nullptr;
  rill_model* model = nullptr;
  rill_kv_cache* cache = nullptr;
  std::vector<rill_tensor*> tensors;
  ~Handles() {
    for (rill_tensor* t : tensors) rill_tensor_destroy(t);
    rill_kv_cache_destroy(cache);
    rill_model_destroy(model);
    rill_context_destroy(ctx);
  }
  rill_tensor* tensor(rill_dtype dtype, int64_t b, int64_t t, int64_t d) {
    const int64_t shape[3] = {b, t, d};
    rill_tensor* out = nullptr;
    if (rill_tensor_create(ctx, dtype, 3, shape, &out) != RILL_OK) return nullptr;
    tensors.push_back(out);
    return out;
  }
};

}  // namespace

int run_main(int argc, char** argv) {
  std::string config_path, weights_path, input_path, output_path, backend;
  long decode_from = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (is_help_option(argv[i])) {
      print_help(stdout);
      return 0;
    }
    std::string* target = arg == "--config"    ? &config_path
                          : arg == "--weights" ? &weights_path
                          : arg == "--input"   ? &input_path
                          : arg == "--output"  ? &output_path
                          : arg == "--backend" ? &backend
                                               : nullptr;
    if ((target != nullptr || arg == "--decode-from") && i + 1 >= argc) {
      std::fprintf(stderr, "rill run: %s needs a value\n", arg.c_str());
      return 2;
    }
    if (target != nullptr) {
      *target = argv[++i];
    } else if (arg == "--decode-from") {
      char* end = nullptr;
      const char* value = argv[++i];
      decode_from = std::strtol(value, &end, 10);
      if (end == value || *end != '\0' || decode_from < 0) {
        std::fprintf(stderr, "rill run: --decode-from: expected a token count >= 0, got '%s'\n", value);
        return 2;
      }
    } else {
      std::fprintf(stderr, "rill run: unexpected argument '%s'\n", arg.c_str());
      print_help(stderr);
      return 2;
    }
  }
  for (const auto& [value, name] : {std::pair{&config_path, "--config"}, std::pair{&weights_path, "--weights"},
                                    std::pair{&input_path, "--input"}, std::pair{&output_path, "--output"}}) {
    if (value->empty()) {
      std::fprintf(stderr, "rill run: %s is required\n", name);
      print_help(stderr);
      return 2;
    }
  }

  if (output_overwrites_input("run", {"--output", output_path},
                              {{"--config", config_path}, {"--weights", weights_path}, {"--input", input_path}})) {
    return 2;
  }
  std::string config;
  std::string read_error;
  if (!read_text(config_path, config, read_error)) return fail(config_path + ": cannot read the config file: " + read_error);
  rill_model_desc desc;
  rill_status status = rill_model_desc_from_toml(config.c_str(), config_path.c_str(), &desc);
  if (status != RILL_OK) return fail_status("config", status);
  if (!backend.empty()) {
    std::string error;
    if (!override_backend(std::string(config), config_path, backend, config, error)) return fail(error);
  }

  rill::io::NpyArray input;
  std::string error;
  if (!rill::io::read_npy_f32(input_path, input, error)) return fail(error);
  if (input.shape.size() != 3 || input.shape[2] != desc.hidden_size || input.shape[0] < 1 || input.shape[1] < 1) {
    std::string shape;
    for (int64_t d : input.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    return fail(input_path + ": expected float32 hidden states [B, T, " + std::to_string(desc.hidden_size) +
                "] (hidden_size of the config), got shape [" + shape + "]");
  }
  const int64_t batch = input.shape[0], tokens = input.shape[1], hidden = input.shape[2];
  if (decode_from > tokens) {
    return fail("--decode-from " + std::to_string(decode_from) + " exceeds the input's " + std::to_string(tokens) +
                " tokens");
  }

  Handles h;
  status = rill_context_create(config.c_str(), &h.ctx);
  if (status != RILL_OK) return fail_status("context", status);
  status = rill_model_create(h.ctx, &desc, &h.model);
  if (status != RILL_OK) return fail_status("model", status);
  const auto load_start = std::chrono::steady_clock::now();
  status = rill_model_load_safetensors(h.model, weights_path.c_str());
  if (status != RILL_OK) return fail_status("weights", status);
  status = rill_model_check_weights(h.model);
  if (status != RILL_OK) return fail_status(weights_path, status);
  const double load_seconds = seconds_since(load_start);

  std::vector<float> output(input.data.size());
  const size_t row = static_cast<size_t>(hidden);
  double prefill_seconds = 0, decode_seconds = 0;
  if (decode_from < 0) {
    rill_tensor* x = h.tensor(desc.dtype, batch, tokens, hidden);
    if (x == nullptr) return fail_status("hidden states", RILL_ERROR_OUT_OF_MEMORY);
    const auto start = std::chrono::steady_clock::now();
    status = rill_tensor_write_f32(x, input.data.data(), input.data.size());
    if (status == RILL_OK) status = rill_model_forward(h.model, nullptr, x, nullptr, 0);
    if (status == RILL_OK) status = rill_tensor_read_f32(x, output.data(), output.size());
    if (status != RILL_OK) return fail_status("forward", status);
    prefill_seconds = seconds_since(start);
  } else {
    status = rill_kv_cache_create(h.model, static_cast<int32_t>(batch), static_cast<int32_t>(tokens), &h.cache);
    if (status != RILL_OK) return fail_status("KV cache", status);
    // Runs tokens [first, first + count) of every sequence as one forward call.
    std::vector<float> staging;
    auto run_span = [&](int64_t first, int64_t count) -> rill_status {
      rill_tensor* x = h.tensor(desc.dtype, batch, count, hidden);
      if (x == nullptr) return RILL_ERROR_OUT_OF_MEMORY;
      staging.resize(static_cast<size_t>(batch * count) * row);
      for (int64_t b = 0; b < batch; ++b) {
        std::memcpy(&staging[static_cast<size_t>(b * count) * row],
                    &input.data[static_cast<size_t>(b * tokens + first) * row],
                    static_cast<size_t>(count) * row * sizeof(float));
      }
      rill_status s = rill_tensor_write_f32(x, staging.data(), staging.size());
      if (s == RILL_OK) s = rill_model_forward(h.model, h.cache, x, nullptr, 0);
      if (s == RILL_OK) s = rill_tensor_read_f32(x, staging.data(), staging.size());
      if (s != RILL_OK) return s;
      for (int64_t b = 0; b < batch; ++b) {
        std::memcpy(&output[static_cast<size_t>(b * tokens + first) * row],
                    &staging[static_cast<size_t>(b * count) * row], static_cast<size_t>(count) * row * sizeof(float));
      }
      rill_tensor_destroy(x);
      h.tensors.pop_back();
      return RILL_OK;
    };
    auto start = std::chrono::steady_clock::now();
    if (decode_from > 0) {
      status = run_span(0, decode_from);
      if (status != RILL_OK) return fail_status("prefill", status);
    }
    prefill_seconds = seconds_since(start);
    start = std::chrono::steady_clock::now();
    for (int64_t t = decode_from; t < tokens; ++t) {
      status = run_span(t, 1);
      if (status != RILL_OK) return fail_status("decode step at token " + std::to_string(t), status);
    }
    decode_seconds = seconds_since(start);
  }
  if (!rill::io::write_npy_f32(output_path, input.shape, output.data(), error)) return fail(error);

  const int64_t prefill_tokens = decode_from < 0 ? tokens : decode_from;
  std::printf("rill run: %s backend (%s), %s, B=%lld T=%lld D=%lld: weights %.1f ms, prefill of %lld tokens %.2f ms",
              rill_context_backend_name(h.ctx), rill_context_device_name(h.ctx), rill_dtype_name(desc.dtype),
              static_cast<long long>(batch), static_cast<long long>(tokens), static_cast<long long>(hidden),
              load_seconds * 1e3, static_cast<long long>(prefill_tokens), prefill_seconds * 1e3);
  if (decode_from >= 0) {
    std::printf(", %lld decode steps %.2f ms", static_cast<long long>(tokens - decode_from), decode_seconds * 1e3);
  }
  std::printf("\n");
  return 0;
}

}  // namespace rill_cli
