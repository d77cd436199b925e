/* Internal declarations shared by the files of the CUDA backend plugin.
   One file per object: cuda_device.cpp (devices, contexts), cuda_buffer.cpp,
   cuda_norm.cu (residual and normalization kernels), cuda_gemm.cpp (cuBLASLt),
   cuda_quant.cu (block weights, get_rows), cuda_layer_ops.cu (RoPE,
   attention, activations), cuda_plugin.cpp (the tables and the plugin entry points). */
#ifndef RILL_CUDA_BACKEND_H
#define RILL_CUDA_BACKEND_H

#include <cstddef>
#include <cstdint>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "rill_backend.h"

struct rill_cuda_gemm_cache; /* cuda_gemm.cpp */

/* Device memory a context keeps for its ops and grows on demand
   (rill_cuda_reserve). */
struct rill_cuda_area {
  void* data = nullptr;
  std::size_t bytes = 0;
};

/* Page-locked host memory through which rill_cuda_upload copies the small
   per-call arrays (RoPE positions, KV lengths, get_rows' ids): from pageable
   memory the driver stages the bytes itself, synchronously with the host.
   The slots are taken in turn; a slot is refilled only once the copy from it
   has ended (its event), so the host may run kSlots uploads ahead of the
   device. */
struct rill_cuda_staging {
  static constexpr int kSlots = 64;
  static constexpr std::size_t kSlotBytes = 4096;
  void* host = nullptr; /* kSlots * kSlotBytes; NULL: uploads copy from pageable memory */
  cudaEvent_t copied[kSlots] = {};
  int next = 0;
};

/* The backend's context: one device, one stream, one cuBLASLt handle and the
   workspace that cuBLASLt may use for the GEMMs queued on that stream. */
struct rill_backend_context {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* gemm_workspace = nullptr;
  std::size_t gemm_workspace_bytes = 0;
  rill_cuda_gemm_cache* gemm_cache = nullptr;
  /* Device copies of small host arrays an op reads (RoPE positions, KV
     lengths), reused by later ops in stream order. */
  rill_cuda_area upload;
  rill_cuda_staging staging;
  /* Block weights dequantized for cuBLASLt (cuda_quant.cu), reused by later
     GEMMs in stream order. */
  rill_cuda_area dequantized;
  /* Attention's per-split partial results (cuda_layer_ops.cu). */
  rill_cuda_area attention_partials;
  /* RoPE's cos/sin table, [tokens][rotary_dim / 2] (cuda_layer_ops.cu). */
  rill_cuda_area rope_table;
  /* A GEMM bias copied to a 16-byte aligned address for cuBLASLt's bias
     epilogue (cuda_gemm.cpp). */
  rill_cuda_area aligned_bias;
  /* Whether buffers and areas come from the device's stream-ordered memory
     pool (cudaMallocAsync/cudaFreeAsync), so that freeing one never waits
     for the stream; else cudaMalloc, and a free waits for queued ops. */
  bool stream_ordered_memory = false;
  bool allow_tf32 = false;
  int sm_count = 1;
  std::size_t max_shared_bytes = 48 * 1024; /* per block, after opting in */
  std::string device_name;
};

struct rill_backend_buffer {
  void* data = nullptr;
  std::uint64_t bytes = 0;
};

/* The host services handed over at init; valid until the plugin is unloaded. */
extern const rill_host_services* rill_cuda_host;

/* Reports a failure through the host and returns status. */
rill_status rill_cuda_fail(rill_status status, const std::string& message);

/* Turns a CUDA runtime error into a status and a message that names the call
   and carries CUDA's own error string. cudaErrorMemoryAllocation becomes
   RILL_ERROR_OUT_OF_MEMORY (and is cleared, so the context stays usable);
   other errors become `otherwise`. cudaSuccess returns RILL_OK. */
rill_status rill_cuda_check(cudaError_t error, const char* what, rill_status otherwise = RILL_ERROR_BACKEND);

/* The same for cuBLASLt statuses. */
rill_status rill_cuda_check_lt(cublasStatus_t status, const char* what);

/* Makes ctx's device current on the calling thread. */
rill_status rill_cuda_activate(rill_backend_context* ctx);

/* The device address of a tensor view. */
inline void* rill_cuda_data(const rill_backend_tensor* t) {
  return t ? static_cast<char*>(t->buffer->data) + t->offset : nullptr;
}

/* Rows and D (the last dim) of a tensor view. */
inline std::int64_t rill_cuda_cols(const rill_backend_tensor* t) { return t->shape[t->ndim - 1]; }
inline std::int64_t rill_cuda_rows(const rill_backend_tensor* t) {
  std::int64_t rows = 1;
  for (int32_t i = 0; i + 1 < t->ndim; ++i) rows *= t->shape[i];
  return rows;
}

/* Devices and contexts (cuda_device.cpp). */
rill_status rill_cuda_device_count(uint32_t* out_count);
rill_status rill_cuda_describe_device(uint32_t index, rill_backend_device_info* out_info);
/* Accepts the option `tf32` (bool: f32 GEMMs may use TF32). */
rill_status rill_cuda_check_options(const rill_backend_option* options, uint32_t count, uint32_t* out_rejected);
rill_status rill_cuda_context_create(const rill_backend_context_options* options, rill_backend_context** out_ctx);
void rill_cuda_context_destroy(rill_backend_context* ctx);
const char* rill_cuda_context_device_name(rill_backend_context* ctx);
rill_status rill_cuda_synchronize(rill_backend_context* ctx);

/* Buffers (cuda_buffer.cpp). */
rill_status rill_cuda_buffer_alloc(rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer** out_buffer);
void rill_cuda_buffer_free(rill_backend_context* ctx, rill_backend_buffer* buffer);
rill_status rill_cuda_buffer_write(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset,
                                   const void* src, uint64_t bytes);
rill_status rill_cuda_buffer_read(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, void* dst,
                                  uint64_t bytes);
rill_status rill_cuda_buffer_copy(rill_backend_context* ctx, rill_backend_buffer* src, uint64_t src_offset,
                                  rill_backend_buffer* dst, uint64_t dst_offset, uint64_t bytes);

/* Device memory for ctx's stream: allocated and released in stream order
   where the device has memory pools (ops queued before the release still
   see the memory; the release itself waits for nothing), else with
   cudaMalloc and a cudaFree that first waits for the stream. what names the
   allocation in an error. */
rill_status rill_cuda_malloc(rill_backend_context* ctx, void** out_data, std::size_t bytes, const char* what);
void rill_cuda_free(rill_backend_context* ctx, void* data);

/* Makes area hold at least bytes (releasing a smaller allocation in stream
   order; the old contents are lost). what names the allocation in an error. */
rill_status rill_cuda_reserve(rill_backend_context* ctx, rill_cuda_area* area, std::size_t bytes, const char* what);

/* Copies bytes from host memory into the context's upload area, ordered on
   its stream, and returns the device address in *out_device. src may be
   reused when this returns; the copy stays valid until the next upload.
   Up to rill_cuda_staging::kSlotBytes go through the pinned staging. */
/* Creates ctx's staging (page-locked memory and events) with its device
   current; without page-locked memory uploads copy from pageable memory.
   rill_cuda_staging_release waits for the copies, then frees it. */
rill_status rill_cuda_staging_create(rill_backend_context* ctx);
void rill_cuda_staging_release(rill_backend_context* ctx);

rill_status rill_cuda_upload(rill_backend_context* ctx, const void* src, std::size_t bytes, void** out_device);

/* Residual and normalization ops (cuda_norm.cu). */
rill_status rill_cuda_residual_add(rill_backend_context* ctx, const rill_backend_tensor* residual,
                                   const rill_backend_tensor* update, const rill_backend_tensor* gain,
                                   float residual_scale, float update_scale);
rill_status rill_cuda_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                               const rill_backend_tensor* weight, float eps, const rill_backend_tensor* out);
rill_status rill_cuda_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                 const rill_backend_tensor* weight, const rill_backend_tensor* bias, float eps,
                                 const rill_backend_tensor* out);
rill_status rill_cuda_fused_add_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                         const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                         const rill_backend_tensor* weight, float eps, float residual_scale,
                                         float update_scale);
rill_status rill_cuda_fused_add_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                           const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                           const rill_backend_tensor* weight, const rill_backend_tensor* bias,
                                           float eps, float residual_scale, float update_scale);
/* The limit of the norms and residual_add on the row length, shared with the
   capability query. */
rill_status rill_cuda_check_norm_cols(const char* op, std::int64_t cols);
/* Checks that this build holds kernels the device can run and lets the norm
   kernels use up to max_shared_bytes of shared memory per block. Called once
   per context, with the context's device current. */
rill_status rill_cuda_norm_prepare(std::size_t max_shared_bytes);

/* Decoder-layer ops of interface version 2 (cuda_layer_ops.cu). */
rill_status rill_cuda_rope(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                           float theta, int32_t rotary_dim);
rill_status rill_cuda_rope_freqs(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                                 const float* inv_freq, float attention_factor, int32_t rotary_dim);
rill_status rill_cuda_attention(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                                const rill_backend_tensor* v, const int32_t* kv_lengths, float scale,
                                const rill_backend_tensor* out);
/* Attention with the sliding window and soft-cap of params (interface version 3). */
rill_status rill_cuda_attention_ex(rill_backend_context* ctx, const rill_backend_tensor* q,
                                   const rill_backend_tensor* k, const rill_backend_tensor* v,
                                   const int32_t* kv_lengths, const rill_attention_params* params,
                                   const rill_backend_tensor* out);
rill_status rill_cuda_activation(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                                 const rill_backend_tensor* up, const rill_backend_tensor* out);
/* (interface version 5) out = x clamped to [lo, hi]. */
rill_status rill_cuda_clamp(rill_backend_context* ctx, const rill_backend_tensor* x, float lo, float hi,
                            const rill_backend_tensor* out);
/* Prefill attention on tensor cores (cuda_flash_attention.cu), which
   rill_cuda_attention_ex chooses when rill_cuda_flash_attention_applies: f16
   or bf16, head_dim 64, 128 or 256, at least kRillCudaFlashMinQueries
   queries, B and Hq at most 65535 (grid dimensions), every operand 16-byte
   aligned. Anything else (f32, other head_dims, decode) runs the CUDA-core
   kernel of cuda_layer_ops.cu. device_kv_lengths: B int32 in device memory. */
constexpr std::int64_t kRillCudaFlashMinQueries = 16;
bool rill_cuda_flash_attention_applies(const rill_backend_tensor* q, const rill_backend_tensor* k,
                                       const rill_backend_tensor* v, const rill_backend_tensor* out);
rill_status rill_cuda_flash_attention(rill_backend_context* ctx, const rill_backend_tensor* q,
                                      const rill_backend_tensor* k, const rill_backend_tensor* v,
                                      const int32_t* device_kv_lengths, float scale, int64_t window, float softcap,
                                      const rill_backend_tensor* out);
/* Attention's limits, shared with the capability query: head_dim and the
   query rows B*T*heads. */
rill_status rill_cuda_check_attention(std::int64_t head_dim, std::int64_t query_rows);

/* The capability query of interface versions 3 and 4 (cuda_supports.cpp). */
rill_status rill_cuda_supports(rill_backend_context* ctx, const rill_backend_op_desc* desc);

/* GEMM through cuBLASLt (cuda_gemm.cpp). */
rill_status rill_cuda_gemm(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                           const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out);
rill_cuda_gemm_cache* rill_cuda_gemm_cache_create();
/* Block weights (cuda_quant.cu): gemm with w of a block dtype (rill_cuda_gemm
   hands these over), and get_rows from tables of every dtype. */
rill_status rill_cuda_gemm_block(rill_backend_context* ctx, const rill_backend_tensor* a,
                                 const rill_backend_tensor* w, const rill_backend_tensor* bias, float alpha,
                                 float beta, const rill_backend_tensor* out);
rill_status rill_cuda_get_rows(rill_backend_context* ctx, const rill_backend_tensor* table, const int32_t* ids,
                               uint64_t count, const rill_backend_tensor* out);
void rill_cuda_gemm_cache_destroy(rill_cuda_gemm_cache* cache);

#endif
