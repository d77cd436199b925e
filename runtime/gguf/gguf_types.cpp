#include "gguf_types.h"

#include <iterator>

namespace rill::gguf {
namespace {

// Indexed by type id; ids that were never assigned or were retired from the
// format (4, 5, 31-33, 36-38) have no name. Sizes as in the gguf package's
// GGML_QUANT_SIZES.
constexpr TensorTypeTraits kTypes[] = {
    {"F32", 1, 4},        {"F16", 1, 2},       {"Q4_0", 32, 18},    {"Q4_1", 32, 20},     {nullptr, 0, 0},
    {nullptr, 0, 0},      {"Q5_0", 32, 22},    {"Q5_1", 32, 24},    {"Q8_0", 32, 34},     {"Q8_1", 32, 40},
    {"Q2_K", 256, 84},    {"Q3_K", 256, 110},  {"Q4_K", 256, 144},  {"Q5_K", 256, 176},   {"Q6_K", 256, 210},
    {"Q8_K", 256, 292},   {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74}, {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
    {"IQ4_NL", 32, 18},   {"IQ3_S", 256, 110}, {"IQ2_S", 256, 82},  {"IQ4_XS", 256, 136}, {"I8", 1, 1},
    {"I16", 1, 2},        {"I32", 1, 4},       {"I64", 1, 8},       {"F64", 1, 8},        {"IQ1_M", 256, 56},
    {"BF16", 1, 2},       {nullptr, 0, 0},     {nullptr, 0, 0},     {nullptr, 0, 0},      {"TQ1_0", 256, 54},
    {"TQ2_0", 256, 66},   {nullptr, 0, 0},     {nullptr, 0, 0},     {nullptr, 0, 0},      {"MXFP4", 32, 17},
    {"NVFP4", 64, 36},    {"Q1_0", 128, 18},
};

}  // namespace

const TensorTypeTraits* tensor_type_traits(uint32_t type_id) {
  if (type_id >= std::size(kTypes) || kTypes[type_id].name == nullptr) return nullptr;
  return &kTypes[type_id];
}

bool tensor_type_to_rill(uint32_t type_id, rill_dtype& out) {
  switch (type_id) {
    case 0:
      out = RILL_DTYPE_F32;
      return true;
    case 1:
      out = RILL_DTYPE_F16;
      return true;
    case 30:
      out = RILL_DTYPE_BF16;
      return true;
    case 2:
      out = RILL_DTYPE_Q4_0;
      return true;
    case 6:
      out = RILL_DTYPE_Q5_0;
      return true;
    case 7:
      out = RILL_DTYPE_Q5_1;
      return true;
    case 8:
      out = RILL_DTYPE_Q8_0;
      return true;
    case 12:
      out = RILL_DTYPE_Q4_K;
      return true;
    case 13:
      out = RILL_DTYPE_Q5_K;
      return true;
    case 14:
      out = RILL_DTYPE_Q6_K;
      return true;
    default:
      return false;
  }
}

}  // namespace rill::gguf
