#include "gguf_writer.h"

#include <cstring>

#include "platform.h"

namespace rill::gguf {
namespace {

template <class T>
void append(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // GGUF is little-endian, as every platform rill builds for
  out.append(bytes, sizeof(T));
}

void append_string(std::string& out, std::string_view text) {
  append<uint64_t>(out, text.size());
  out.append(text.data(), text.size());
}

uint64_t padding(uint64_t offset, uint64_t alignment) { return (alignment - offset % alignment) % alignment; }

// An array of numbers of type element as the file holds it.
template <class T>
std::string encode_array(ValueType element, const std::vector<T>& values) {
  std::string encoded;
  append<uint32_t>(encoded, static_cast<uint32_t>(ValueType::ARRAY));
  append<uint32_t>(encoded, static_cast<uint32_t>(element));
  append<uint64_t>(encoded, values.size());
  for (const T v : values) append<T>(encoded, v);
  return encoded;
}

}  // namespace

void Writer::set(std::string_view key, std::string encoded) {
  for (Entry& e : metadata_) {
    if (e.key == key) {
      e.encoded = std::move(encoded);
      return;
    }
  }
  metadata_.push_back({std::string(key), std::move(encoded)});
}

void Writer::copy(std::string_view key, const Value& value) {
  std::string encoded;
  append<uint32_t>(encoded, static_cast<uint32_t>(value.type()));
  if (value.type() == ValueType::STRING) {
    std::string_view text;
    value.as_string(text);
    append_string(encoded, text);
  } else if (value.type() == ValueType::ARRAY) {
    append<uint32_t>(encoded, static_cast<uint32_t>(value.element_type()));
    append<uint64_t>(encoded, value.size());
    if (value.element_type() == ValueType::STRING) {
      for (uint64_t i = 0; i < value.size(); ++i) {
        std::string_view text;
        value.element_string(i, text);
        append_string(encoded, text);
      }
    } else {
      encoded.append(reinterpret_cast<const char*>(value.raw()),
                     static_cast<size_t>(value.size() * scalar_bytes(value.element_type())));
    }
  } else {
    encoded.append(reinterpret_cast<const char*>(value.raw()), static_cast<size_t>(scalar_bytes(value.type())));
  }
  set(key, std::move(encoded));
}

void Writer::set_u32(std::string_view key, uint32_t value) {
  std::string encoded;
  append<uint32_t>(encoded, static_cast<uint32_t>(ValueType::U32));
  append<uint32_t>(encoded, value);
  set(key, std::move(encoded));
}

void Writer::set_f32(std::string_view key, float value) {
  std::string encoded;
  append<uint32_t>(encoded, static_cast<uint32_t>(ValueType::F32));
  append<float>(encoded, value);
  set(key, std::move(encoded));
}

void Writer::set_bool(std::string_view key, bool value) {
  std::string encoded;
  append<uint32_t>(encoded, static_cast<uint32_t>(ValueType::BOOL));
  append<uint8_t>(encoded, value ? 1 : 0);
  set(key, std::move(encoded));
}

void Writer::set_string(std::string_view key, std::string_view value) {
  std::string encoded;
  append<uint32_t>(encoded, static_cast<uint32_t>(ValueType::STRING));
  append_string(encoded, value);
  set(key, std::move(encoded));
}

void Writer::set_strings(std::string_view key, const std::vector<std::string>& values) {
  std::string encoded;
  append<uint32_t>(encoded, static_cast<uint32_t>(ValueType::ARRAY));
  append<uint32_t>(encoded, static_cast<uint32_t>(ValueType::STRING));
  append<uint64_t>(encoded, values.size());
  for (const std::string& v : values) append_string(encoded, v);
  set(key, std::move(encoded));
}

void Writer::set_i32s(std::string_view key, const std::vector<int32_t>& values) {
  set(key, encode_array(ValueType::I32, values));
}

void Writer::set_f32s(std::string_view key, const std::vector<float>& values) {
  set(key, encode_array(ValueType::F32, values));
}

void Writer::add_tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type_id, const void* data,
                        uint64_t bytes) {
  tensors_.push_back({std::string(name), std::move(dims), type_id, data, bytes});
}

rill_status Writer::write(const std::string& path, uint32_t alignment, std::string& error) const {
  std::string header = "GGUF";
  append<uint32_t>(header, 3);
  append<uint64_t>(header, tensors_.size());
  append<uint64_t>(header, metadata_.size());
  for (const Entry& e : metadata_) {
    append_string(header, e.key);
    header += e.encoded;
  }
  uint64_t offset = 0;  // within the data section
  for (const Tensor& t : tensors_) {
    append_string(header, t.name);
    append<uint32_t>(header, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) append<uint64_t>(header, d);
    append<uint32_t>(header, t.type_id);
    append<uint64_t>(header, offset);
    offset += t.bytes + padding(t.bytes, alignment);
  }
  header.append(static_cast<size_t>(padding(header.size(), alignment)), '\0');
  const std::string zeros(alignment, '\0');
  const bool written = platform::write_file_replacing(
      path,
      [&](std::FILE* file) {
        if (std::fwrite(header.data(), 1, header.size(), file) != header.size()) return false;
        for (const Tensor& t : tensors_) {
          const auto pad = static_cast<size_t>(padding(t.bytes, alignment));
          if (std::fwrite(t.data, 1, static_cast<size_t>(t.bytes), file) != t.bytes ||
              std::fwrite(zeros.data(), 1, pad, file) != pad) {
            return false;
          }
        }
        return true;
      },
      error);
  return written ? RILL_OK : RILL_ERROR_IO;
}

}  // namespace rill::gguf
