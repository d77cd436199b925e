#include "gguf_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "gguf_types.h"

// Values are read straight from the file's little-endian bytes.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the GGUF reader assumes a little-endian host");

namespace rill::gguf {
namespace {

constexpr uint32_t kMaxDims = 4;          // ggml tensors have at most four dimensions
constexpr uint64_t kMaxNameBytes = 65535; // the format's bound on key and tensor-name lengths
// The fewest bytes one metadata pair (key length, a 1-byte key, type, a
// 1-byte value) and one tensor info (name length, a 1-byte name, n_dims, one
// dim, type, offset) take: counts beyond what the rest of the file can hold
// are refused before any allocation.
constexpr uint64_t kMinKeyValueBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;

bool is_known_value_type(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::F64); }

template <class T>
T load(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// The integer stored at p as type; false for a non-integer type.
bool load_integer(ValueType type, const unsigned char* p, bool& negative, uint64_t& magnitude) {
  int64_t s = 0;
  negative = false;
  switch (type) {
    case ValueType::U8:
      magnitude = load<uint8_t>(p);
      return true;
    case ValueType::U16:
      magnitude = load<uint16_t>(p);
      return true;
    case ValueType::U32:
      magnitude = load<uint32_t>(p);
      return true;
    case ValueType::U64:
      magnitude = load<uint64_t>(p);
      return true;
    case ValueType::I8:
      s = load<int8_t>(p);
      break;
    case ValueType::I16:
      s = load<int16_t>(p);
      break;
    case ValueType::I32:
      s = load<int32_t>(p);
      break;
    case ValueType::I64:
      s = load<int64_t>(p);
      break;
    default:
      return false;
  }
  negative = s < 0;
  // The magnitude of INT64_MIN is 2^63, which fits in uint64_t.
  magnitude = negative ? 0 - static_cast<uint64_t>(s) : static_cast<uint64_t>(s);
  return true;
}

bool load_i64(ValueType type, const unsigned char* p, int64_t& out) {
  bool negative = false;
  uint64_t magnitude = 0;
  if (!load_integer(type, p, negative, magnitude)) return false;
  if (negative) {
    out = magnitude == (uint64_t{1} << 63) ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(magnitude);
    return true;
  }
  if (magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  out = static_cast<int64_t>(magnitude);
  return true;
}

bool load_f64(ValueType type, const unsigned char* p, double& out) {
  if (type == ValueType::F32) {
    out = load<float>(p);
    return true;
  }
  if (type == ValueType::F64) {
    out = load<double>(p);
    return true;
  }
  bool negative = false;
  uint64_t magnitude = 0;
  if (!load_integer(type, p, negative, magnitude)) return false;
  out = negative ? -static_cast<double>(magnitude) : static_cast<double>(magnitude);
  return true;
}

}  // namespace

uint64_t scalar_bytes(ValueType type) {
  switch (type) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
      return 8;
    case ValueType::STRING:
    case ValueType::ARRAY:
      break;
  }
  return 0;
}

const char* value_type_name(ValueType type) {
  switch (type) {
    case ValueType::U8:
      return "u8";
    case ValueType::I8:
      return "i8";
    case ValueType::U16:
      return "u16";
    case ValueType::I16:
      return "i16";
    case ValueType::U32:
      return "u32";
    case ValueType::I32:
      return "i32";
    case ValueType::F32:
      return "f32";
    case ValueType::BOOL:
      return "bool";
    case ValueType::STRING:
      return "string";
    case ValueType::ARRAY:
      return "array";
    case ValueType::U64:
      return "u64";
    case ValueType::I64:
      return "i64";
    case ValueType::F64:
      return "f64";
  }
  return "unknown";
}

bool Value::as_u64(uint64_t& out) const {
  bool negative = false;
  uint64_t magnitude = 0;
  if (raw_ == nullptr || type_ == ValueType::ARRAY || !load_integer(type_, raw_, negative, magnitude) || negative)
    return false;
  out = magnitude;
  return true;
}

bool Value::as_i64(int64_t& out) const {
  return raw_ != nullptr && type_ != ValueType::ARRAY && load_i64(type_, raw_, out);
}

bool Value::as_f64(double& out) const {
  return raw_ != nullptr && type_ != ValueType::ARRAY && load_f64(type_, raw_, out);
}

bool Value::as_bool(bool& out) const {
  if (type_ != ValueType::BOOL) return false;
  out = load<uint8_t>(raw_) != 0;
  return true;
}

bool Value::as_string(std::string_view& out) const {
  if (type_ != ValueType::STRING) return false;
  out = string_;
  return true;
}

bool Value::element_i64(uint64_t i, int64_t& out) const {
  return type_ == ValueType::ARRAY && i < count_ && scalar_bytes(element_type_) != 0 &&
         load_i64(element_type_, raw_ + i * scalar_bytes(element_type_), out);
}

bool Value::element_f64(uint64_t i, double& out) const {
  return type_ == ValueType::ARRAY && i < count_ && scalar_bytes(element_type_) != 0 &&
         load_f64(element_type_, raw_ + i * scalar_bytes(element_type_), out);
}

bool Value::element_string(uint64_t i, std::string_view& out) const {
  if (type_ != ValueType::ARRAY || element_type_ != ValueType::STRING || i >= strings_.size()) return false;
  out = strings_[i];
  return true;
}

const Value* Contents::find(std::string_view key) const {
  for (const KeyValue& kv : metadata) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

const TensorInfo* Contents::find_tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// Walks the bytes front to back; every read first checks that the bytes are
// there. context_ names the item being read for messages.
class Parser {
 public:
  Parser(const unsigned char* bytes, size_t size, std::string& error) : bytes_(bytes), size_(size), error_(error) {}

  bool run(Contents& out);

 private:
  uint64_t left() const { return size_ - pos_; }

  bool fail(const std::string& message) {
    error_ = context_.empty() ? message : context_ + ": " + message;
    return false;
  }

  bool need(uint64_t n, const char* what) {
    if (n <= left()) return true;
    return fail("truncated: " + std::string(what) + " at byte " + std::to_string(pos_) + " needs " +
                std::to_string(n) + " bytes, the file has " + std::to_string(left()) + " left");
  }

  bool read_u32(uint32_t& out, const char* what) {
    if (!need(4, what)) return false;
    out = load<uint32_t>(bytes_ + pos_);
    pos_ += 4;
    return true;
  }

  bool read_u64(uint64_t& out, const char* what) {
    if (!need(8, what)) return false;
    out = load<uint64_t>(bytes_ + pos_);
    pos_ += 8;
    return true;
  }

  bool read_string(std::string_view& out, const char* what) {
    uint64_t length = 0;
    if (!read_u64(length, what)) return false;
    if (length > left()) {
      return fail(std::string(what) + " length " + std::to_string(length) + " at byte " + std::to_string(pos_ - 8) +
                  " runs past the end of the file (" + std::to_string(left()) + " bytes left)");
    }
    out = std::string_view(reinterpret_cast<const char*>(bytes_ + pos_), length);
    pos_ += length;
    return true;
  }

  bool read_name(std::string_view& out, const char* what) {
    if (!read_string(out, what)) return false;
    if (out.empty()) return fail(std::string(what) + " is empty");
    if (out.size() > kMaxNameBytes) {
      return fail(std::string(what) + " is " + std::to_string(out.size()) + " bytes long, more than the format's " +
                  std::to_string(kMaxNameBytes));
    }
    return true;
  }

  bool read_value_type(uint32_t& id, const char* what) {
    if (!read_u32(id, what)) return false;
    if (!is_known_value_type(id)) return fail("unknown " + std::string(what) + " " + std::to_string(id));
    return true;
  }

  bool read_value(ValueType type, Value& out);
  bool read_array(Value& out);
  bool read_tensor_info(TensorInfo& out);
  bool check_tensor_data(Contents& out);

  const unsigned char* bytes_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string context_;
  std::string& error_;
};

bool Parser::read_value(ValueType type, Value& out) {
  out.type_ = type;
  if (type == ValueType::STRING) return read_string(out.string_, "string value");
  if (type == ValueType::ARRAY) return read_array(out);
  const uint64_t n = scalar_bytes(type);
  if (!need(n, value_type_name(type))) return false;
  out.raw_ = bytes_ + pos_;
  pos_ += n;
  return true;
}

bool Parser::read_array(Value& out) {
  uint32_t element_id = 0;
  if (!read_value_type(element_id, "array element type")) return false;
  const auto element = static_cast<ValueType>(element_id);
  if (element == ValueType::ARRAY) return fail("arrays of arrays are not supported");
  uint64_t count = 0;
  if (!read_u64(count, "array length")) return false;
  out.element_type_ = element;
  out.count_ = count;
  if (element == ValueType::STRING) {
    // Each string takes at least its 8-byte length.
    if (count > left() / 8) {
      return fail("array of " + std::to_string(count) + " strings cannot fit in the " + std::to_string(left()) +
                  " bytes left");
    }
    out.strings_.resize(count);
    for (std::string_view& s : out.strings_) {
      if (!read_string(s, "array string")) return false;
    }
    return true;
  }
  const uint64_t n = scalar_bytes(element);
  if (count > left() / n) {
    return fail("array of " + std::to_string(count) + " " + value_type_name(element) + " values cannot fit in the " +
                std::to_string(left()) + " bytes left");
  }
  out.raw_ = bytes_ + pos_;
  pos_ += count * n;
  return true;
}

bool Parser::read_tensor_info(TensorInfo& out) {
  if (!read_name(out.name, "tensor name")) return false;
  context_ += " '" + std::string(out.name) + "'";
  uint32_t n_dims = 0;
  if (!read_u32(n_dims, "dimension count")) return false;
  if (n_dims == 0 || n_dims > kMaxDims) {
    return fail(std::to_string(n_dims) + " dimensions; a tensor has 1 to " + std::to_string(kMaxDims));
  }
  out.dims.resize(n_dims);
  uint64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    if (!read_u64(out.dims[d], "dimension")) return false;
    const uint64_t dim = out.dims[d];
    if (dim == 0) return fail("dimension " + std::to_string(d) + " is 0");
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements) {
      return fail("dimensions overflow: the element count exceeds 2^63 at dimension " + std::to_string(d) + " (" +
                  std::to_string(dim) + ")");
    }
    elements *= dim;
  }
  if (!read_u32(out.type_id, "tensor type")) return false;
  const TensorTypeTraits* traits = tensor_type_traits(out.type_id);
  if (traits == nullptr) return fail("unknown tensor type id " + std::to_string(out.type_id));
  if (out.dims[0] % traits->block_elems != 0) {
    return fail("dimension 0 (" + std::to_string(out.dims[0]) + ") is not a multiple of " + traits->name +
                "'s block of " + std::to_string(traits->block_elems));
  }
  // elements < 2^63 and block_bytes / block_elems <= 4 keep this in range,
  // but the check costs nothing against a future type.
  const uint64_t blocks = elements / traits->block_elems;
  if (blocks > std::numeric_limits<uint64_t>::max() / traits->block_bytes) return fail("byte size overflows");
  out.bytes = blocks * traits->block_bytes;
  return read_u64(out.offset, "data offset");
}

bool Parser::check_tensor_data(Contents& out) {
  // Without tensors the data section (and the padding before it) may be absent.
  if (out.tensors.empty()) return true;
  if (out.data_offset > size_) {
    return fail("truncated: the data section starts at byte " + std::to_string(out.data_offset) + " but the file has " +
                std::to_string(size_) + " bytes");
  }
  const uint64_t data_bytes = size_ - out.data_offset;
  std::vector<size_t> order(out.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) {
    TensorInfo& t = out.tensors[i];
    order[i] = i;
    context_ = "tensor '" + std::string(t.name) + "'";
    if (t.offset % out.alignment != 0) {
      return fail("data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                  std::to_string(out.alignment));
    }
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset) {
      return fail("data [" + std::to_string(t.offset) + ", +" + std::to_string(t.bytes) +
                  " bytes) runs past the end of the data section (" + std::to_string(data_bytes) + " bytes)");
    }
    t.data = bytes_ + out.data_offset + t.offset;
  }
  context_.clear();
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return out.tensors[a].offset < out.tensors[b].offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const TensorInfo& prev = out.tensors[order[i - 1]];
    const TensorInfo& next = out.tensors[order[i]];
    if (next.offset < prev.offset + prev.bytes) {
      return fail("tensors '" + std::string(prev.name) + "' and '" + std::string(next.name) + "' overlap");
    }
  }
  return true;
}

bool Parser::run(Contents& out) {
  if (!need(4, "magic")) return false;
  if (std::memcmp(bytes_, "GGUF", 4) != 0) return fail("not a GGUF file: the first four bytes are not \"GGUF\"");
  pos_ = 4;
  if (!read_u32(out.version, "version")) return false;
  if ((out.version & 0xffffu) == 0 && out.version != 0) {
    return fail("big-endian GGUF files are not supported (version field " + std::to_string(out.version) + ")");
  }
  if (out.version != 2 && out.version != 3) {
    return fail("GGUF version " + std::to_string(out.version) + " is not supported (2 and 3 are)");
  }
  uint64_t tensor_count = 0, kv_count = 0;
  if (!read_u64(tensor_count, "tensor count") || !read_u64(kv_count, "metadata count")) return false;
  if (kv_count > left() / kMinKeyValueBytes) {
    return fail("metadata count " + std::to_string(kv_count) + " cannot fit in the " + std::to_string(left()) +
                " bytes that follow");
  }
  if (tensor_count > left() / kMinTensorInfoBytes) {
    return fail("tensor count " + std::to_string(tensor_count) + " cannot fit in the " + std::to_string(left()) +
                " bytes that follow");
  }

  out.metadata.resize(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    KeyValue& kv = out.metadata[i];
    context_ = "metadata pair " + std::to_string(i);
    if (!read_name(kv.key, "key")) return false;
    context_ = "metadata '" + std::string(kv.key) + "'";
    uint32_t type = 0;
    if (!read_value_type(type, "value type") || !read_value(static_cast<ValueType>(type), kv.value)) return false;
  }
  context_.clear();
  std::vector<std::string_view> keys(out.metadata.size());
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = out.metadata[i].key;
  std::sort(keys.begin(), keys.end());
  if (const auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end()) {
    return fail("metadata key '" + std::string(*dup) + "' appears twice");
  }

  if (const Value* alignment = out.find("general.alignment")) {
    uint64_t a = 0;
    if (alignment->type() != ValueType::U32 || !alignment->as_u64(a)) {
      return fail(std::string("general.alignment is a ") + value_type_name(alignment->type()) + ", expected a u32");
    }
    if (a == 0 || (a & (a - 1)) != 0) return fail("general.alignment " + std::to_string(a) + " is not a power of two");
    out.alignment = static_cast<uint32_t>(a);
  }

  out.tensors.resize(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    context_ = "tensor " + std::to_string(i);
    if (!read_tensor_info(out.tensors[i])) return false;
  }
  context_.clear();
  std::vector<std::string_view> names(out.tensors.size());
  for (size_t i = 0; i < names.size(); ++i) names[i] = out.tensors[i].name;
  std::sort(names.begin(), names.end());
  if (const auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end()) {
    return fail("tensor name '" + std::string(*dup) + "' appears twice");
  }

  // pos_ <= size_ < 2^64 - 2^32, so rounding up cannot wrap.
  out.data_offset = (pos_ + out.alignment - 1) / out.alignment * out.alignment;
  return check_tensor_data(out);
}

rill_status parse(const unsigned char* bytes, size_t size, Contents& out, std::string& error) {
  out = Contents{};
  Parser parser(bytes, size, error);
  try {
    return parser.run(out) ? RILL_OK : RILL_ERROR_IO;
  } catch (const std::bad_alloc&) {
    error = "out of memory while reading the header";
    return RILL_ERROR_OUT_OF_MEMORY;
  }
}

rill_status File::open(const std::string& path, std::unique_ptr<File>& out, std::string& error) {
  std::unique_ptr<File> result(new File());
  result->path_ = path;
  // The platform layer refuses anything but a regular file without waiting
  // on a FIFO.
  if (!result->mapping_.open(path, error)) return RILL_ERROR_IO;
  const rill_status status = parse(result->mapping_.data(), result->mapping_.size(), result->contents_, error);
  if (status != RILL_OK) return status;
  out = std::move(result);
  return RILL_OK;
}

}  // namespace rill::gguf
