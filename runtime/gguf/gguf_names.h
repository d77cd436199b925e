// The one home of how llama.cpp's GGUF files name and lay out a Hugging Face
// model: the architectures rill reads, their tensor names against Hugging
// Face's, and the llama architecture's q/k row permutation. rill's GGUF
// loader reads files through it and `rill quantize` writes them through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rill::gguf {

// A GGUF architecture rill loads, with the model_type (config.json) its
// metadata maps to and what llama.cpp's converter changed: q/k rows permuted
// (llama), norm weights stored as 1 + w (Gemma, whose RMSNorm scales by
// 1 + w; its config also always names head_dim).
// own_names: the architecture's tensor names (after "blk.{i}.") that differ
// from the common table's, with Hugging Face's; fused_names: the common
// table's names the architecture does not have, since it fuses them into its
// own (Phi-3's attn_qkv and ffn_up). from_hf_folders: `rill quantize` writes
// this architecture from a Hugging Face folder (the one list of the families
// it converts).
// What the metadata leaves implicit, as llama.cpp reads it: layers_27b, the
// layer count of the family's 27B model (Gemma 2: 46, Gemma 3: 62), whose
// queries scale by 1/sqrt(hidden / heads) where the others' scale by
// 1/sqrt(head_dim); nonzero also marks the families with logit soft-caps.
// sliding_window_key: the architecture's metadata carries
// attention.sliding_window.
struct Architecture {
  const char* model_type;
  bool permuted_qk;
  bool norms_hold_offset;
  std::map<std::string, std::string> own_names;
  std::vector<std::string> fused_names;
  bool from_hf_folders;
  int64_t layers_27b;
  bool sliding_window_key;
};

// GGUF's architecture names ("llama", "qwen2", ...) and their traits.
const std::map<std::string, Architecture>& architectures();

// The architectures' names, comma-separated, for messages.
std::string supported_architectures();

// Hugging Face's name for GGUF tensor name ("blk.3.attn_q.weight" ->
// "model.layers.3.self_attn.q_proj.weight"); false for a name rill does not map.
bool hf_tensor_name(const std::string& name, const Architecture& a, std::string& out);

// GGUF's name for Hugging Face tensor name; false for a name rill does not map.
bool gguf_tensor_name(const std::string& name, const Architecture& a, std::string& out);

// The tensors (GGUF's names) a file of architecture a must hold for rill's
// loader: the embedding, the final norm, the head unless tied, and in each of
// layers blocks the common table's norms and projection weights (less a's
// fused names) with a's own names, the q/k/v biases when qkv_bias and the
// output projection's when o_bias.
std::vector<std::string> required_tensors(const Architecture& a, int64_t layers, bool tied, bool qkv_bias,
                                          bool o_bias);

// The names of the architectures `rill quantize` writes from Hugging Face
// folders, comma-separated, for messages.
std::string hf_folder_architectures();

// llama.cpp's q/k permutation: its converter stores the rows of each of heads
// heads as (half, 2) where Hugging Face has (2, half), i.e. GGUF row 2*i + t
// of a head is Hugging Face's row t*half + i. rows must split into heads of an
// even number of rows; each row is row_bytes long.
std::vector<unsigned char> permute_rows(const unsigned char* data, uint64_t rows, uint64_t row_bytes,
                                        uint64_t heads);    // Hugging Face -> GGUF
std::vector<unsigned char> unpermute_rows(const unsigned char* data, uint64_t rows, uint64_t row_bytes,
                                          uint64_t heads);  // GGUF -> Hugging Face

// The split patterns of the byte-level pre-tokenizers llama.cpp names
// (tokenizer.ggml.pre "llama-bpe" and "qwen2"), as tokenizer.json files write them.
inline constexpr const char* kLlamaBpePattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The longest SentencePiece piece (tokenizer.ggml.model "llama") rill reads
// and writes: generating merges from scores looks up every split of every
// piece, quadratic in its length. SentencePiece's pieces are short (16
// characters by default); the bound keeps a hostile file from making it a hang.
inline constexpr size_t kMaxSentencePieceBytes = 1024;

}  // namespace rill::gguf
