#include "safetensors.h"

#include "json_release.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace rill::io {
namespace {

// Headers larger than this are refused before any parsing (the format's
// reference implementation uses the same bound).
constexpr uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

uint64_t safetensors_dtype_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

bool safetensors_dtype_to_rill(const std::string& dtype, rill_dtype& out) {
  if (dtype == "F32")
    out = RILL_DTYPE_F32;
  else if (dtype == "F16")
    out = RILL_DTYPE_F16;
  else if (dtype == "BF16")
    out = RILL_DTYPE_BF16;
  else
    return false;
  return true;
}

void SafetensorsFile::make_views_copied() {
  for (SafetensorsTensor& t : tensors_) t.owner = nullptr;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  for (const SafetensorsTensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

rill_status SafetensorsFile::open(const std::string& path, std::unique_ptr<SafetensorsFile>& out,
                                  std::string& error) {
  auto io_error = [&](const std::string& text) {
    error = path + ": " + text;
    return RILL_ERROR_IO;
  };

  std::unique_ptr<SafetensorsFile> result(new SafetensorsFile());
  result->path_ = path;
  std::string problem;
  if (!result->mapping_->open(path, problem)) return io_error(problem);
  const uint64_t file_bytes = result->mapping_->size();
  if (file_bytes < 8) {
    return io_error("truncated: " + std::to_string(file_bytes) + " bytes, shorter than the 8-byte header length");
  }
  const unsigned char* bytes = result->mapping_->data();

  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | bytes[i];
  if (header_bytes > kMaxHeaderBytes) {
    return io_error("header length " + std::to_string(header_bytes) + " exceeds the " +
                    std::to_string(kMaxHeaderBytes) + "-byte limit (not a safetensors file?)");
  }
  if (header_bytes > file_bytes - 8) {
    return io_error("truncated: the header claims " + std::to_string(header_bytes) + " bytes but the file has " +
                    std::to_string(file_bytes - 8) + " after the length");
  }
  const uint64_t data_start = 8 + header_bytes;
  const uint64_t data_bytes = file_bytes - data_start;

  nlohmann::json header;
  const JsonRelease release(header);
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + data_start);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number too large
    return io_error(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return io_error("header is not a JSON object");

  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string tensor = "tensor '" + name + "': ";
    if (!entry.is_object()) return io_error(tensor + "entry is not a JSON object");
    const auto dtype_it = entry.find("dtype");
    const auto shape_it = entry.find("shape");
    const auto offsets_it = entry.find("data_offsets");
    if (dtype_it == entry.end() || !dtype_it->is_string()) return io_error(tensor + "missing string 'dtype'");
    if (shape_it == entry.end() || !shape_it->is_array()) return io_error(tensor + "missing array 'shape'");
    if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
      return io_error(tensor + "missing 'data_offsets' [begin, end]");
    }
    SafetensorsTensor t;
    t.name = name;
    t.dtype = dtype_it->get<std::string>();
    const uint64_t element_bytes = safetensors_dtype_size(t.dtype);
    if (element_bytes == 0) return io_error(tensor + "unknown dtype \"" + t.dtype + "\"");
    uint64_t expected_bytes = element_bytes;
    for (const auto& dim : *shape_it) {
      if (!dim.is_number_unsigned()) return io_error(tensor + "shape holds a value that is not a size: " + dim.dump());
      const uint64_t d = dim.get<uint64_t>();
      if (d > static_cast<uint64_t>(INT64_MAX) || (d != 0 && expected_bytes > UINT64_MAX / d)) {
        return io_error(tensor + "shape overflows");
      }
      t.shape.push_back(static_cast<int64_t>(d));
      expected_bytes *= d;
    }
    for (const auto& offset : *offsets_it) {
      if (!offset.is_number_unsigned()) return io_error(tensor + "data_offsets holds a non-size: " + offset.dump());
    }
    const uint64_t begin = (*offsets_it)[0].get<uint64_t>();
    const uint64_t end = (*offsets_it)[1].get<uint64_t>();
    if (end < begin) {
      return io_error(tensor + "data_offsets end " + std::to_string(end) + " before begin " + std::to_string(begin));
    }
    if (end > data_bytes) {
      return io_error(tensor + "truncated: data ends at byte " + std::to_string(end) + " of the data section but the " +
                      "file holds only " + std::to_string(data_bytes));
    }
    if (end - begin != expected_bytes) {
      return io_error(tensor + "holds " + std::to_string(end - begin) + " bytes but shape " + shape_text(t.shape) +
                      " of " + t.dtype + " needs " + std::to_string(expected_bytes));
    }
    t.data = bytes + data_start + begin;
    t.owner = result->mapping_;
    t.bytes = end - begin;
    ranges.push_back({begin, end, result->tensors_.size()});
    result->tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      return io_error("tensors '" + result->tensors_[ranges[i - 1].index].name + "' and '" +
                      result->tensors_[ranges[i].index].name + "' overlap");
    }
  }
  out = std::move(result);
  return RILL_OK;
}

}  // namespace rill::io
