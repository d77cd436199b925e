// The runtime config reader: any text as rill_context_create's TOML, then the
// same text through rill_info_report. Either may refuse it; neither may crash.
#include <string>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);  // a NUL inside ends the C string early
  rill_context* ctx = nullptr;
  if (rill_context_create(text.c_str(), &ctx) == RILL_OK) rill_context_destroy(ctx);
  size_t required = 0;
  char report[256];
  (void)rill_info_report(text.c_str(), report, sizeof report, &required);
  return 0;
}
