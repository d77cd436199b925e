// The AVX2 tiles of the quantized GEMM (cpu_quant_tile.inc), with
// cpu_quant_avx2.h's dot_u8_s8: maddubs multiplies the unsigned weight levels
// with the signed activations into int16 pairs and madd widens them to int32.
#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <limits>

#include "cpu_convert.h"
#include "cpu_quant.h"
#include "cpu_quant_avx2.h"

namespace rill::cpu::quantized::avx2 {

#include "cpu_quant_tile.inc"

}  // namespace rill::cpu::quantized::avx2
