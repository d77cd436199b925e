// What `rill quantize` reads: the tensors to write (under GGUF's names, in
// ggml's dim order) and the metadata, from a GGUF file or from a Hugging Face
// folder (config.json, tokenizer.json, model.safetensors or its shards).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf_reader.h"
#include "gguf_writer.h"
#include "io/checkpoint.h"

namespace rill_cli {

struct SourceTensor {
  std::string name;            // GGUF's
  std::vector<uint64_t> dims;  // ggml's order: dims[0] varies fastest
  uint32_t type_id;            // GGUF's tensor type
  const unsigned char* data;
  uint64_t bytes;
};

struct QuantizeSource {
  std::vector<SourceTensor> tensors;
  int64_t layers = 0;     // the architecture's block_count (llama.cpp's _M mixes need it)
  uint32_t alignment = 32;
  // What the tensors point into.
  std::unique_ptr<rill::gguf::File> gguf;
  rill::io::Shards shards;
  std::vector<std::vector<unsigned char>> owned;  // rows permuted for the llama architecture
};

// A GGUF file: its metadata copied onto writer, its tensors as they are.
bool read_gguf_source(const std::string& path, rill::gguf::Writer& writer, QuantizeSource& out, std::string& error);

// A Hugging Face folder of a family whose GGUF architecture is marked
// from_hf_folders (gguf_names.h): config.json as the architecture's metadata,
// tokenizer.json (a byte-level or SentencePiece BPE) as tokenizer.ggml.*, the checkpoint's
// tensors renamed (q/k rows permuted for llama, Gemma's norm weights stored as
// 1 + w) as llama.cpp's converter writes them. Anything the file could not
// carry is refused by name in error.
bool read_hf_source(const std::string& folder, rill::gguf::Writer& writer, QuantizeSource& out, std::string& error);

// tokenizer.json (parsed; read from path) as tokenizer.ggml.* metadata on
// writer for the GGUF architecture arch: a byte-level BPE or a SentencePiece
// BPE, its token list padded to vocab_size (the model's embedding rows), else
// false with error naming what GGUF cannot carry.
bool write_hf_tokenizer(const nlohmann::json& tokenizer, const std::string& path, int64_t vocab_size,
                        const std::string& arch, rill::gguf::Writer& writer, std::string& error);

}  // namespace rill_cli
