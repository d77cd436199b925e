// A writer for GGUF version 3 files: metadata (copied from a parsed file or
// set here), tensor infos and the aligned data section, in the layout the
// reader (gguf_reader.h) and llama.cpp read. The file is written beside its
// path and renamed over it only once complete (platform::write_file_replacing).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf_reader.h"
#include "rill.h"

namespace rill::gguf {

class Writer {
 public:
  // Keys keep the order they were first set in; setting a key again replaces its value.
  void copy(std::string_view key, const Value& value);
  void set_u32(std::string_view key, uint32_t value);
  void set_f32(std::string_view key, float value);
  void set_bool(std::string_view key, bool value);
  void set_string(std::string_view key, std::string_view value);
  void set_strings(std::string_view key, const std::vector<std::string>& values);  // an array of strings
  void set_i32s(std::string_view key, const std::vector<int32_t>& values);         // an array of i32
  void set_f32s(std::string_view key, const std::vector<float>& values);           // an array of f32

  // A tensor: dims in ggml's order (dims[0] varies fastest), type_id a GGUF
  // type, bytes of data (which must stay alive until write returns).
  void add_tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type_id, const void* data,
                  uint64_t bytes);

  // Writes the file with data aligned to alignment (general.alignment when
  // set, else 32). RILL_OK, or RILL_ERROR_IO with error naming path.
  rill_status write(const std::string& path, uint32_t alignment, std::string& error) const;

 private:
  struct Entry {
    std::string key;
    std::string encoded;  // the value type and the value, as the file holds them
  };
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type_id;
    const void* data;
    uint64_t bytes;
  };
  void set(std::string_view key, std::string encoded);
  std::vector<Entry> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace rill::gguf
