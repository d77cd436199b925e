// GEMM: out[rows, N] = alpha * a[rows, K] · w[N, K]^T + beta * out + bias[N].
//
// Few rows (decode, rows <= kGemmFewRowsMax): rill's own kernel, which streams
// each weight row once, converting 16-bit weights on the fly, with the output
// features split across the context's threads.
// More rows of 16-bit weights: rill's panel kernel, one block of rows at a
// time. Each thread takes blocks of output features and widens their weights,
// a chunk at a time in L1, for every row of the block, so the weight matrix is
// never converted as a whole.
// More rows of f32 weights: OpenBLAS sgemm, called single-threaded from the
// context's threads on fixed tiles of the output features, so that only the
// context's pool runs, OpenBLAS's own threads never compete with it, and
// results do not depend on the thread count. openblas_set_num_threads(1) is
// process-wide: a host that also calls OpenBLAS itself should set its own
// thread count before its calls. f32 weights take the panel kernel too
// without OpenBLAS, where OpenBLAS runs generic kernels on a CPU that rill's
// AVX2 kernels run on (openblas_kernels_fit_cpu), or with the environment
// variable RILL_CPU_GEMM=rill (tests cover the path so);
// RILL_CPU_GEMM=openblas takes OpenBLAS whatever its kernels.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "cpu_internal.h"
#include "cpu_kernels.h"

#if defined(RILL_CPU_HAVE_OPENBLAS)
#  include <cblas.h>
#  include <strings.h>
#endif

namespace rill::cpu {

namespace {

// Multiply-adds per chunk of work below which splitting across threads costs
// more than it saves.
constexpr int64_t kMinMacsPerChunk = 1 << 16;

#if defined(RILL_CPU_HAVE_OPENBLAS)
// The OpenBLAS path's output-feature tiles: wide enough that repacking the
// activations for every tile stays cheap, and enough of them to share among
// up to kBlasTilesMax threads.
constexpr int64_t kBlasTileMin = 256;
constexpr int64_t kBlasTilesMax = 16;

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }
#endif

// The context's scratch of at least `floats` floats, or null when it cannot
// be allocated.
float* scratch(rill_backend_context* ctx, size_t floats) {
  try {
    if (ctx->gemm_scratch.size() < floats) ctx->gemm_scratch.resize(floats);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return ctx->gemm_scratch.data();
}

rill_status scratch_failure(size_t floats) {
  return fail(RILL_ERROR_OUT_OF_MEMORY,
              "cpu: gemm: out of memory allocating " + std::to_string(floats * sizeof(float)) + " bytes of scratch");
}

// a as f32 rows: the tensor itself when it is f32, else converted into dst.
const float* a_as_f32(const rill_backend_tensor* a, int64_t count, float* dst) {
  if (a->dtype == RILL_DTYPE_F32) return reinterpret_cast<const float*>(tensor_data(a));
  kernels().to_f32(a->dtype, tensor_data(a), dst, count);
  return dst;
}

// Elements of a that one task of pack_panel_rows copies at least.
constexpr int64_t kMinPackPerChunk = 1 << 14;

// Copies `rows` rows of a (row-major f32, k columns) into the panel kernel's
// layout (GemmRowsArgs::a), a register tile per task: each tile is written
// front to back, reading its rows side by side.
void pack_panel_rows(rill_backend_context* ctx, const float* a, int64_t rows, int64_t k, float* packed) {
  const int64_t tile_rows = kernels().gemm_panel_rows;
  const int64_t tiles = (rows + tile_rows - 1) / tile_rows;
  const int64_t grain = std::max<int64_t>(1, kMinPackPerChunk / std::max<int64_t>(1, tile_rows * k));
  ctx->pool.parallel_for(tiles, grain, [&](int64_t t0, int64_t t1, unsigned) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t m0 = t * tile_rows, mr = std::min(tile_rows, rows - m0);
      const float* rows_in = a + m0 * k;
      float* tile = packed + m0 * k;
      for (int64_t i = 0; i < k; ++i) {
        for (int64_t r = 0; r < mr; ++r) tile[i * mr + r] = rows_in[r * k + i];
      }
    }
  });
}

// Runs one of rill's GEMM kernels (gemm_panel when `panel`, else gemm_rows)
// on `rows` (at most kGemmRowBlock) rows of a (f32; in the panel layout when
// `panel`), starting at row `row0`.
void gemm_row_block(rill_backend_context* ctx, const rill_backend_tensor* w, const rill_backend_tensor* bias,
                   float alpha, float beta, const rill_backend_tensor* out, const float* a, int64_t row0,
                   int64_t rows, bool panel) {
  const int64_t n = w->shape[0], k = w->shape[1];
  GemmRowsArgs args;
  args.dtype = w->dtype;
  args.rows = rows;
  args.n = n;
  args.k = k;
  args.a = a;
  args.w = tensor_data(w);
  args.bias = tensor_data(bias);
  args.out = tensor_data(out) + row0 * n * static_cast<int64_t>(dtype_bytes(out->dtype));
  args.out_stride = n;
  args.alpha = alpha;
  args.beta = beta;
  args.gemv_prefetch_bytes = gemv_prefetch_bytes();
  const Kernels& kn = kernels();
  const int64_t block_n = panel ? kn.gemm_panel_cols : kGemmBlockN;
  const auto kernel = panel ? kn.gemm_panel : kn.gemm_rows;
  const int64_t blocks = (n + block_n - 1) / block_n;
  const int64_t macs_per_block = std::max<int64_t>(1, block_n * k * rows);
  ctx->pool.parallel_for(blocks, (kMinMacsPerChunk + macs_per_block - 1) / macs_per_block,
                         [&](int64_t begin, int64_t end, unsigned) { kernel(args, begin, end); });
}

#if defined(RILL_CPU_HAVE_OPENBLAS)
// c[rows, n] (f32) = beta * out + bias, the addend sgemm then accumulates into.
void prepare_addend(rill_backend_context* ctx, const rill_backend_tensor* out, const rill_backend_tensor* bias,
                    float beta, float* c, int64_t rows, int64_t n, float* bias_f32) {
  const Kernels& k = kernels();
  if (bias) k.to_f32(bias->dtype, tensor_data(bias), bias_f32, n);
  const char* out_data = tensor_data(out);
  const size_t elem = dtype_bytes(out->dtype);
  ctx->pool.parallel_for(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1, unsigned) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = c + r * n;
      if (beta != 0.0f) {
        if (out->dtype != RILL_DTYPE_F32 || row != reinterpret_cast<const float*>(out_data + r * n * elem)) {
          k.to_f32(out->dtype, out_data + r * n * elem, row, n);
        }
        for (int64_t j = 0; j < n; ++j) row[j] *= beta;
        if (bias) {
          for (int64_t j = 0; j < n; ++j) row[j] += bias_f32[j];
        }
      } else if (bias) {
        std::copy(bias_f32, bias_f32 + n, row);
      } else {
        std::fill(row, row + n, 0.0f);
      }
    }
  });
}

// Whether OpenBLAS's kernels for this CPU are worth taking over rill's: they
// use AVX2 or wider, or rill's own kernels are scalar here. A DYNAMIC_ARCH
// OpenBLAS that does not know a CPU (one newer than the library: Debian 12's
// 0.3.21 on an Intel Xeon of family 6, model 207) runs its generic Prescott
// (SSE3) kernels, at a third of the panel kernel's speed on f32 there.
bool openblas_kernels_fit_cpu() {
  if (isa() == Isa::scalar) return true;
  const char* core = openblas_get_corename();
  if (core == nullptr) return false;
  for (const char* wide : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"}) {
    if (strcasecmp(core, wide) == 0) return true;
  }
  return false;
}

bool use_blas() {
  static const bool use = [] {
    const char* choice = std::getenv("RILL_CPU_GEMM");
    if (!choice || choice[0] == '\0' || std::strcmp(choice, "auto") == 0) return openblas_kernels_fit_cpu();
    if (std::strcmp(choice, "rill") == 0) return false;
    if (std::strcmp(choice, "openblas") == 0) return true;
    const rill_host_services* host = host_services();
    if (host && host->log) {
      host->log(RILL_LOG_WARNING, "cpu",
                ("RILL_CPU_GEMM: expected 'rill', 'openblas' or 'auto', got '" + std::string(choice) + "'; using auto")
                    .c_str());
    }
    return openblas_kernels_fit_cpu();
  }();
  return use;
}

rill_status gemm_blas(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                      const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out) {
  const int64_t rows = tensor_rows(a), k = tensor_cols(a), n = w->shape[0];
  // Output features in tiles whose width depends only on the shape, never on
  // the thread count: OpenBLAS's arithmetic for an element depends on the
  // width of the call that computes it (its kernels treat full and remainder
  // columns differently), so a tile is computed by the same call however the
  // tiles are shared among threads. Tiles are a multiple of 16 columns wide,
  // at least kBlasTileMin, and at most kBlasTilesMax of them.
  const int64_t tile = std::max(kBlasTileMin, round_up((n + kBlasTilesMax - 1) / kBlasTilesMax, 16));
  const int64_t tiles = (n + tile - 1) / tile;
  const size_t floats = static_cast<size_t>(n);
  float* bias_f32 = scratch(ctx, floats);
  if (!bias_f32) return scratch_failure(floats);
  const float* a_ptr = reinterpret_cast<const float*>(tensor_data(a));
  float* c = reinterpret_cast<float*>(tensor_data(out));
  prepare_addend(ctx, out, bias, beta, c, rows, n, bias_f32);

  openblas_set_num_threads(1);
  const float* w_data = reinterpret_cast<const float*>(tensor_data(w));
  ctx->pool.parallel_for(tiles, 1, [&](int64_t t0, int64_t t1, unsigned) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = t * tile, width = std::min(tile, n - n0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows), static_cast<blasint>(width),
                  static_cast<blasint>(k), alpha, a_ptr, static_cast<blasint>(k), w_data + n0 * k,
                  static_cast<blasint>(k), 1.0f, c + n0, static_cast<blasint>(n));
    }
  });
  return RILL_OK;
}
#endif

}  // namespace

std::string gemm_engine() {
#if defined(RILL_CPU_HAVE_OPENBLAS)
  const char* name = openblas_get_corename();
  const std::string core = name != nullptr ? name : "unnamed";
  if (use_blas()) return "OpenBLAS sgemm (its " + core + " kernels) for f32, rill kernels for f16/bf16";
  return "rill kernels (OpenBLAS's for this CPU: " + core + ")";
#else
  return "rill kernels";
#endif
}

rill_status op_gemm(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                    const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out) {
  const int64_t rows = tensor_rows(a), k = tensor_cols(a);
  const bool many_rows = rows > kGemmFewRowsMax;
#if defined(RILL_CPU_HAVE_OPENBLAS)
  if (many_rows && w->dtype == RILL_DTYPE_F32 && use_blas()) return gemm_blas(ctx, a, w, bias, alpha, beta, out);
#endif
  // Scratch: a converted to f32 unless it is f32, then one row block of a in
  // the panel layout for the many-row kernel.
  const size_t converted = a->dtype == RILL_DTYPE_F32 ? 0 : static_cast<size_t>(rows * k);
  const size_t floats = converted + (many_rows ? static_cast<size_t>(std::min(kGemmRowBlock, rows) * k) : 0);
  float* scratch_base = scratch(ctx, floats);
  if (floats > 0 && !scratch_base) return scratch_failure(floats);
  const float* a_f32 = a_as_f32(a, rows * k, scratch_base);
  for (int64_t row0 = 0; row0 < rows; row0 += kGemmRowBlock) {
    const int64_t block = std::min(kGemmRowBlock, rows - row0);
    const float* block_a = a_f32 + row0 * k;
    if (many_rows) {
      float* packed = scratch_base + converted;
      pack_panel_rows(ctx, block_a, block, k, packed);
      block_a = packed;
    }
    gemm_row_block(ctx, w, bias, alpha, beta, out, block_a, row0, block, many_rows);
  }
  return RILL_OK;
}

}  // namespace rill::cpu
