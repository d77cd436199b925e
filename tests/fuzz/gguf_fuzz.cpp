// The GGUF reader on raw bytes, starting from real files written by PyPI's
// gguf package (corpus/gguf, made by make_gguf_seeds.py).
#include "fuzz_support.h"
#include "gguf_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rill_fuzz::exercise_gguf(data, size);
  return 0;
}
