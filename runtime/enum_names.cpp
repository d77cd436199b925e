#include "enum_names.h"

#include <initializer_list>
#include <utility>

#include "errors.h"

namespace rill {
namespace {

// The name listed for value's integer, read without loading the enum type.
template <class Enum>
std::string name_among(const Enum& value, std::initializer_list<std::pair<int32_t, const char*>> names) {
  const int32_t raw = enum_value(value);
  for (const auto& [number, name] : names) {
    if (number == raw) return name;
  }
  return "unknown value " + std::to_string(raw);
}

}  // namespace

std::string enum_name(const rill_dtype& value) {
  return name_among(value, {{RILL_DTYPE_F32, "RILL_DTYPE_F32"},
                            {RILL_DTYPE_F16, "RILL_DTYPE_F16"},
                            {RILL_DTYPE_BF16, "RILL_DTYPE_BF16"},
                            {RILL_DTYPE_Q8_0, "RILL_DTYPE_Q8_0"},
                            {RILL_DTYPE_Q4_0, "RILL_DTYPE_Q4_0"},
                            {RILL_DTYPE_Q4_K, "RILL_DTYPE_Q4_K"},
                            {RILL_DTYPE_Q5_K, "RILL_DTYPE_Q5_K"},
                            {RILL_DTYPE_Q6_K, "RILL_DTYPE_Q6_K"},
                            {RILL_DTYPE_Q5_0, "RILL_DTYPE_Q5_0"},
                            {RILL_DTYPE_Q5_1, "RILL_DTYPE_Q5_1"}});
}

std::string enum_name(const rill_norm_kind& value) {
  return name_among(value, {{RILL_NORM_RMS, "RILL_NORM_RMS"}, {RILL_NORM_LAYER, "RILL_NORM_LAYER"}});
}

std::string enum_name(const rill_norm_placement& value) {
  return name_among(value, {{RILL_PLACEMENT_PRE, "RILL_PLACEMENT_PRE"},
                            {RILL_PLACEMENT_POST, "RILL_PLACEMENT_POST"},
                            {RILL_PLACEMENT_SANDWICH, "RILL_PLACEMENT_SANDWICH"},
                            {RILL_PLACEMENT_DEEPNORM, "RILL_PLACEMENT_DEEPNORM"},
                            {RILL_PLACEMENT_OUTPUT, "RILL_PLACEMENT_OUTPUT"}});
}

std::string enum_name(const rill_qk_norm& value) {
  return name_among(value, {{RILL_QK_NORM_NONE, "RILL_QK_NORM_NONE"},
                            {RILL_QK_NORM_HEAD, "RILL_QK_NORM_HEAD"},
                            {RILL_QK_NORM_FULL, "RILL_QK_NORM_FULL"},
                            {RILL_QK_NORM_HEAD_WEIGHTS, "RILL_QK_NORM_HEAD_WEIGHTS"}});
}

std::string enum_name(const rill_mlp_activation& value) {
  return name_among(value, {{RILL_MLP_SILU_GLU, "RILL_MLP_SILU_GLU"},
                            {RILL_MLP_GELU_GLU, "RILL_MLP_GELU_GLU"},
                            {RILL_MLP_GELU, "RILL_MLP_GELU"},
                            {RILL_MLP_GELU_TANH, "RILL_MLP_GELU_TANH"},
                            {RILL_MLP_RELU, "RILL_MLP_RELU"},
                            {RILL_MLP_GELU_TANH_GLU, "RILL_MLP_GELU_TANH_GLU"}});
}

std::string enum_name(const rill_rope_type& value) {
  return name_among(value, {{RILL_ROPE_DEFAULT, "RILL_ROPE_DEFAULT"},
                            {RILL_ROPE_LINEAR, "RILL_ROPE_LINEAR"},
                            {RILL_ROPE_DYNAMIC, "RILL_ROPE_DYNAMIC"},
                            {RILL_ROPE_YARN, "RILL_ROPE_YARN"},
                            {RILL_ROPE_LONGROPE, "RILL_ROPE_LONGROPE"},
                            {RILL_ROPE_LLAMA3, "RILL_ROPE_LLAMA3"}});
}

}  // namespace rill
