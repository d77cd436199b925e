// Reading and writing float32 arrays in NumPy's .npy format (versions 1-3,
// little-endian '<f4', C order), as `rill run` exchanges hidden states.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rill::io {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // row-major, product(shape) values
};

// Reads a float32 array from path. On failure returns false and sets error to
// a message naming the file and what is wrong (not .npy, another dtype,
// Fortran order, truncated data, ...).
bool read_npy_f32(const std::string& path, NpyArray& out, std::string& error);

// Writes data with the given shape as a version 1.0 '<f4' .npy file. On
// failure returns false and sets error.
bool write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data, std::string& error);

}  // namespace rill::io
