// A reader for the safetensors format: an 8-byte little-endian header length,
// a JSON header naming each tensor's dtype, shape and byte range, then the
// data. The file is memory-mapped; tensors are views into the mapping, each
// holding it (owner), so that the mapping outlives the file object for as
// long as a tensor read in place holds a view's owner.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "platform.h"
#include "rill.h"

namespace rill::io {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;           // as written in the file: "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;  // empty for a scalar
  const void* data = nullptr;  // inside the mapping
  uint64_t bytes = 0;
  // Set where data may be read in place for the life of a tensor: keeps the
  // memory it lies in (the file's mapping) alive. Null: copy it.
  std::shared_ptr<const void> owner;
};

class SafetensorsFile {
 public:
  // Maps and validates the file at path: header length and JSON, every entry's
  // dtype, shape and data_offsets, that each byte range fits the file and
  // matches shape times dtype size, and that no two ranges overlap.
  // Returns RILL_OK, or RILL_ERROR_IO with error naming the file and, where
  // one is at fault, the tensor (librill's callers add the function's name).
  // Out of memory throws std::bad_alloc. Never touches the thread's last error.
  static rill_status open(const std::string& path, std::unique_ptr<SafetensorsFile>& out, std::string& error);

  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // The tensor called name, or nullptr.
  const SafetensorsTensor* find(const std::string& name) const;
  // Drops the views' owners, so that a load copies them instead of reading
  // them in place (rill_lm_load_options.copy_weights), and the mapping closes
  // with this object.
  void make_views_copied();

 private:
  SafetensorsFile() = default;

  std::string path_;
  std::shared_ptr<platform::MappedFile> mapping_ = std::make_shared<platform::MappedFile>();
  std::vector<SafetensorsTensor> tensors_;
};

// Bytes per element of a safetensors dtype name, or 0 for an unknown one.
uint64_t safetensors_dtype_size(const std::string& dtype);

// The rill dtype of "F32", "F16" or "BF16"; false for any other name.
bool safetensors_dtype_to_rill(const std::string& dtype, rill_dtype& out);

}  // namespace rill::io
