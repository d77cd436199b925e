#include "cli_options.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <utility>

#include "io/text_file.h"

namespace rill_cli {

bool is_help_option(const char* arg) { return std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0; }

bool parse_int_option(const char* command, const char* option, const char* value, int min, int max, int& out) {
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || n < min || n > max) {
    std::fprintf(stderr, "rill %s: %s: expected an integer from %d to %d, got '%s'\n", command, option, min, max,
                 value);
    return false;
  }
  out = static_cast<int>(n);
  return true;
}

bool parse_ids_option(const char* command, const std::string& text, std::vector<int32_t>& out) {
  const auto separator = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == ','; };
  std::vector<int32_t> ids;
  const char* p = text.c_str();
  while (true) {
    while (separator(*p)) ++p;
    if (*p == '\0') break;
    char* end = nullptr;
    errno = 0;
    const long long id = std::strtoll(p, &end, 10);
    if (end == p || errno != 0 || id < 0 || id > INT32_MAX || (*end != '\0' && !separator(*end))) {
      std::fprintf(stderr, "rill %s: --ids: expected token ids >= 0 separated by spaces, got '%s'\n", command,
                   text.c_str());
      return false;
    }
    ids.push_back(static_cast<int32_t>(id));
    p = end;
  }
  if (ids.empty()) {
    std::fprintf(stderr, "rill %s: --ids: expected at least one token id, got '%s'\n", command, text.c_str());
    return false;
  }
  out = std::move(ids);
  return true;
}

bool parse_dtype_name(const char* name, rill_dtype& out) {
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    if (std::strcmp(name, rill_dtype_name(dtype)) == 0) {
      out = dtype;
      return true;
    }
  }
  return false;
}

namespace {

// An option with a value after it, and where the value goes.
struct ValueOption {
  const char* name;
  const char** value;
};

// Takes argv[i] and its value (advancing i) when argv[i] is one of options
// and a value follows; false otherwise.
bool take_value(int argc, char** argv, int& i, std::initializer_list<ValueOption> options) {
  if (i + 1 >= argc) return false;
  for (const ValueOption& option : options) {
    if (std::strcmp(argv[i], option.name) == 0) {
      *option.value = argv[++i];
      return true;
    }
  }
  return false;
}

}  // namespace

bool LoadOptions::take(int argc, char** argv, int& i) {
  if (std::strcmp(argv[i], "--copy-weights") == 0) {
    copy_weights = true;
    return true;
  }
  return take_value(argc, argv, i, {{"--dtype", &dtype}, {"--weight-format", &weight_format}});
}

bool LoadOptions::apply(const char* command, rill_lm_load_options& options) const {
  options.copy_weights = copy_weights ? 1u : 0u;
  if (dtype != nullptr) {
    if (!parse_dtype_name(dtype, options.dtype)) {
      std::fprintf(stderr, "rill %s: --dtype: expected f32, f16 or bf16, got '%s'\n", command, dtype);
      return false;
    }
    options.override_dtype = 1;
  }
  if (weight_format == nullptr) return true;
  for (rill_dtype format : {RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0, RILL_DTYPE_Q5_0, RILL_DTYPE_Q5_1, RILL_DTYPE_Q4_K,
                            RILL_DTYPE_Q5_K, RILL_DTYPE_Q6_K}) {
    if (std::strcmp(weight_format, rill_dtype_name(format)) == 0) {
      options.weight_format = format;
      return true;
    }
  }
  // An element dtype: the matrices stay in the compute dtype, so it is that.
  rill_dtype matrices = RILL_DTYPE_F32;
  if (!parse_dtype_name(weight_format, matrices)) {
    std::fprintf(stderr,
                 "rill %s: --weight-format: expected q8_0, q4_0, q5_0, q5_1, q4_k, q5_k, q6_k, f32, f16 or bf16, "
                 "got '%s'\n",
                 command, weight_format);
    return false;
  }
  if (options.override_dtype != 0 && options.dtype != matrices) {
    std::fprintf(stderr,
                 "rill %s: --weight-format %s: f32, f16 and bf16 matrices are kept in the compute dtype, and --dtype "
                 "gives %s\n",
                 command, weight_format, dtype);
    return false;
  }
  options.override_dtype = 1;
  options.dtype = matrices;
  return true;
}

void LoadOptions::print_help(std::FILE* to, int column) {
  const auto line = [&](const char* option, const char* text) {
    std::fprintf(to, "  %-*s%s\n", column - 2, option, text);
  };
  line("--dtype D", "compute dtype (default: the checkpoint's torch_dtype, else f32)");
  line("--weight-format F", "q8_0, q4_0, q5_0, q5_1, q4_k, q5_k or q6_k: quantize the weight");
  line("", "matrices as they load (norms, biases stay in the compute dtype; a GGUF");
  line("", "file's blocks are kept); f32, f16 or bf16: matrices in that compute dtype");
  line("--copy-weights", "copy the weights into memory rather than read them in place from the");
  line("", "files' maps (rill_lm_load_options.copy_weights; docs/GGUF.md)");
}

bool read_text(const std::string& path, std::string& out, std::string& error) {
  switch (rill::io::read_text_file(path, out, error)) {
    case rill::io::ReadResult::ok: return true;
    case rill::io::ReadResult::missing: error = "no such file"; return false;
    case rill::io::ReadResult::failed: return false;
  }
  return false;
}

namespace {

// Backend names go into TOML text between quotes: only names that need no
// escaping, which every backend and plugin name is.
bool is_plain_backend_name(const char* name) {
  if (*name == '\0') return false;
  for (; *name; ++name) {
    const char c = *name;
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

bool RuntimeOptions::take(int argc, char** argv, int& i) {
  return take_value(argc, argv, i, {{"--config", &config_path}, {"--backend", &backend}});
}

int RuntimeOptions::config_text(const char* command, std::string& config) const {
  if (config_path != nullptr && backend != nullptr) {
    std::fprintf(stderr, "rill %s: give --config or --backend, not both (set [runtime] backend in the file)\n",
                 command);
    return 2;
  }
  config.clear();
  std::string error;
  if (config_path != nullptr && !read_text(config_path, config, error)) {
    std::fprintf(stderr, "rill %s: cannot read config file '%s': %s\n", command, config_path, error.c_str());
    return 1;
  }
  if (backend != nullptr) {
    if (!is_plain_backend_name(backend)) {
      std::fprintf(stderr,
                   "rill %s: --backend: expected auto, cpu, cuda, vulkan or a plugin name of [a-z0-9_], got '%s'\n",
                   command, backend);
      return 2;
    }
    config = std::string("[runtime]\nbackend = \"") + backend + "\"\n";
  }
  return 0;
}

bool output_overwrites_input(const char* command, const Operand& output, const std::vector<Operand>& inputs) {
  std::error_code ignored;
  const std::filesystem::path out = std::filesystem::u8path(output.second);
  if (!std::filesystem::exists(out, ignored)) return false;
  for (const auto& [option, input] : inputs) {
    const std::filesystem::path in = std::filesystem::u8path(input);
    std::vector<std::filesystem::path> candidates = {in};
    if (std::filesystem::is_directory(in, ignored)) {
      for (const auto& entry : std::filesystem::directory_iterator(in, ignored)) candidates.push_back(entry.path());
    }
    for (const auto& candidate : candidates) {
      if (std::filesystem::equivalent(out, candidate, ignored)) {
        std::fprintf(stderr, "rill %s: %s %s is %s's file %s: refusing to write over an input\n", command,
                     output.first, output.second.c_str(), option, candidate.u8string().c_str());
        return true;
      }
    }
  }
  return false;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace rill_cli
