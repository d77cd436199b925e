// The tensor types a GGUF file may name (ggml's type ids, which the format
// fixes for good) with their block geometry, and the one place that says
// which of them rill can use as a rill_dtype.
#pragma once

#include <cstdint>

#include "rill.h"

namespace rill::gguf {

struct TensorTypeTraits {
  const char* name;      // as llama.cpp prints it: "F32", "Q4_K", ...
  uint32_t block_elems;  // elements per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
};

// The traits of ggml type id, or nullptr for an id no GGUF file may hold
// (never assigned, or retired from the format).
const TensorTypeTraits* tensor_type_traits(uint32_t type_id);

// The rill dtype that holds GGUF tensor type type_id in place, bit for bit.
// False for a type rill does not (yet) run: the caller names the tensor and
// tensor_type_traits(type_id)->name in its refusal.
bool tensor_type_to_rill(uint32_t type_id, rill_dtype& out);

}  // namespace rill::gguf
