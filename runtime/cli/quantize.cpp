// `rill quantize`: a GGUF file's or a Hugging Face folder's weight matrices
// quantized to a block format, written as a GGUF file (metadata and tokenizer
// included) which rill and llama.cpp read.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "dtype_convert.h"
#include "gguf_names.h"
#include "gguf_types.h"
#include "quant.h"
#include "quantize_source.h"
#include "rill.h"

namespace rill_cli {
namespace {

void print_help(std::FILE* to) {
  std::fprintf(to,
               "usage: rill quantize IN OUT.gguf --format T\n"
               "       rill quantize --model IN --output OUT.gguf --type T\n\n"
               "Writes IN (f32, f16 or bf16 weights) with its weight matrices quantized. IN is a GGUF file,\n"
               "whose metadata, tokenizer and tensor names are kept, or a Hugging Face folder (config.json,\n"
               "tokenizer.json with a byte-level or SentencePiece BPE, model.safetensors or its shards),\n"
               "written as llama.cpp's converter names and lays it out, of model_type\n"
               "  %s.\n"
               "Norms, biases and other 1-dim tensors stay unquantized (f16 and bf16 ones are written in f32, as llama.cpp needs),\n"
               "and tensors IN already holds in a block format are copied unchanged. OUT is written beside its path and renamed into place once complete; it may not\n"
               "be IN.\n"
               "  --format T, --type T\n"
               "             q8_0, q4_0, q5_0, q5_1, q4_k, q5_k or q6_k: every matrix in that format;\n"
               "             q4_k_m or q5_k_m: llama.cpp's mixes, q4_k / q5_k with q6_k for output.weight\n"
               "             and for attn_v and ffn_down of the layers llama.cpp gives more bits\n"
               "             (the first and last eighth, and every third between)\n"
               "Each matrix's rows must be whole blocks of 32 elements. A matrix whose rows are not whole\n"
               "blocks of 256 falls back as in llama.cpp's quantizer where T asks for a K format: q4_k to\n"
               "q5_0, q5_k to q5_1, q6_k to q8_0.\n",
               rill::gguf::hf_folder_architectures().c_str());
}

struct Type {
  const char* name;
  rill_dtype base;
  bool mix;             // q6_k for the output head and the more-bits layers' attn_v / ffn_down
  uint32_t file_type;   // general.file_type, llama.cpp's LLAMA_FTYPE_MOSTLY_* number
};
constexpr Type kTypes[] = {
    {"q8_0", RILL_DTYPE_Q8_0, false, 7},  {"q4_0", RILL_DTYPE_Q4_0, false, 2},
    {"q5_0", RILL_DTYPE_Q5_0, false, 8},  {"q5_1", RILL_DTYPE_Q5_1, false, 9},
    {"q4_k", RILL_DTYPE_Q4_K, false, 14}, {"q5_k", RILL_DTYPE_Q5_K, false, 16},
    {"q6_k", RILL_DTYPE_Q6_K, false, 18}, {"q4_k_m", RILL_DTYPE_Q4_K, true, 15},
    {"q5_k_m", RILL_DTYPE_Q5_K, true, 17},
};

// GGUF type ids of the formats rill writes.
uint32_t gguf_type_id(rill_dtype dtype) {
  switch (dtype) {
    case RILL_DTYPE_Q8_0: return 8;
    case RILL_DTYPE_Q4_0: return 2;
    case RILL_DTYPE_Q5_0: return 6;
    case RILL_DTYPE_Q5_1: return 7;
    case RILL_DTYPE_Q4_K: return 12;
    case RILL_DTYPE_Q5_K: return 13;
    default: return 14;  // Q6_K
  }
}

// llama.cpp's use_more_bits: the layers whose attn_v and ffn_down a _M mix keeps in q6_k.
bool more_bits_layer(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// The format of tensor name under type, in a model of layers layers.
rill_dtype format_of(const Type& type, const std::string& name, int64_t layers) {
  if (!type.mix) return type.base;
  if (name == "output.weight") return RILL_DTYPE_Q6_K;
  const bool v_or_down = name.compare(0, 4, "blk.") == 0 && (name.find(".attn_v.weight") != std::string::npos ||
                                                               name.find(".ffn_down.weight") != std::string::npos);
  int64_t layer = 0;
  for (size_t i = 4; i < name.size() && name[i] >= '0' && name[i] <= '9' && layer < layers; ++i) {
    layer = layer * 10 + (name[i] - '0');
  }
  return v_or_down && more_bits_layer(layer, layers) ? RILL_DTYPE_Q6_K : type.base;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "rill quantize: %s\n", message.c_str());
  return 1;
}

// Sets an operand, refusing a second value for it.
bool take(std::string& value, const char* name, const char* given) {
  if (!value.empty()) {
    std::fprintf(stderr, "rill quantize: %s given twice ('%s', then '%s')\n", name, value.c_str(), given);
    return false;
  }
  value = given;
  return true;
}

}  // namespace

int quantize_main(int argc, char** argv) {
  // IN and OUT are the two positional operands or --model / --output; the
  // format is --format (or its older name --type).
  std::string model_path, output_path, type_name;
  // How IN and OUT were given ("IN" or "--model", ...), for the messages that name them.
  const char* model_operand = "IN";
  const char* output_operand = "OUT";
  int positionals = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (is_help_option(argv[i])) {
      print_help(stdout);
      return 0;
    }
    if (arg.compare(0, 1, "-") != 0 && positionals < 2) {
      const bool first = positionals++ == 0;
      if (!take(first ? model_path : output_path, first ? "IN" : "OUT", argv[i])) return 2;
      continue;
    }
    std::string* value = arg == "--model" ? &model_path : arg == "--output" ? &output_path
                         : arg == "--type" || arg == "--format" ? &type_name
                                                                : nullptr;
    if (value == nullptr || i + 1 >= argc) {
      std::fprintf(stderr, "rill quantize: %s: %s\n", argv[i],
                   value == nullptr ? "unexpected argument" : "expected a value after it");
      print_help(stderr);
      return 2;
    }
    const char* name = value == &model_path ? "IN" : value == &output_path ? "OUT" : "--format";
    if (!take(*value, name, argv[++i])) return 2;
    if (value == &model_path) model_operand = "--model";
    if (value == &output_path) output_operand = "--output";
  }
  for (const auto& [value, name] : {std::pair{&model_path, "IN (or --model)"},
                                    std::pair{&output_path, "OUT (or --output)"}, std::pair{&type_name, "--format"}}) {
    if (value->empty()) {
      std::fprintf(stderr, "rill quantize: %s is required\n", name);
      print_help(stderr);
      return 2;
    }
  }
  const Type* type = nullptr;
  for (const Type& t : kTypes) {
    if (type_name == t.name) type = &t;
  }
  if (type == nullptr) {
    std::fprintf(stderr, "rill quantize: --format: expected q8_0, q4_0, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m or q5_k_m, "
                 "got '%s'\n",
                 type_name.c_str());
    return 2;
  }
  if (output_overwrites_input("quantize", {output_operand, output_path}, {{model_operand, model_path}})) return 2;

  rill::gguf::Writer writer;
  QuantizeSource source;
  std::string error;
  std::error_code ignored;
  if (std::filesystem::is_directory(std::filesystem::u8path(model_path), ignored)) {
    if (!read_hf_source(model_path, writer, source, error)) return fail(error);
  } else if (!read_gguf_source(model_path, writer, source, error)) {
    return fail(model_path + ": " + error);
  }
  writer.set_u32("general.file_type", type->file_type);
  writer.set_u32("general.quantization_version", 2);  // the K formats' layout generation, as llama.cpp writes it

  std::vector<std::vector<unsigned char>> quantized;
  quantized.reserve(source.tensors.size());
  std::vector<std::vector<float>> vectors;
  vectors.reserve(source.tensors.size());
  std::vector<float> row;
  int64_t matrices = 0, fallbacks = 0;
  for (const SourceTensor& t : source.tensors) {
    const std::string& name = t.name;
    rill_dtype stored = RILL_DTYPE_F32;
    const bool known = rill::gguf::tensor_type_to_rill(t.type_id, stored);
    if (known && (stored == RILL_DTYPE_F16 || stored == RILL_DTYPE_BF16) && t.dims.size() == 1) {
      // Norm weights and biases are written in f32, as llama.cpp's converter does: its CPU
      // backend cannot add or multiply an f32 activation with a 16-bit vector.
      vectors.emplace_back(static_cast<size_t>(t.dims[0]));
      rill::convert_to_f32(stored, t.data, vectors.back().data(), vectors.back().size());
      writer.add_tensor(name, t.dims, 0 /* F32 */, vectors.back().data(), vectors.back().size() * sizeof(float));
      continue;
    }
    if (!known || rill::quant::is_block(stored) || t.dims.size() != 2) {
      // A block tensor or a vector: copied as it is (any type: rill quantize is no loader).
      writer.add_tensor(name, t.dims, t.type_id, t.data, t.bytes);
      continue;
    }
    const uint64_t cols = t.dims[0], rows = t.dims[1];
    const rill_dtype chosen = format_of(*type, name, source.layers);
    const rill_dtype format = rill::quant::fitting_format(chosen, static_cast<int64_t>(cols));
    if (format != chosen) ++fallbacks;
    if (cols % rill_dtype_block_elements(format) != 0) {
      return fail(model_path + ": tensor '" + name + "': rows of " + std::to_string(cols) + " elements are not whole " +
                  rill_dtype_name(format) + " blocks of " + std::to_string(rill_dtype_block_elements(format)) +
                  " (no block format fits)");
    }
    const size_t row_bytes = rill::quant::row_bytes(format, static_cast<int64_t>(cols));
    quantized.emplace_back(static_cast<size_t>(rows) * row_bytes);
    row.resize(static_cast<size_t>(cols));
    const size_t source_row_bytes = static_cast<size_t>(cols) * rill_dtype_size(stored);
    for (uint64_t r = 0; r < rows; ++r) {
      rill::convert_to_f32(stored, t.data + r * source_row_bytes, row.data(), row.size());
      if (const size_t i = rill::quant::first_unquantizable(row.data(), row.size()); i < row.size()) {
        return fail(model_path + ": tensor '" + name + "': row " + std::to_string(r) + ", element " +
                    std::to_string(i) + ": " + std::to_string(row[i]) +
                    " cannot be quantized (block formats take finite values of magnitude at most 2^18)");
      }
      rill::quant::quantize_row(format, row.data(), quantized.back().data() + r * row_bytes,
                                static_cast<int64_t>(cols));
    }
    writer.add_tensor(name, t.dims, gguf_type_id(format), quantized.back().data(), quantized.back().size());
    ++matrices;
  }
  if (writer.write(output_path, source.alignment, error) != RILL_OK) return fail(error);
  std::fprintf(stderr, "rill quantize: %s: %lld matrices quantized (%s), %zu tensors written\n", output_path.c_str(),
               static_cast<long long>(matrices), type->name, source.tensors.size());
  if (fallbacks > 0) {
    std::fprintf(stderr,
                 "rill quantize: %lld of them in q5_0, q5_1 or q8_0: their rows are not whole K-format blocks "
                 "of 256\n",
                 static_cast<long long>(fallbacks));
  }
  return 0;
}

}  // namespace rill_cli
