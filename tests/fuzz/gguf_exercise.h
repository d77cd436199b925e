// What both GGUF fuzz targets do with a file's bytes: parse them with the
// reader librill uses, read back every metadata value and array element and
// touch the first and last byte of every tensor's data (so that a pointer or
// size the reader got wrong shows up under ASan), and, when the bytes parse,
// load them as a tokenizer and as a language model through the C API, as a
// mod's .gguf file would be.
#pragma once

#include <cstddef>

namespace rill_fuzz {

void exercise_gguf(const unsigned char* bytes, size_t size);

}  // namespace rill_fuzz
