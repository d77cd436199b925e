// What the fuzz targets share: a scratch folder to write inputs into for the
// readers that take a path, a CPU context, and FuzzInput, which turns the
// fuzzer's bytes into numbers and choices for the structure-aware targets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "rill.h"

namespace rill_fuzz {

// A folder of this process's own under TMPDIR (or /tmp), made on first use.
const std::string& scratch_dir();

// Writes bytes to scratch_dir()/name and returns the path; aborts when the
// file cannot be written (a broken test machine, not a finding).
std::string write_scratch_file(const std::string& name, const void* bytes, size_t size);

// One CPU context for the whole run, made on first use.
rill_context* cpu_context();

// Reads the fuzzer's bytes front to back; past the end every read is 0.
class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  bool flag() { return (byte() & 1) != 0; }
  uint64_t u64(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(byte()) << (8 * i);
    return v;
  }
  // An index below count (count > 0).
  size_t pick(size_t count) { return static_cast<size_t>(u64(2) % count); }
  // For the structure-aware targets: a number near expected, one at the edge
  // of int64 / uint64, or any, as the input chooses.
  uint64_t mutated(uint64_t expected) {
    switch (byte() % 8) {
      case 0: return expected + byte() % 4;
      case 1: return expected - byte() % 4;
      case 2: return u64(8);
      case 3: return UINT64_MAX - byte();
      case 4: return (uint64_t{1} << 63) - byte() % 2;
      case 5: return u64(4);
      default: return expected;
    }
  }
  // What is left, as bytes.
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(data_ + at_), size_ - at_);
    at_ = size_;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace rill_fuzz

// The entry point libFuzzer (or the replay driver) calls with each input.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
