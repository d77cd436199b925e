// A reader for GGUF (llama.cpp's model format), versions 2 and 3: the header,
// the metadata key/value pairs, the tensor infos and the aligned data section.
// Every count, length, type id, dimension and offset is checked against the
// bytes actually present before anything is allocated for it, so a hostile
// file costs at most memory proportional to its size and gets RILL_ERROR_IO
// with a message naming what is wrong.
//
// Two entry points: parse() on bytes in memory (what a fuzz target drives)
// and File::open() on a path, which maps the file read-only and parses the
// mapping. Neither touches rill_last_error(); the caller adds its context.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "platform.h"
#include "rill.h"

namespace rill::gguf {

// Metadata value types, as the format numbers them.
enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

// "u32", "string", ... for messages.
const char* value_type_name(ValueType type);

// Bytes of one scalar of type, or 0 for STRING / ARRAY / an unknown id.
uint64_t scalar_bytes(ValueType type);

// One metadata value. Scalars and numeric array elements are read from the
// parsed bytes on access (little-endian, as stored); strings are views into
// those bytes. Everything borrows the bytes handed to parse().
class Value {
 public:
  ValueType type() const { return type_; }

  // The value as an integer / real / boolean / string. False (out untouched)
  // when the type does not fit: integers convert between widths only when the
  // value is representable; as_f64 takes any integer or real.
  bool as_u64(uint64_t& out) const;
  bool as_i64(int64_t& out) const;
  bool as_f64(double& out) const;
  bool as_bool(bool& out) const;
  bool as_string(std::string_view& out) const;

  // Arrays (type() == ARRAY): the element type and count, and element i read
  // with the same rules as the scalar accessors (false past the end).
  ValueType element_type() const { return element_type_; }
  uint64_t size() const { return count_; }
  bool element_i64(uint64_t i, int64_t& out) const;
  bool element_f64(uint64_t i, double& out) const;
  bool element_string(uint64_t i, std::string_view& out) const;

  // The scalar's bytes, or a numeric array's first element's, as stored
  // (little-endian; size() * scalar_bytes(element_type()) of them for an
  // array): what a writer copies.
  const unsigned char* raw() const { return raw_; }

 private:
  friend class Parser;
  ValueType type_ = ValueType::U8;
  ValueType element_type_ = ValueType::U8;
  const unsigned char* raw_ = nullptr;  // the scalar, or the first numeric element
  uint64_t count_ = 0;
  std::string_view string_;
  std::vector<std::string_view> strings_;  // string arrays
};

struct KeyValue {
  std::string_view key;
  Value value;
};

struct TensorInfo {
  std::string_view name;
  // ggml's order: dims[0] varies fastest (a [rows, cols] matrix is {cols, rows}).
  std::vector<uint64_t> dims;
  uint32_t type_id = 0;              // see gguf_types.h
  uint64_t offset = 0;               // from the start of the data section
  uint64_t bytes = 0;                // dims and type's block geometry
  const unsigned char* data = nullptr;  // inside the parsed bytes
};

struct Contents {
  uint32_t version = 0;
  uint32_t alignment = 32;  // general.alignment, or the format's default
  uint64_t data_offset = 0; // where the data section starts
  std::vector<KeyValue> metadata;
  std::vector<TensorInfo> tensors;

  const Value* find(std::string_view key) const;
  const TensorInfo* find_tensor(std::string_view name) const;
};

// Parses size bytes at bytes (which must stay alive and unchanged while out
// is used). RILL_OK, or RILL_ERROR_IO with error naming what is wrong (and
// out unspecified). Never allocates more than a small multiple of size.
rill_status parse(const unsigned char* bytes, size_t size, Contents& out, std::string& error);

// A GGUF file mapped read-only; tensors' data point into the mapping.
class File {
 public:
  // Opens, maps and parses the file at path: RILL_OK, or RILL_ERROR_IO with
  // error naming what is wrong (not a regular file, unreadable, or any
  // parse() failure). Opening never blocks on a FIFO.
  static rill_status open(const std::string& path, std::unique_ptr<File>& out, std::string& error);

  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  const Contents& contents() const { return contents_; }

 private:
  File() = default;
  std::string path_;
  platform::MappedFile mapping_;
  Contents contents_;
};

}  // namespace rill::gguf
