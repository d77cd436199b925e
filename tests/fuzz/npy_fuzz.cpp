// The .npy reader of `rill run`: any bytes as a file.
#include <string>

#include "fuzz_support.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rill_fuzz::write_scratch_file("input.npy", data, size);
  rill::io::NpyArray array;
  std::string error;
  (void)rill::io::read_npy_f32(path, array, error);
  return 0;
}
