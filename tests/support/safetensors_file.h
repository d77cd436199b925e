// Safetensors files as the tests write them: a header entry, and a file's
// bytes (the header's length as 8 little-endian bytes, the JSON header, the
// data). One writer for the API tests, the fault walk and the fuzz targets;
// no doctest in it, so that the fuzz targets include it too.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rill_test {

// A shape as safetensors writes it: "[4,8]".
inline std::string safetensors_shape(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) text += (d > 0 ? "," : "") + std::to_string(shape[d]);
  return text + "]";
}

// A header entry "name":{"dtype":...,"shape":...,"data_offsets":[begin,end]};
// shape is JSON text, so that a test may write a malformed one.
inline std::string safetensors_entry(const std::string& name, const std::string& dtype, const std::string& shape,
                                     uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// A file's bytes: header_length (the header's own length, unless a test
// claims another) as 8 little-endian bytes, the header, the data.
inline std::string safetensors_bytes(const std::string& header, const std::string& data, uint64_t header_length) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header_length >> (8 * i)) & 0xff));
  return bytes + header + data;
}

inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return safetensors_bytes(header, data, header.size());
}

// One F32 tensor of a checkpoint.
struct F32Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Tensors of the named shapes holding values of a fixed sequence (a linear
// congruential generator from seed), uniform in [-scale / 2, scale / 2).
inline std::vector<F32Tensor> random_f32_tensors(
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& shapes, uint32_t seed, float scale) {
  std::vector<F32Tensor> tensors;
  uint32_t state = seed;
  for (const auto& [name, shape] : shapes) {
    size_t count = 1;
    for (int64_t d : shape) count *= static_cast<size_t>(d);
    std::vector<float> values(count);
    for (float& v : values) {
      state = state * 1664525u + 1013904223u;
      v = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * scale;
    }
    tensors.push_back({name, shape, values});
  }
  return tensors;
}

// A checkpoint's bytes: the tensors' F32 values stored one after another, in order.
inline std::string f32_safetensors(const std::vector<F32Tensor>& tensors) {
  std::string header = "{", data;
  for (const F32Tensor& t : tensors) {
    const uint64_t begin = data.size();
    data.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(float));
    header += (header.size() > 1 ? "," : "") +
              safetensors_entry(t.name, "F32", safetensors_shape(t.shape), begin, data.size());
  }
  header += "}";
  // Padded with spaces to a multiple of 8, as the safetensors library
  // writes it, so that the data (and every f32 tensor) is 8-byte aligned.
  header.append((8 - header.size() % 8) % 8, ' ');
  return safetensors_bytes(header, data);
}

}  // namespace rill_test
