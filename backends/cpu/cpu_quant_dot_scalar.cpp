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

int32_t dot_q5_32(const uint8_t* qs, const uint8_t* qh, const int8_t* a) {
  int32_t sum = 0;
  for (int l = 0; l < 32; ++l) sum += quant::q5_value(qs, qh, l) * a[l];
  return sum;
}

void dot_q5_x8(const uint8_t* qs, const uint8_t* qh, const ActBlock* a, int32_t* out) {
  for (int j = 0; j < 8; ++j) {
    const int shift = 4 * (j % 2);
    out[j] = 0;
    for (int l = 0; l < 32; ++l) {
      out[j] += (((qs[32 * (j / 2) + l] >> shift) & 15) | (((qh[l] >> j) & 1) << 4)) * a[j].q[l];
    }
  }
}

void dot_s8_x4(const quant::BlockQ8_0* w, const ActBlock* a, int32_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = dot_s8(w[i].qs, a[i].q);
}

void dot_q4_0_x4(const quant::BlockQ4_0* w, const ActBlock* a, int32_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = dot_q4_0(w[i].qs, a[i].q);
}

void dot_nib_x8(const uint8_t* qs, const ActBlock* a, int32_t* out) {
  for (int j = 0; j < 8; ++j) {
    const int shift = 4 * (j % 2);
    out[j] = 0;
    for (int l = 0; l < 32; ++l) out[j] += ((qs[32 * (j / 2) + l] >> shift) & 15) * a[j].q[l];
  }
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
