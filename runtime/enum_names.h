// Names of the public enums' values for messages: one function per enum, each
// giving the value as rill.h spells it ("RILL_NORM_RMS"), or "unknown value N"
// for an integer the enum does not list (a C caller may pass any 32-bit value;
// taken by reference so that such a value is never loaded as the enum type).
#pragma once

#include <string>

#include "rill.h"

namespace rill {

std::string enum_name(const rill_dtype& value);
std::string enum_name(const rill_norm_kind& value);
std::string enum_name(const rill_norm_placement& value);
std::string enum_name(const rill_mlp_activation& value);
std::string enum_name(const rill_qk_norm& value);
std::string enum_name(const rill_rope_type& value);

}  // namespace rill
