/* Residual add, RMSNorm, LayerNorm and the fused add+norm ops.
 *
 * Storage is f32, f16 or bf16; all arithmetic is f32. The numerics follow the
 * CPU backend: the residual update is computed with separately rounded
 * multiplies and adds (no FMA contraction), rounded to the storage dtype, and
 * that rounded value is what the norm sees.
 *
 * One kernel serves the four norm ops. A "team" of threads (a multiple of 32)
 * handles a row: one warp for short rows, up to a whole block for long ones,
 * several teams per block when rows are short. Each thread owns the packs
 * lane, lane + team_size, ... of its row, so loads are coalesced; a pack is 16
 * bytes (8 halves or 4 floats) when D is a multiple of that, else one element.
 * Sums go through warp shuffles, then, for teams wider than a warp, through
 * one shared slot per warp.
 *
 * Fused add+norm must equal residual_add followed by the plain norm bit for
 * bit, so nothing that differs between those calls may change the arithmetic:
 *  - The pack width and the launch shape (hence which thread sums which
 *    elements, and in what order) depend only on D, the row count and the
 *    device, never on pointer alignment. Alignment only picks how a pack is
 *    moved: one 16-byte access per operand when that operand is 16-byte
 *    aligned, else element by element (views carry byte offsets, so the gain
 *    of a fused call may be misaligned while the plain norm's operands are not).
 *  - One device function, residual_update, computes an element's new residual
 *    for residual_add_kernel and for the fused path of norm_kernel.
 *  - Every multiply-add is written with explicit round-to-nearest intrinsics
 *    (__fmul_rn, __fadd_rn, __fmaf_rn). nvcc contracts a*b+c into an FMA by
 *    default (--fmad=true), and whether it does so for a given expression
 *    depends on the surrounding code after inlining, which differs between
 *    kernels and template instances; the intrinsics are never contracted or
 *    reassociated, so the operations are the ones written here.
 *
 * The row is read once: the values a thread loads (or, fused, the rounded new
 * residual it computes) are parked in shared memory in the storage dtype
 * (exact, since that is the value being normalized) and read back from there
 * for the second pass. When a row does not fit in shared memory the kernel
 * reads it back from global memory instead (the residual it just wrote, or x).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda_backend.h"
#include "cuda_kernel_common.cuh"

namespace {

using namespace rill_cuda_kernels;

/* The new residual of one element, rounded to the storage dtype:
   residual_scale*residual + update_scale*(gain*update), each product and the
   sum rounded separately (as the CPU backend does). The only place this
   arithmetic is written: residual_add_kernel and the fused norm call it. */
template <typename T>
__device__ __forceinline__ T residual_update(T residual, T update, T gain, float residual_scale, float update_scale) {
  const float scaled_update = __fmul_rn(update_scale, __fmul_rn(to_f32(gain), to_f32(update)));
  return from_f32<T>(__fadd_rn(__fmul_rn(residual_scale, to_f32(residual)), scaled_update));
}

/* Which operands may be moved 16 bytes at a time (16-byte aligned). */
struct WideOperands {
  bool in, residual, gain, weight, bias, out;
};

template <typename T>
struct NormArgs {
  const T* in;       /* plain: x; fused: the update x */
  T* residual;       /* fused only */
  const T* gain;     /* fused only; NULL = ones */
  const T* weight;   /* NULL = ones */
  const T* bias;     /* LayerNorm only; NULL = zeros */
  T* out;            /* plain: out (may alias in); fused: x */
  int64_t rows;
  int d;
  float eps;
  float residual_scale;
  float update_scale;
  bool fused;
  bool layer;        /* LayerNorm rather than RMSNorm */
  bool row_in_smem;  /* park rows in shared memory, else re-read them */
  WideOperands wide;
  int team_size;     /* threads per row, a multiple of 32 */
  int rows_per_block;
};

/* Bytes of shared memory ahead of the parked rows: one partial sum per warp. */
constexpr int kPartialBytes = 32 * sizeof(float);

/* Sum of v over the calling thread's team. Every thread of the block calls it
   (threads of rows past the end pass 0), so the barriers are uniform. The
   order of the additions depends only on the team size. */
__device__ __forceinline__ float team_sum(float v, float* partial, int team, int warps_per_team) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (warps_per_team == 1) return v;
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  float total = 0.0f;
  for (int i = 0; i < warps_per_team; ++i) total += partial[team * warps_per_team + i];
  __syncthreads();  // the slots are reused by the next sum
  return total;
}

template <typename T, int VEC>
__global__ void __launch_bounds__(1024) norm_kernel(NormArgs<T> a) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  float* partial = reinterpret_cast<float*>(shared_bytes);
  T* parked_rows = reinterpret_cast<T*>(shared_bytes + kPartialBytes);

  const int team = static_cast<int>(threadIdx.x) / a.team_size;
  const int lane = static_cast<int>(threadIdx.x) % a.team_size;
  const int warps_per_team = a.team_size / 32;
  const int packs = a.d / VEC;
  const float inv_d = 1.0f / static_cast<float>(a.d);

  for (int64_t group = blockIdx.x; group * a.rows_per_block < a.rows; group += gridDim.x) {
    const int64_t row = group * a.rows_per_block + team;
    const bool active = row < a.rows;
    const int64_t row_offset = row * a.d;
    const T* in_row = a.in + row_offset;
    T* residual_row = a.fused ? a.residual + row_offset : nullptr;
    const T* parked = a.row_in_smem ? parked_rows + static_cast<int64_t>(team) * a.d
                                    : (a.fused ? residual_row : in_row);
    // Shared memory is 16-byte aligned and so is every parked row when VEC > 1.
    const bool parked_wide = a.row_in_smem || (a.fused ? a.wide.residual : a.wide.in);

    // Pass 1: load (fused: update the residual), park, and sum.
    float sum = 0.0f;
    if (active) {
      for (int p = lane; p < packs; p += a.team_size) {
        Pack<T, VEC> vals = load_pack<T, VEC>(in_row, p, a.wide.in);
        if (a.fused) {
          const Pack<T, VEC> r = load_pack<T, VEC>(residual_row, p, a.wide.residual);
          const Pack<T, VEC> g = load_pack_or<T, VEC>(a.gain, p, a.wide.gain, 1.0f);
#pragma unroll
          for (int j = 0; j < VEC; ++j) {
            vals.v[j] = residual_update(r.v[j], vals.v[j], g.v[j], a.residual_scale, a.update_scale);
          }
          store_pack<T, VEC>(residual_row, p, vals, a.wide.residual);
        }
        if (a.row_in_smem) store_pack<T, VEC>(const_cast<T*>(parked), p, vals, true);
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float v = to_f32(vals.v[j]);
          sum = a.layer ? __fadd_rn(sum, v) : __fmaf_rn(v, v, sum);
        }
      }
    }
    const float total = team_sum(sum, partial, team, warps_per_team);

    float mean = 0.0f;
    float inv_std;
    if (a.layer) {
      // Biased variance around the mean, in a second pass for accuracy.
      mean = __fmul_rn(total, inv_d);
      float squares = 0.0f;
      if (active) {
        for (int p = lane; p < packs; p += a.team_size) {
          const Pack<T, VEC> vals = load_pack<T, VEC>(parked, p, parked_wide);
#pragma unroll
          for (int j = 0; j < VEC; ++j) {
            const float diff = __fsub_rn(to_f32(vals.v[j]), mean);
            squares = __fmaf_rn(diff, diff, squares);
          }
        }
      }
      inv_std = rsqrtf(__fmaf_rn(team_sum(squares, partial, team, warps_per_team), inv_d, a.eps));
    } else {
      inv_std = rsqrtf(__fmaf_rn(total, inv_d, a.eps));
    }

    // Pass 2: normalize from the parked row.
    if (active) {
      T* out_row = a.out + row_offset;
      for (int p = lane; p < packs; p += a.team_size) {
        const Pack<T, VEC> vals = load_pack<T, VEC>(parked, p, parked_wide);
        const Pack<T, VEC> w = load_pack_or<T, VEC>(a.weight, p, a.wide.weight, 1.0f);
        const Pack<T, VEC> b = load_pack_or<T, VEC>(a.bias, p, a.wide.bias, 0.0f);
        Pack<T, VEC> y;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float normalized = __fmul_rn(__fsub_rn(to_f32(vals.v[j]), mean), inv_std);
          y.v[j] = from_f32<T>(__fmaf_rn(normalized, to_f32(w.v[j]), to_f32(b.v[j])));
        }
        store_pack<T, VEC>(out_row, p, y, a.wide.out);
      }
    }
  }
}

/* Threads (x, y) of a block take pack x of rows y, y + blockDim.y, ...: the
   gain's index is the pack's index within its row, so no division or modulo
   is needed (rows advance by a multiple, packs within a row by a stride). */
template <typename T, int VEC>
__global__ void residual_add_kernel(T* residual, const T* update, const T* gain, int64_t rows, int packs_per_row,
                                    float residual_scale, float update_scale, WideOperands wide) {
  const int pack_stride = static_cast<int>(gridDim.x * blockDim.x);
  const int64_t row_stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
  for (int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; row < rows; row += row_stride) {
    T* residual_row = residual + row * packs_per_row * VEC;
    const T* update_row = update + row * packs_per_row * VEC;
    for (int p = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); p < packs_per_row; p += pack_stride) {
      const Pack<T, VEC> r = load_pack<T, VEC>(residual_row, p, wide.residual);
      const Pack<T, VEC> u = load_pack<T, VEC>(update_row, p, wide.in);
      const Pack<T, VEC> g = load_pack_or<T, VEC>(gain, p, wide.gain, 1.0f);
      Pack<T, VEC> y;
#pragma unroll
      for (int j = 0; j < VEC; ++j) y.v[j] = residual_update(r.v[j], u.v[j], g.v[j], residual_scale, update_scale);
      store_pack<T, VEC>(residual_row, p, y, wide.residual);
    }
  }
}

/* ---------------------------------------------------------------------- */
/* Host side                                                               */
/* ---------------------------------------------------------------------- */

/* Packs of 16 bytes when D is a multiple of that. A function of D alone, so
   that residual_add, the plain norms and the fused norms of one D split rows
   into packs, and so threads and sums, the same way whatever the alignment. */
template <typename T>
bool d_allows_wide_packs(int64_t d) {
  return d % kWideVec<T> == 0;
}

/* Picks the team size, rows per block and grid for a norm launch from D, the
   row count and the device only, so the plain and the fused norm of the same
   rows get the same teams and so the same reduction order. Few rows
   (decode) spread each row over up to 1024 threads and give each block as few
   rows as possible, so that the work reaches as many SMs as there are rows;
   many rows use teams of at most 256 threads, each handling several packs, so
   that several blocks fit on an SM. */
template <typename T, int VEC>
void plan_norm_launch(const rill_backend_context* ctx, NormArgs<T>& a, dim3* grid, dim3* block,
                      std::size_t* shared_bytes) {
  const int64_t packs = a.d / VEC;
  const int64_t max_team = a.rows >= 4 * static_cast<int64_t>(ctx->sm_count) ? 256 : 1024;
  const int64_t team = std::min<int64_t>(max_team, ceil_div(packs, 32) * 32);
  const int64_t teams_by_threads = std::max<int64_t>(1, 256 / team);
  const int64_t rows_per_block =
      std::max<int64_t>(1, std::min<int64_t>(teams_by_threads, ceil_div(a.rows, ctx->sm_count)));
  a.team_size = static_cast<int>(team);
  a.rows_per_block = static_cast<int>(rows_per_block);
  const std::size_t parked_bytes = static_cast<std::size_t>(rows_per_block) * a.d * sizeof(T);
  a.row_in_smem = kPartialBytes + parked_bytes <= ctx->max_shared_bytes;
  *shared_bytes = kPartialBytes + (a.row_in_smem ? parked_bytes : 0);
  const int64_t groups = ceil_div(a.rows, rows_per_block);
  *grid = dim3(static_cast<unsigned>(std::min<int64_t>(groups, static_cast<int64_t>(ctx->sm_count) * 256)));
  *block = dim3(static_cast<unsigned>(team * rows_per_block));
}

template <typename T, int VEC>
rill_status launch_norm(rill_backend_context* ctx, NormArgs<T> a) {
  dim3 grid, block;
  std::size_t shared_bytes = 0;
  plan_norm_launch<T, VEC>(ctx, a, &grid, &block, &shared_bytes);
  norm_kernel<T, VEC><<<grid, block, shared_bytes, ctx->stream>>>(a);
  return rill_cuda_check(cudaGetLastError(), "norm kernel launch");
}

template <typename T>
rill_status run_norm(rill_backend_context* ctx, NormArgs<T> a) {
  a.wide = WideOperands{aligned16(a.in),     aligned16(a.residual), aligned16(a.gain),
                        aligned16(a.weight), aligned16(a.bias),     aligned16(a.out)};
  if (d_allows_wide_packs<T>(a.d)) {
    return launch_norm<T, kWideVec<T>>(ctx, a);
  }
  return launch_norm<T, 1>(ctx, a);
}

/* Blocks of 256 threads: a warp-multiple of them across a row's packs (up to
   the whole block), the rest across rows; at most 16 blocks per SM, rows
   and then packs taking further passes of the loops beyond that. */
template <typename T, int VEC>
void launch_residual_add(rill_backend_context* ctx, T* residual, const T* update, const T* gain, int64_t rows,
                         int64_t d, float residual_scale, float update_scale, const WideOperands& wide) {
  constexpr int kThreads = 256;
  const int64_t packs = d / VEC;
  const int64_t max_blocks = static_cast<int64_t>(ctx->sm_count) * 16;
  const int64_t threads_x = std::min<int64_t>(kThreads, ceil_div(packs, 32) * 32);
  const int64_t threads_y = kThreads / threads_x;
  const int64_t blocks_x = std::min(ceil_div(packs, threads_x), max_blocks);
  const int64_t blocks_y =
      std::min<int64_t>({ceil_div(rows, threads_y), std::max<int64_t>(1, max_blocks / blocks_x), 65535});
  residual_add_kernel<T, VEC><<<dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y)),
                                dim3(static_cast<unsigned>(threads_x), static_cast<unsigned>(threads_y)), 0,
                                ctx->stream>>>(residual, update, gain, rows, static_cast<int>(packs),
                                               residual_scale, update_scale, wide);
}

template <typename T>
rill_status run_residual_add(rill_backend_context* ctx, T* residual, const T* update, const T* gain, int64_t rows,
                             int64_t d, float residual_scale, float update_scale) {
  const WideOperands wide{aligned16(update), aligned16(residual), aligned16(gain), false, false, false};
  if (d_allows_wide_packs<T>(d)) {
    launch_residual_add<T, kWideVec<T>>(ctx, residual, update, gain, rows, d, residual_scale, update_scale, wide);
  } else {
    launch_residual_add<T, 1>(ctx, residual, update, gain, rows, d, residual_scale, update_scale, wide);
  }
  return rill_cuda_check(cudaGetLastError(), "residual_add kernel launch");
}

/* Fills NormArgs for dtype T from tensor views and runs the norm kernel. */
template <typename T>
rill_status norm_for(rill_backend_context* ctx, const rill_backend_tensor* in, const rill_backend_tensor* residual,
                     const rill_backend_tensor* gain, const rill_backend_tensor* weight,
                     const rill_backend_tensor* bias, const rill_backend_tensor* out, float eps,
                     float residual_scale, float update_scale, bool layer) {
  NormArgs<T> a{};
  a.in = static_cast<const T*>(rill_cuda_data(in));
  a.residual = static_cast<T*>(rill_cuda_data(residual));
  a.gain = static_cast<const T*>(rill_cuda_data(gain));
  a.weight = static_cast<const T*>(rill_cuda_data(weight));
  a.bias = static_cast<const T*>(rill_cuda_data(bias));
  a.out = static_cast<T*>(rill_cuda_data(out));
  a.rows = rill_cuda_rows(in);
  a.d = static_cast<int>(rill_cuda_cols(in));
  a.eps = eps;
  a.residual_scale = residual_scale;
  a.update_scale = update_scale;
  a.fused = residual != nullptr;
  a.layer = layer;
  return run_norm<T>(ctx, a);
}

}  // namespace

rill_status rill_cuda_check_norm_cols(const char* op, int64_t cols) {
  if (cols > INT_MAX) {
    return rill_cuda_fail(RILL_ERROR_UNSUPPORTED, std::string("cuda: ") + op + ": the last dim must be at most " +
                                                      std::to_string(INT_MAX) + ", given " + std::to_string(cols));
  }
  return RILL_OK;
}

namespace {

rill_status norm_dispatch(const char* op, rill_backend_context* ctx, const rill_backend_tensor* in,
                          const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                          const rill_backend_tensor* weight, const rill_backend_tensor* bias,
                          const rill_backend_tensor* out, float eps, float residual_scale, float update_scale,
                          bool layer) {
  rill_status status = rill_cuda_check_norm_cols(op, rill_cuda_cols(in));
  if (status != RILL_OK) return status;
  status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  switch (in->dtype) {
    case RILL_DTYPE_F32:
      return norm_for<float>(ctx, in, residual, gain, weight, bias, out, eps, residual_scale, update_scale, layer);
    case RILL_DTYPE_F16:
      return norm_for<__half>(ctx, in, residual, gain, weight, bias, out, eps, residual_scale, update_scale, layer);
    case RILL_DTYPE_BF16:
      return norm_for<__nv_bfloat16>(ctx, in, residual, gain, weight, bias, out, eps, residual_scale, update_scale,
                                     layer);
    default:
      return rill_cuda_fail(RILL_ERROR_DTYPE, std::string("cuda: ") + op + ": dtype must be f32, f16 or bf16, given " +
                                                  std::to_string(static_cast<int>(in->dtype)));
  }
}

template <typename T, int VEC>
rill_status allow_shared(std::size_t max_shared_bytes) {
  return rill_cuda_check(cudaFuncSetAttribute(norm_kernel<T, VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(max_shared_bytes)),
                         "cudaFuncSetAttribute (norm kernel shared memory)", RILL_ERROR_BACKEND_UNAVAILABLE);
}

}  // namespace

rill_status rill_cuda_norm_prepare(std::size_t max_shared_bytes) {
  // Asking for a kernel's attributes fails when the build holds no code the
  // device can run (an architecture missing from CMAKE_CUDA_ARCHITECTURES).
  cudaFuncAttributes attributes{};
  const cudaError_t error = cudaFuncGetAttributes(&attributes, norm_kernel<float, 1>);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return rill_cuda_fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                          std::string("cuda: this build has no kernels for the device: ") + cudaGetErrorString(error) +
                              " (rebuild with CMAKE_CUDA_ARCHITECTURES including its compute capability)");
  }
  rill_status status = allow_shared<float, 1>(max_shared_bytes);
  if (status == RILL_OK) status = allow_shared<float, kWideVec<float>>(max_shared_bytes);
  if (status == RILL_OK) status = allow_shared<__half, 1>(max_shared_bytes);
  if (status == RILL_OK) status = allow_shared<__half, kWideVec<__half>>(max_shared_bytes);
  if (status == RILL_OK) status = allow_shared<__nv_bfloat16, 1>(max_shared_bytes);
  if (status == RILL_OK) status = allow_shared<__nv_bfloat16, kWideVec<__nv_bfloat16>>(max_shared_bytes);
  return status;
}

rill_status rill_cuda_residual_add(rill_backend_context* ctx, const rill_backend_tensor* residual,
                                   const rill_backend_tensor* update, const rill_backend_tensor* gain,
                                   float residual_scale, float update_scale) {
  rill_status status = rill_cuda_check_norm_cols("residual_add", rill_cuda_cols(residual));
  if (status != RILL_OK) return status;
  status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  const int64_t rows = rill_cuda_rows(residual);
  const int64_t d = rill_cuda_cols(residual);
  void* r = rill_cuda_data(residual);
  const void* u = rill_cuda_data(update);
  const void* g = rill_cuda_data(gain);
  switch (residual->dtype) {
    case RILL_DTYPE_F32:
      return run_residual_add<float>(ctx, static_cast<float*>(r), static_cast<const float*>(u),
                                     static_cast<const float*>(g), rows, d, residual_scale, update_scale);
    case RILL_DTYPE_F16:
      return run_residual_add<__half>(ctx, static_cast<__half*>(r), static_cast<const __half*>(u),
                                      static_cast<const __half*>(g), rows, d, residual_scale, update_scale);
    case RILL_DTYPE_BF16:
      return run_residual_add<__nv_bfloat16>(ctx, static_cast<__nv_bfloat16*>(r), static_cast<const __nv_bfloat16*>(u),
                                             static_cast<const __nv_bfloat16*>(g), rows, d, residual_scale,
                                             update_scale);
    default:
      return rill_cuda_fail(RILL_ERROR_DTYPE, "cuda: residual_add: dtype must be f32, f16 or bf16, given " +
                                                  std::to_string(static_cast<int>(residual->dtype)));
  }
}

rill_status rill_cuda_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                               const rill_backend_tensor* weight, float eps, const rill_backend_tensor* out) {
  return norm_dispatch("rms_norm", ctx, x, nullptr, nullptr, weight, nullptr, out, eps, 1.0f, 1.0f, false);
}

rill_status rill_cuda_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                 const rill_backend_tensor* weight, const rill_backend_tensor* bias, float eps,
                                 const rill_backend_tensor* out) {
  return norm_dispatch("layer_norm", ctx, x, nullptr, nullptr, weight, bias, out, eps, 1.0f, 1.0f, true);
}

rill_status rill_cuda_fused_add_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                         const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                         const rill_backend_tensor* weight, float eps, float residual_scale,
                                         float update_scale) {
  return norm_dispatch("fused_add_rms_norm", ctx, x, residual, gain, weight, nullptr, x, eps, residual_scale,
                       update_scale, false);
}

rill_status rill_cuda_fused_add_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                           const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                           const rill_backend_tensor* weight, const rill_backend_tensor* bias,
                                           float eps, float residual_scale, float update_scale) {
  return norm_dispatch("fused_add_layer_norm", ctx, x, residual, gain, weight, bias, x, eps, residual_scale,
                       update_scale, true);
}
