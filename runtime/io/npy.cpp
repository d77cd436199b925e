#include "npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "platform.h"

namespace rill::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;

struct FileDeleter {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileDeleter>;

// The text after `'key':` in a header dict, with leading spaces skipped, or
// npos when the key is absent.
size_t value_start(const std::string& header, const std::string& key) {
  const std::string quoted = "'" + key + "'";
  size_t at = header.find(quoted);
  if (at == std::string::npos) return at;
  at = header.find(':', at + quoted.size());
  if (at == std::string::npos) return at;
  ++at;
  while (at < header.size() && header[at] == ' ') ++at;
  return at;
}

bool parse_header(const std::string& header, NpyArray& out, std::string& problem) {
  const size_t descr = value_start(header, "descr");
  if (descr == std::string::npos) return problem = "header has no 'descr'", false;
  const size_t descr_end = header.find('\'', descr + 1);
  if (header[descr] != '\'' || descr_end == std::string::npos) return problem = "header 'descr' is not a string", false;
  const std::string dtype = header.substr(descr + 1, descr_end - descr - 1);
  if (dtype != "<f4" && dtype != "=f4") {
    return problem = "dtype is '" + dtype + "', expected float32 ('<f4'); convert with .astype(np.float32)", false;
  }
  const size_t order = value_start(header, "fortran_order");
  if (order == std::string::npos) return problem = "header has no 'fortran_order'", false;
  if (header.compare(order, 5, "False") != 0) return problem = "array is in Fortran order, expected C order", false;
  const size_t shape = value_start(header, "shape");
  if (shape == std::string::npos || header[shape] != '(') return problem = "header has no 'shape' tuple", false;
  const size_t shape_end = header.find(')', shape);
  if (shape_end == std::string::npos) return problem = "header 'shape' is not closed", false;
  out.shape.clear();
  size_t at = shape + 1;
  while (at < shape_end) {
    while (at < shape_end && (header[at] == ' ' || header[at] == ',')) ++at;
    if (at >= shape_end) break;
    int64_t dim = 0;
    size_t digits = 0;
    while (at < shape_end && header[at] >= '0' && header[at] <= '9') {
      if (dim > (INT64_MAX - 9) / 10) return problem = "shape dim too large", false;
      dim = dim * 10 + (header[at] - '0');
      ++at;
      ++digits;
    }
    if (digits == 0) return problem = "shape holds something that is not a size", false;
    while (at < shape_end && header[at] == 'L') ++at;  // Python 2 long suffix
    out.shape.push_back(dim);
  }
  return true;
}

}  // namespace

bool read_npy_f32(const std::string& path, NpyArray& out, std::string& error) {
  // The file's size bounds the header and the data, so that a hostile header
  // cannot make us allocate what the file does not hold.
  uint64_t file_bytes = 0;
  std::string open_error;
  File file(platform::open_regular_file(path, file_bytes, open_error));
  if (!file) return error = path + ": " + open_error, false;
  unsigned char preamble[10];
  if (std::fread(preamble, 1, 8, file.get()) != 8 || std::memcmp(preamble, kMagic, kMagicBytes) != 0) {
    return error = path + ": not a .npy file (no \\x93NUMPY magic)", false;
  }
  const int major = preamble[6];
  size_t header_bytes = 0;
  if (major == 1) {
    if (std::fread(preamble + 8, 1, 2, file.get()) != 2) return error = path + ": truncated .npy header", false;
    header_bytes = preamble[8] | (static_cast<size_t>(preamble[9]) << 8);
  } else if (major == 2 || major == 3) {
    unsigned char length[4];
    if (std::fread(length, 1, 4, file.get()) != 4) return error = path + ": truncated .npy header", false;
    header_bytes = length[0] | (static_cast<size_t>(length[1]) << 8) | (static_cast<size_t>(length[2]) << 16) |
                   (static_cast<size_t>(length[3]) << 24);
  } else {
    return error = path + ": unsupported .npy version " + std::to_string(major), false;
  }
  const uint64_t preamble_bytes = major == 1 ? 10 : 12;
  if (header_bytes > file_bytes - preamble_bytes) {
    return error = path + ": truncated: the .npy header claims " + std::to_string(header_bytes) +
                   " bytes but the file holds " + std::to_string(file_bytes - preamble_bytes) + " after the preamble",
           false;
  }
  std::string header(header_bytes, '\0');
  if (std::fread(header.data(), 1, header_bytes, file.get()) != header_bytes) {
    return error = path + ": truncated .npy header", false;
  }
  NpyArray result;
  std::string problem;
  if (!parse_header(header, result, problem)) return error = path + ": " + problem, false;
  uint64_t count = 1;
  for (int64_t d : result.shape) {
    if (d != 0 && count > UINT64_MAX / 4 / static_cast<uint64_t>(d)) return error = path + ": shape overflows", false;
    count *= static_cast<uint64_t>(d);
  }
  const uint64_t data_bytes = file_bytes - preamble_bytes - header_bytes;
  if (count > data_bytes / sizeof(float)) {
    return error = path + ": truncated: the shape needs " + std::to_string(count) + " float32 values but the file holds " +
                   std::to_string(data_bytes) + " bytes of data",
           false;
  }
  result.data.resize(static_cast<size_t>(count));
  if (std::fread(result.data.data(), sizeof(float), result.data.size(), file.get()) != result.data.size()) {
    return error = path + ": truncated: the shape needs " + std::to_string(count) + " float32 values", false;
  }
  if (std::fgetc(file.get()) != EOF) {
    return error = path + ": trailing bytes after the " + std::to_string(count) + " values the shape names", false;
  }
  out = std::move(result);
  return true;
}

bool write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data, std::string& error) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  uint64_t count = 1;
  for (int64_t d : shape) {
    dict += std::to_string(d) + ",";
    if (shape.size() > 1) dict += " ";
    count *= static_cast<uint64_t>(d);
  }
  if (shape.size() > 1) dict.resize(dict.size() - 2);
  dict += "), }";
  // Pad with spaces and a newline so that the data starts on a 64-byte boundary.
  const size_t unpadded = kMagicBytes + 2 + 2 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  if (dict.size() > 65535) return error = path + ": shape too long for a version 1.0 header", false;
  // Written beside path and renamed over it once complete, so that a failed
  // write never leaves a file at path that looks like a result.
  const std::string partial = path + ".partial-" + std::to_string(platform::process_id());
  File file(platform::open_file(partial, "wb"));
  if (!file) return error = path + ": cannot create: " + std::strerror(errno), false;
  const unsigned char version_and_length[4] = {1, 0, static_cast<unsigned char>(dict.size() & 0xff),
                                               static_cast<unsigned char>(dict.size() >> 8)};
  bool ok = std::fwrite(kMagic, 1, kMagicBytes, file.get()) == kMagicBytes &&
            std::fwrite(version_and_length, 1, 4, file.get()) == 4 &&
            std::fwrite(dict.data(), 1, dict.size(), file.get()) == dict.size() &&
            std::fwrite(data, sizeof(float), static_cast<size_t>(count), file.get()) == count;
  ok = (std::fclose(file.release()) == 0) && ok;
  if (!ok) {
    error = path + ": write failed: " + std::strerror(errno);
    platform::remove_file(partial);
    return false;
  }
  if (std::string reason; !platform::replace_file(partial, path, reason)) {
    error = path + ": cannot create: " + reason;
    platform::remove_file(partial);
    return false;
  }
  return true;
}

}  // namespace rill::io
