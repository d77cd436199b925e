// Status bookkeeping shared by every entry point: the thread-local last-error
// message, and the guard that keeps C++ exceptions from crossing the C ABI.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "rill.h"

// Returns from the enclosing function when a check or a call it makes fails.
#define RILL_CHECK(expr)                            \
  do {                                              \
    const rill_status rill_check_ = (expr);         \
    if (rill_check_ != RILL_OK) return rill_check_; \
  } while (0)

namespace rill {

// Records message as the calling thread's rill_last_error() and returns status.
// Never throws: when the message cannot be stored, a fixed text stands in.
rill_status fail(rill_status status, const std::string& message) noexcept;

// Runs body (a callable returning rill_status) and turns any exception into a
// status: std::bad_alloc -> RILL_ERROR_OUT_OF_MEMORY, anything else ->
// RILL_ERROR_INTERNAL, each with a message naming function.
template <class Body>
rill_status guarded(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(RILL_ERROR_OUT_OF_MEMORY, std::string(function) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(RILL_ERROR_INTERNAL, std::string(function) + ": internal error: " + e.what());
  } catch (...) {
    return fail(RILL_ERROR_INTERNAL, std::string(function) + ": internal error: unknown exception");
  }
}

// The integer a caller passed for an enum parameter, read without loading the
// enum type: a C caller may pass any 32-bit value, and loading one outside the
// enum's range is undefined behaviour in C++ (UBSan's -fsanitize=enum flags it).
template <class Enum>
int32_t enum_value(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int32_t), "rill enums are 32-bit");
  int32_t raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return raw;
}

// True when status is one of the values rill.h lists (RILL_OK included).
bool is_known_status(rill_status status);

}  // namespace rill
