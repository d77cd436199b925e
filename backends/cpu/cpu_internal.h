// Shared declarations of the CPU backend's translation units: the backend's
// own objects (context, buffer) and the functions each file provides to the
// backend table in cpu_backend.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cpu_threadpool.h"
#include "rill_backend.h"

// A buffer in host memory: allocated, aligned for the widest vector loads,
// or wrapped (buffer_wrap_host): memory the runtime owns, read in place.
struct rill_backend_buffer {
  void* data;
  uint64_t bytes;
  bool wrapped;
};

// A context: the CPU device with its own pool of worker threads.
struct rill_backend_context {
  explicit rill_backend_context(unsigned threads) : pool(threads) {}
  rill::cpu::ThreadPool pool;
  std::string device_name;
  // Scratch for GEMM operands converted to f32; contexts are externally
  // synchronized, so one op at a time uses it.
  std::vector<float> gemm_scratch;
};

namespace rill::cpu {

// Buffer alignment in bytes: a cache line, which also covers AVX-512 loads.
constexpr uint64_t kBufferAlignment = 64;
// The alignment buffer_wrap_host needs. The kernels read their inputs with
// unaligned vector loads (only outputs are streamed, and a wrapped buffer
// is never one), so it is that of the widest scalar they read, with room.
// 8 takes every tensor of a safetensors file as its writer pads it (the
// data start and every tensor 8-aligned) and of a GGUF file (32-aligned).
constexpr uint64_t kWrapAlignment = 8;

// The host's services, set once by rill_cpu_backend_get.
const rill_host_services* host_services();
// Reports a failure through the host (rill_last_error) and returns status.
// Inside a chunk of a pool job it records the failure in the pool instead
// (ThreadPool::record_failure), and Reported hands it to the host from the
// thread that called the op.
rill_status fail(rill_status status, const std::string& message);

// An ops-table entry: runs op Fn, then reports on the calling thread the first
// failure that Fn's pool jobs recorded on any thread, which outranks the
// status Fn returned.
template <auto Fn>
struct Reported;
template <class... Args, rill_status (*Fn)(rill_backend_context*, Args...)>
struct Reported<Fn> {
  static rill_status call(rill_backend_context* ctx, Args... args) {
    const rill_status status = Fn(ctx, args...);
    std::string message;
    const rill_status failed = ctx->pool.take_failure(message);
    return failed != RILL_OK ? fail(failed, message) : status;
  }
};

// Bytes per element of a storage dtype.
inline size_t dtype_bytes(rill_dtype dtype) { return dtype == RILL_DTYPE_F32 ? 4 : 2; }

inline char* tensor_data(const rill_backend_tensor* t) {
  return t ? static_cast<char*>(t->buffer->data) + t->offset : nullptr;
}
// The last dim of a tensor (D).
inline int64_t tensor_cols(const rill_backend_tensor* t) { return t->shape[t->ndim - 1]; }
// The product of all dims but the last.
inline int64_t tensor_rows(const rill_backend_tensor* t) {
  int64_t rows = 1;
  for (int32_t i = 0; i + 1 < t->ndim; ++i) rows *= t->shape[i];
  return rows;
}

// Hardware threads available to this process.
unsigned hardware_threads();
// "AVX2+FMA+F16C" or "SSE2": the instruction sets the kernels use here.
const char* isa_description();

// cpu_device.cpp
rill_status device_count(uint32_t* out_count);
rill_status describe_device(uint32_t index, rill_backend_device_info* out_info);
std::string device_name(unsigned threads);

// cpu_context.cpp
// Accepts the option `threads` (integer, 0 = all cores).
rill_status check_options(const rill_backend_option* options, uint32_t count, uint32_t* out_rejected);
rill_status context_create(const rill_backend_context_options* options, rill_backend_context** out_ctx);
void context_destroy(rill_backend_context* ctx);
const char* context_device_name(rill_backend_context* ctx);
rill_status context_synchronize(rill_backend_context* ctx);

// cpu_supports.cpp: the capability query (interface version 3)
rill_status supports(rill_backend_context* ctx, const rill_backend_op_desc* desc);

// cpu_buffer.cpp
rill_status buffer_alloc(rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer** out_buffer);
void buffer_free(rill_backend_context* ctx, rill_backend_buffer* buffer);
rill_status buffer_wrap_host(rill_backend_context* ctx, const void* data, uint64_t bytes,
                             rill_backend_buffer** out_buffer);
rill_status buffer_write(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, const void* src,
                         uint64_t bytes);
rill_status buffer_read(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, void* dst,
                        uint64_t bytes);
rill_status buffer_copy(rill_backend_context* ctx, rill_backend_buffer* src, uint64_t src_offset,
                        rill_backend_buffer* dst, uint64_t dst_offset, uint64_t bytes);

// cpu_ops_norm.cpp
rill_status op_residual_add(rill_backend_context* ctx, const rill_backend_tensor* residual,
                            const rill_backend_tensor* update, const rill_backend_tensor* gain, float residual_scale,
                            float update_scale);
rill_status op_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight,
                        float eps, const rill_backend_tensor* out);
rill_status op_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight,
                          const rill_backend_tensor* bias, float eps, const rill_backend_tensor* out);
rill_status op_fused_add_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                  const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                  const rill_backend_tensor* weight, float eps, float residual_scale,
                                  float update_scale);
rill_status op_fused_add_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                    const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                    const rill_backend_tensor* weight, const rill_backend_tensor* bias, float eps,
                                    float residual_scale, float update_scale);

// cpu_ops_gemm.cpp
// What runs GEMMs of more than kGemmFewRowsMax rows: "OpenBLAS sgemm (its
// Haswell kernels) for f32, rill kernels for f16/bf16", "rill kernels
// (OpenBLAS's for this CPU: Prescott)" or "rill kernels".
std::string gemm_engine();
rill_status op_gemm(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                    const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out);

}  // namespace rill::cpu
