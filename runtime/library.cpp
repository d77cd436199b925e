// Library-wide facts: the version and the dtype table (whose one home,
// shared with the backends, is rill_backend.h).
#include "errors.h"
#include "rill.h"
#include "rill_backend.h"

namespace {

// dtype as the header's tables read it, whatever integer the caller passed: a
// negative one (outside the enum's range) becomes MAX_ENUM, which is no dtype.
rill_dtype checked(rill_dtype dtype) {
  const int32_t raw = rill::enum_value(dtype);
  return raw < 0 ? RILL_DTYPE_MAX_ENUM : static_cast<rill_dtype>(raw);
}

}  // namespace

extern "C" {

RILL_API uint32_t rill_version_number(void) { return RILL_VERSION_NUMBER; }

RILL_API size_t rill_dtype_size(rill_dtype dtype) {
  return rill_backend_block_elements(checked(dtype)) == 1 ? rill_backend_block_bytes(checked(dtype)) : 0;
}

RILL_API size_t rill_dtype_block_elements(rill_dtype dtype) { return rill_backend_block_elements(checked(dtype)); }

RILL_API size_t rill_dtype_block_bytes(rill_dtype dtype) { return rill_backend_block_bytes(checked(dtype)); }

RILL_API const char* rill_dtype_name(rill_dtype dtype) { return rill_backend_dtype_name(checked(dtype)); }

}  // extern "C"
