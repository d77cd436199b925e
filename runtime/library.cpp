// Library-wide facts: the version and the dtype table.
#include "errors.h"
#include "rill.h"

extern "C" {

RILL_API uint32_t rill_version_number(void) { return RILL_VERSION_NUMBER; }

RILL_API size_t rill_dtype_size(rill_dtype dtype) {
  switch (rill::enum_value(dtype)) {
    case RILL_DTYPE_F32: return 4;
    case RILL_DTYPE_F16:
    case RILL_DTYPE_BF16: return 2;
    default: return 0;
  }
}

RILL_API const char* rill_dtype_name(rill_dtype dtype) {
  switch (rill::enum_value(dtype)) {
    case RILL_DTYPE_F32: return "f32";
    case RILL_DTYPE_F16: return "f16";
    case RILL_DTYPE_BF16: return "bf16";
    default: return "invalid";
  }
}

}  // extern "C"
