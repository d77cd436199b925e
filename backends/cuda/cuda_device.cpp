/* CUDA devices and contexts. */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

#include "cuda_backend.h"
#include "option_checks.h"

namespace {

/* cuBLASLt's workspace per context. NVIDIA recommends 32 MiB on Hopper for the
   fastest GEMM kernels; smaller GPUs use less of it. */
constexpr std::size_t kGemmWorkspaceBytes = 32u << 20;

/* Counts devices. With no driver, or a driver older than the runtime, CUDA
   reports an error whose string is the reason the backend is unavailable. */
rill_status cuda_device_count_raw(int* out_count) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice) {
    (void)cudaGetLastError();
    *out_count = 0;
    return RILL_OK;
  }
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return rill_cuda_fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                          std::string(cudaGetErrorString(error)) + " (" + cudaGetErrorName(error) + ")");
  }
  *out_count = count;
  return RILL_OK;
}

void copy_text(char* dst, std::size_t capacity, const std::string& text) {
  const std::size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

/* Checks the device index the runtime chose (it matches the config's
   `device`; the plugin never matches names itself). */
rill_status cuda_choose_device(const rill_backend_context_options* options, int count, int* out_device) {
  if (count == 0) {
    return rill_cuda_fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                          cudaGetErrorString(cudaErrorNoDevice));
  }
  // Only the members inside the caller's struct_size are read.
  const int32_t index =
      options && RILL_STRUCT_HAS(rill_backend_context_options, options, device_index) ? options->device_index : 0;
  if (index < 0 || index >= count) {
    return rill_cuda_fail(RILL_ERROR_BACKEND_UNAVAILABLE, "cuda: device index: expected 0 to " +
                                                              std::to_string(count - 1) + ", got " +
                                                              std::to_string(index));
  }
  *out_device = index;
  return RILL_OK;
}

/* Whether f32 GEMMs may use TF32: the `tf32` option, or the allow_tf32 field
   of a version 1-2 caller. */
bool cuda_allow_tf32(const rill_backend_context_options* options) {
  if (options == nullptr) return false;
  if (rill_options::has_option_list(options)) {
    const rill_backend_option* tf32 = rill_options::find(options->options, options->option_count, "tf32");
    return tf32 != nullptr && tf32->int_value != 0;
  }
  return RILL_STRUCT_HAS(rill_backend_context_options, options, allow_tf32) && options->allow_tf32 != 0;
}

/* Releases whatever part of a context exists. */
void cuda_context_release(rill_backend_context* ctx) {
  // The areas go back in stream order (they exist only once the stream does),
  // then everything waits for the stream.
  for (rill_cuda_area* area : {&ctx->upload, &ctx->dequantized, &ctx->attention_partials, &ctx->rope_table,
                               &ctx->aligned_bias}) {
    rill_cuda_free(ctx, area->data);
  }
  if (ctx->stream) (void)cudaStreamSynchronize(ctx->stream);
  rill_cuda_staging_release(ctx);
  rill_cuda_gemm_cache_destroy(ctx->gemm_cache);
  if (ctx->lt) (void)cublasLtDestroy(ctx->lt);
  if (ctx->gemm_workspace) (void)cudaFree(ctx->gemm_workspace);
  if (ctx->stream) (void)cudaStreamDestroy(ctx->stream);
  delete ctx;
}

}  // namespace

rill_status rill_cuda_device_count(uint32_t* out_count) {
  int count = 0;
  const rill_status status = cuda_device_count_raw(&count);
  if (status != RILL_OK) return status;
  *out_count = static_cast<uint32_t>(count);
  return RILL_OK;
}

rill_status rill_cuda_describe_device(uint32_t index, rill_backend_device_info* out_info) {
  if (!out_info || out_info->struct_size < sizeof out_info->struct_size) {
    return rill_cuda_fail(RILL_ERROR_INVALID_ARGUMENT,
                          "cuda: describe_device: out_info->struct_size must be at least 4, given " +
                              std::to_string(out_info ? out_info->struct_size : 0));
  }
  int count = 0;
  rill_status status = cuda_device_count_raw(&count);
  if (status != RILL_OK) return status;
  if (index >= static_cast<uint32_t>(count)) {
    return rill_cuda_fail(RILL_ERROR_INVALID_ARGUMENT, "cuda: describe_device: index must be below " +
                                                           std::to_string(count) + ", given " + std::to_string(index));
  }
  cudaDeviceProp prop{};
  status = rill_cuda_check(cudaGetDeviceProperties(&prop, static_cast<int>(index)), "cudaGetDeviceProperties",
                           RILL_ERROR_BACKEND_UNAVAILABLE);
  if (status != RILL_OK) return status;
  int driver = 0;
  int runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  char details[512];
  std::snprintf(details, sizeof details,
                "compute capability %d.%d, %d SMs, %zu KiB shared memory per block, driver %d.%d, runtime %d.%d",
                prop.major, prop.minor, prop.multiProcessorCount, prop.sharedMemPerBlockOptin / 1024, driver / 1000,
                (driver % 1000) / 10, runtime / 1000, (runtime % 1000) / 10);
  rill_backend_device_info info{};
  copy_text(info.name, sizeof info.name, prop.name);
  info.type = prop.integrated ? RILL_DEVICE_TYPE_INTEGRATED_GPU : RILL_DEVICE_TYPE_DISCRETE_GPU;
  info.memory_bytes = prop.totalGlobalMem;
  info.subgroup_size = static_cast<uint32_t>(prop.warpSize);
  copy_text(info.details, sizeof info.details, details);
  // Only the members inside the caller's struct_size are written.
  info.struct_size = std::min<uint32_t>(out_info->struct_size, sizeof info);
  std::memcpy(out_info, &info, info.struct_size);
  return RILL_OK;
}

rill_status rill_cuda_check_options(const rill_backend_option* options, uint32_t count, uint32_t* out_rejected) {
  const std::string problem =
      rill_options::check(options, count, {{"tf32", RILL_BACKEND_OPTION_BOOL}}, out_rejected);
  return problem.empty() ? RILL_OK : rill_cuda_fail(RILL_ERROR_CONFIG, problem);
}

rill_status rill_cuda_context_create(const rill_backend_context_options* options, rill_backend_context** out_ctx) {
  int count = 0;
  rill_status status = cuda_device_count_raw(&count);
  if (status != RILL_OK) return status;
  int device = 0;
  status = cuda_choose_device(options, count, &device);
  if (status != RILL_OK) return status;

  cudaDeviceProp prop{};
  status = rill_cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties",
                           RILL_ERROR_BACKEND_UNAVAILABLE);
  if (status != RILL_OK) return status;
  status = rill_cuda_check(cudaSetDevice(device), "cudaSetDevice", RILL_ERROR_BACKEND_UNAVAILABLE);
  if (status != RILL_OK) return status;
  // Fails when this build holds no kernel for the device's architecture.
  status = rill_cuda_norm_prepare(prop.sharedMemPerBlockOptin);
  if (status != RILL_OK) return status;

  rill_backend_context* ctx = new (std::nothrow) rill_backend_context();
  if (!ctx) return rill_cuda_fail(RILL_ERROR_OUT_OF_MEMORY, "cuda: context_create: out of host memory");
  ctx->device = device;
  ctx->allow_tf32 = cuda_allow_tf32(options);
  ctx->sm_count = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
  ctx->max_shared_bytes = prop.sharedMemPerBlockOptin;
  ctx->device_name = prop.name;
  int memory_pools = 0;
  if (cudaDeviceGetAttribute(&memory_pools, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess) {
    (void)cudaGetLastError();  // no pools: cudaMalloc and cudaFree
    memory_pools = 0;
  }
  ctx->stream_ordered_memory = memory_pools != 0;

  // A non-blocking stream: rill's work never waits for, nor holds up, work
  // that the host or another library queues on the legacy default stream
  // (rill_context_synchronize is the one point where the two meet).
  status = rill_cuda_check(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  if (status == RILL_OK) status = rill_cuda_check_lt(cublasLtCreate(&ctx->lt), "cublasLtCreate");
  if (status == RILL_OK) {
    status = rill_cuda_check(cudaMalloc(&ctx->gemm_workspace, kGemmWorkspaceBytes), "cudaMalloc (GEMM workspace)");
    if (status == RILL_OK) ctx->gemm_workspace_bytes = kGemmWorkspaceBytes;
  }
  if (status == RILL_OK) status = rill_cuda_staging_create(ctx);
  if (status == RILL_OK) {
    ctx->gemm_cache = rill_cuda_gemm_cache_create();
    if (!ctx->gemm_cache) status = rill_cuda_fail(RILL_ERROR_OUT_OF_MEMORY, "cuda: context_create: out of host memory");
  }
  if (status != RILL_OK) {
    cuda_context_release(ctx);
    return status;
  }
  *out_ctx = ctx;
  return RILL_OK;
}

void rill_cuda_context_destroy(rill_backend_context* ctx) {
  if (!ctx) return;
  (void)cudaSetDevice(ctx->device);
  cuda_context_release(ctx);
}

const char* rill_cuda_context_device_name(rill_backend_context* ctx) { return ctx->device_name.c_str(); }

rill_status rill_cuda_synchronize(rill_backend_context* ctx) {
  const rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  return rill_cuda_check(cudaStreamSynchronize(ctx->stream), "cudaStreamSynchronize");
}
