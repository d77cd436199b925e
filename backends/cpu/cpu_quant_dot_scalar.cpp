// The portable integer primitives of the quantized row dots (see
// cpu_quant_dot.inc): plain loops, exact in int32.
#include "cpu_convert.h"
#include "cpu_quant.h"

namespace rill::cpu::quantized::scalar {
namespace {

int32_t dot_s8(const int8_t* w, const int8_t* a) {
  int32_t sum = 0;
  for (int l = 0; l < 32; ++l) sum += w[l] * a[l];
  return sum;
}

int32_t dot_q4_0(const uint8_t* qs, const int8_t* a) {
  int32_t sum = 0;
  for (int l = 0; l < 16; ++l) sum += (qs[l] & 15) * a[l] + (qs[l] >> 4) * a[l + 16];
  return sum;
}

int32_t dot_nib(const uint8_t* qs, int shift, const int8_t* a) {
  int32_t sum = 0;
  for (int l = 0; l < 32; ++l) sum += ((qs[l] >> shift) & 15) * a[l];
  return sum;
}

int32_t dot_q5(const uint8_t* qs, int shift, const uint8_t* qh, int bit, const int8_t* a) {
  int32_t sum = 0;
  for (int l = 0; l < 32; ++l) sum += (((qs[l] >> shift) & 15) | (((qh[l] >> bit) & 1) << 4)) * a[l];
  return sum;
}

void dot_q6(const uint8_t* ql, int shift, const uint8_t* qh, int hshift, const int8_t* a, int32_t* out) {
  out[0] = out[1] = 0;
  for (int l = 0; l < 32; ++l) {
    const int q = (((ql[l] >> shift) & 15) | (((qh[l] >> hshift) & 3) << 4)) - 32;
    out[l / 16] += q * a[l];
  }
}

}  // namespace

#include "cpu_quant_dot.inc"

}  // namespace rill::cpu::quantized::scalar
