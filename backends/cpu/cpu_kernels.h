// The CPU backend's compute kernels, behind a table of function pointers so
// that the instruction set is chosen once at run time. Each ISA's table comes
// from one translation unit that includes cpu_kernels.inc.
#pragma once

#include <cstdint>

#include "rill.h"

namespace rill::cpu {

// residual = round(residual_scale*residual + update_scale*(gain ⊙ update)).
struct ResidualAddArgs {
  rill_dtype dtype;
  int64_t cols;
  char* residual;
  const char* update;
  const char* gain;  // [cols] or null
  float residual_scale;
  float update_scale;
};

// out = norm(x) (RMSNorm or LayerNorm); out may equal x.
struct NormArgs {
  rill_dtype dtype;
  int64_t cols;
  const char* x;
  char* out;
  const char* weight;  // [cols] or null
  const char* bias;    // [cols] or null (LayerNorm only)
  float eps;
  bool stream_out;     // write out with cache-bypassing stores (out is large and not x)
};

// residual = round(residual_scale*residual + update_scale*(gain ⊙ x)); x = norm(residual).
struct FusedAddNormArgs {
  rill_dtype dtype;
  int64_t cols;
  char* x;
  char* residual;
  const char* gain;
  const char* weight;
  const char* bias;  // LayerNorm only
  float eps;
  float residual_scale;
  float update_scale;
};

// The GEMM kernel for a block of rows of a: out[m, n] = alpha * a[m]·w[n] +
// beta*out[m, n] + bias[n] for all m < rows and n in the range given to the call.
// The panel kernel takes the same arguments.
struct GemmRowsArgs {
  rill_dtype dtype;      // of w, bias and out
  int64_t rows;          // M, at most kGemmRowBlock
  int64_t n;             // N
  int64_t k;             // K
  // [rows, k] in f32. The panel kernel takes it in the panel layout: the rows
  // in tiles of gemm_panel_rows (the last tile of a call may have fewer, mr),
  // tile t at a + t * gemm_panel_rows * k and holding element (r, i) of the
  // tile at i * mr + r (pack_panel_rows writes it).
  const float* a;
  const char* w;         // [n, k]
  const char* bias;      // [n] or null
  char* out;             // [rows, n]
  int64_t out_stride;    // elements between rows of out
  float alpha;
  float beta;
  // How far ahead of its weight streams the kernel for one or two rows
  // prefetches (16-bit weights, and f32 ones under one row), in bytes
  // (gemv_prefetch_bytes()).
  int64_t gemv_prefetch_bytes;
};

// out[i] = act(x[i]) (times up[i] when gated) for f32/f16/bf16 storage; out
// may equal x.
struct ActivationArgs {
  rill_dtype dtype;
  rill_act_fn fn;
  const char* x;
  const char* up;  // or null
  char* out;
};

// Up to this many rows (decode-sized batches, where the work is streaming the
// weights once) rill's own GEMM kernel runs for every dtype; above it, f32
// weights go to OpenBLAS where it is built in.
constexpr int64_t kGemmFewRowsMax = 16;
// The most rows of a one call of the GEMM kernel takes: each block of weights
// is widened once per row block, so more rows share its cost.
constexpr int64_t kGemmRowBlock = 64;
// Output features per block of the GEMM kernel.
constexpr int64_t kGemmBlockN = 4;

template <rill_dtype DT>
inline constexpr int64_t kElemSize = DT == RILL_DTYPE_F32 ? 4 : 2;

// Bytes ahead of the current element that the row loops prefetch. One core
// streaming a single array leaves the memory system mostly idle without it:
// the hardware prefetchers keep too few lines in flight to hide the latency.
constexpr int64_t kPrefetchBytes = 2048;

struct Kernels {
  const char* isa;  // "AVX2+FMA+F16C, AVX-512F GEMM", "AVX2+FMA+F16C", "scalar"
  void (*residual_add)(const ResidualAddArgs& args, int64_t row_begin, int64_t row_end);
  void (*rms_norm)(const NormArgs& args, int64_t row_begin, int64_t row_end);
  void (*layer_norm)(const NormArgs& args, int64_t row_begin, int64_t row_end);
  void (*fused_add_rms_norm)(const FusedAddNormArgs& args, int64_t row_begin, int64_t row_end);
  void (*fused_add_layer_norm)(const FusedAddNormArgs& args, int64_t row_begin, int64_t row_end);
  // Blocks [block_begin, block_end) of kGemmBlockN output features each.
  void (*gemm_rows)(const GemmRowsArgs& args, int64_t block_begin, int64_t block_end);
  // The many-row kernel: blocks [block_begin, block_end) of gemm_panel_cols
  // output features each.
  void (*gemm_panel)(const GemmRowsArgs& args, int64_t block_begin, int64_t block_end);
  int64_t gemm_panel_cols;
  // Rows of a per register tile of the panel kernel (its layout of a).
  int64_t gemm_panel_rows;
  // Elements [begin, end); an element's result does not depend on the range.
  void (*activation)(const ActivationArgs& args, int64_t begin, int64_t end);
  // dst[i] = exp(src[i]) in f32 (a few ulp: SiLU built on it is within 2.1);
  // dst may equal src.
  void (*exp_f32)(const float* src, float* dst, int64_t count);
  void (*to_f32)(rill_dtype dtype, const void* src, float* dst, int64_t count);
  void (*from_f32)(rill_dtype dtype, const float* src, void* dst, int64_t count);
};

// The instruction sets the CPU kernels come in. avx2 means AVX2, FMA and F16C;
// avx512 adds AVX-512F (and, for the block-weight tiles, VNNI where the CPU
// has AVX512-VNNI and AVX512-VL).
enum class Isa { scalar, avx2, avx512 };

// The instruction set for the running CPU (or RILL_CPU_ISA's), chosen on first
// use: every CPU kernel, element-wise or on block weights, follows it.
Isa isa();

// The kernels of isa().
const Kernels& kernels();

// Bytes ahead of its weight streams that the GEMM kernel for one or two rows
// prefetches (16-bit weights, and f32 ones under one row of a): a property of
// the memory system more than of the ISA, chosen by CPU vendor on first use.
// Measured, decode of the Qwen2-0.5B shape in f16/bf16, tokens/s (ABBA
// alternation of builds, medians of 4-6 runs):
// - AMD Zen 3 (AVX2): 512 bytes 15.4, 1024 16.9, 2048 13.4 (f16, one thread).
// - Intel Xeon, family 6 model 207 (AVX-512F, and its AVX2 kernels): bf16, one
//   thread, 1024 bytes 9.95 -> 2048 10.75; 2048 10.95 -> 4096 11.25; 4096
//   10.85 -> 8192 10.6. f16, 1024 -> 4096: 9.85 -> 10.5 (one thread), 15.3 ->
//   17.75 (two); with RILL_CPU_ISA=avx2 8.95 -> 9.8 (f16, one), 14.9 -> 17.15
//   (bf16, two).
// Intel CPUs take 4096 bytes, the others 1024; CPUs other than those two are
// unmeasured.
int64_t gemv_prefetch_bytes();

// Whether this CPU and build run the AVX2 kernels (AVX2, FMA and F16C).
bool cpu_has_avx2();

// Per-ISA tables (cpu_kernels_<isa>.cpp).
namespace scalar {
extern const Kernels kKernels;
}
namespace avx2 {
extern const Kernels kKernels;
}
// The GEMM kernel in AVX-512F (cpu_gemm_avx512.cpp), put in place of the AVX2
// table's where the CPU has it.
namespace avx512 {
void gemm_rows(const GemmRowsArgs& args, int64_t block_begin, int64_t block_end);
void gemm_panel(const GemmRowsArgs& args, int64_t block_begin, int64_t block_end);
extern const int64_t kGemmPanelCols;
extern const int64_t kGemmPanelRows;
}

}  // namespace rill::cpu
