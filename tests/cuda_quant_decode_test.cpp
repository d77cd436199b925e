// The CUDA backend's per-block decode (backends/cuda/cuda_quant_decode.h) runs
// here as host code: every element of random blocks of every block dtype,
// bit for bit against runtime/quant's reference dequantization (itself bit
// for bit gguf.quants', tests/torch/quant_reference.py). The kernels run the
// same functions on the device, where nvcc may fuse a multiply and a
// subtract: checked here to change no bit. The device half is checked where
// a GPU is (quant_cuda). Runs on every build, with or without CUDA.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_quant_decode.h"
#include "quant.h"
#include "rill.h"

namespace {

namespace q = rill_cuda_quant;

using Decode8 = void (*)(const uint8_t*, int, float*);

struct Format {
  rill_dtype dtype;
  int bytes, elements;
  Decode8 decode;
  int scale_offsets[2];  // where the block's f16 scales sit (-1: none)
};

const Format kFormats[] = {
    {RILL_DTYPE_Q8_0, q::kQ8_0Bytes, 32, q::decode8_q8_0, {0, -1}},
    {RILL_DTYPE_Q4_0, q::kQ4_0Bytes, 32, q::decode8_q4_0, {0, -1}},
    {RILL_DTYPE_Q4_K, q::kQ4_KBytes, 256, q::decode8_q4_k, {0, 2}},
    {RILL_DTYPE_Q5_K, q::kQ5_KBytes, 256, q::decode8_q5_k, {0, 2}},
    {RILL_DTYPE_Q6_K, q::kQ6_KBytes, 256, q::decode8_q6_k, {208, -1}},
    {RILL_DTYPE_Q5_0, q::kQ5_0Bytes, 32, q::decode8_q5_0, {0, -1}},
    {RILL_DTYPE_Q5_1, q::kQ5_1Bytes, 32, q::decode8_q5_1, {0, 2}},
};

constexpr int kBlocks = 512;

// kBlocks random blocks; their f16 scales finite (exponent below 31), every
// eighth block's scales subnormal, so the decode's f16 conversion is reached
// on all its paths but inf/NaN.
std::vector<uint8_t> random_blocks(const Format& f, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> data(static_cast<size_t>(f.bytes) * kBlocks);
  for (uint8_t& b : data) b = static_cast<uint8_t>(byte(gen));
  for (int i = 0; i < kBlocks; ++i) {
    for (int offset : f.scale_offsets) {
      if (offset < 0) continue;
      uint8_t& high = data[static_cast<size_t>(i) * f.bytes + offset + 1];
      high = i % 8 == 0 ? static_cast<uint8_t>(high & 0x83)                               // exponent 0
                        : static_cast<uint8_t>((high & 0x83) | ((1 + high % 29) << 2));  // exponent 1..29
    }
  }
  return data;
}

std::vector<float> decode_all(const Format& f, const std::vector<uint8_t>& data, Decode8 decode) {
  std::vector<float> y(static_cast<size_t>(f.elements) * kBlocks);
  for (int i = 0; i < kBlocks; ++i) {
    for (int e = 0; e < f.elements; e += 8) {
      decode(&data[static_cast<size_t>(i) * f.bytes], e, &y[static_cast<size_t>(i) * f.elements + e]);
    }
  }
  return y;
}

size_t bit_differences(const std::vector<float>& a, const std::vector<float>& b) {
  size_t count = 0;
  for (size_t i = 0; i < a.size(); ++i) count += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return count;
}

// Q4_K with the nibbles of a byte read the other way round (sub-block 2r
// from the high nibbles): a plausible layout mistake.
void decode8_q4_k_swapped(const uint8_t* block, int e0, float* y) {
  const int j = e0 / 32;
  const q::SubBlockK sub = q::sub_block_k(block, j);
  for (int i = 0; i < 8; ++i) {
    const int quant = (block[16 + 32 * (j / 2) + e0 % 32 + i] >> (4 - 4 * (j % 2))) & 0xF;
    y[i] = sub.dl * static_cast<float>(quant) - sub.ml;
  }
}

// Q4_K with each element computed by one fused multiply-add, as nvcc may
// contract it: the same bits, because the product is exact.
void decode8_q4_k_fused(const uint8_t* block, int e0, float* y) {
  const int j = e0 / 32;
  const q::SubBlockK sub = q::sub_block_k(block, j);
  for (int i = 0; i < 8; ++i) {
    const int quant = (block[16 + 32 * (j / 2) + e0 % 32 + i] >> (4 * (j % 2))) & 0xF;
    y[i] = std::fma(sub.dl, static_cast<float>(quant), -sub.ml);
  }
}

}  // namespace

TEST_CASE("cuda decode: every element of every block dtype bit for bit the reference's") {
  for (const Format& f : kFormats) {
    CAPTURE(rill_dtype_name(f.dtype));
    const std::vector<uint8_t> data = random_blocks(f, 17u + static_cast<uint32_t>(f.dtype));
    std::vector<float> expected(static_cast<size_t>(f.elements) * kBlocks);
    rill::quant::dequantize_row(f.dtype, data.data(), expected.data(), static_cast<int64_t>(expected.size()));
    CHECK(bit_differences(decode_all(f, data, f.decode), expected) == 0);
  }
}

TEST_CASE("cuda decode: a nibble-order mistake is caught; a fused multiply-add changes nothing") {
  const Format& f = kFormats[2];
  REQUIRE(f.dtype == RILL_DTYPE_Q4_K);
  const std::vector<uint8_t> data = random_blocks(f, 5);
  const std::vector<float> right = decode_all(f, data, f.decode);
  const size_t swapped = bit_differences(decode_all(f, data, decode8_q4_k_swapped), right);
  MESSAGE("elements the swapped nibbles change: ", swapped, " of ", right.size());
  CHECK(swapped > right.size() / 2);
  CHECK(bit_differences(decode_all(f, data, decode8_q4_k_fused), right) == 0);
}
