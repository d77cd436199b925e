/* The CUDA backend's tables, its error helpers and the plugin entry points. */
#include <new>

#include "cuda_backend.h"
#include "versioned_tables.h"

const rill_host_services* rill_cuda_host = nullptr;

rill_status rill_cuda_fail(rill_status status, const std::string& message) {
  if (rill_cuda_host && rill_cuda_host->fail) return rill_cuda_host->fail(status, message.c_str());
  return status;
}

rill_status rill_cuda_check(cudaError_t error, const char* what, rill_status otherwise) {
  if (error == cudaSuccess) return RILL_OK;
  rill_status status = otherwise;
  if (error == cudaErrorMemoryAllocation) {
    // Allocation failures are not sticky: clearing the error keeps the
    // context usable for the calls that follow.
    (void)cudaGetLastError();
    status = RILL_ERROR_OUT_OF_MEMORY;
  }
  return rill_cuda_fail(status, std::string("cuda: ") + what + ": " + cudaGetErrorString(error) + " (" +
                                    cudaGetErrorName(error) + ")");
}

rill_status rill_cuda_check_lt(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return RILL_OK;
  const rill_status code = status == CUBLAS_STATUS_ALLOC_FAILED ? RILL_ERROR_OUT_OF_MEMORY
                           : status == CUBLAS_STATUS_NOT_SUPPORTED ? RILL_ERROR_UNSUPPORTED
                                                                    : RILL_ERROR_BACKEND;
  return rill_cuda_fail(code, std::string("cuda: ") + what + ": " + cublasLtGetStatusString(status) + " (" +
                                  cublasLtGetStatusName(status) + ")");
}

rill_status rill_cuda_activate(rill_backend_context* ctx) {
  return rill_cuda_check(cudaSetDevice(ctx->device), "cudaSetDevice");
}

namespace {

rill_status fail_without_allocating(rill_status status, const char* message) noexcept {
  if (rill_cuda_host && rill_cuda_host->fail) return rill_cuda_host->fail(status, message);
  return status;
}

/* Wraps an entry point so that no C++ exception (std::bad_alloc from a message
   string or the GEMM plan cache) crosses the plugin boundary. */
template <auto Fn>
struct Guarded;
template <typename... Args, rill_status (*Fn)(Args...)>
struct Guarded<Fn> {
  static rill_status call(Args... args) noexcept {
    try {
      return Fn(args...);
    } catch (const std::bad_alloc&) {
      return fail_without_allocating(RILL_ERROR_OUT_OF_MEMORY, "cuda: out of host memory");
    } catch (...) {
      return fail_without_allocating(RILL_ERROR_INTERNAL, "cuda: unexpected C++ exception");
    }
  }
};
template <typename... Args, void (*Fn)(Args...)>
struct Guarded<Fn> {
  static void call(Args... args) noexcept {
    try {
      Fn(args...);
    } catch (...) {
      // Nothing to report through: these entry points return nothing.
    }
  }
};

/* The tables of the newest version; init hands out the agreed version's copy. */
const rill_backend_ops kCudaOps = {
    /* .abi_version = */ RILL_BACKEND_ABI_VERSION,
    /* .struct_size = */ static_cast<uint32_t>(sizeof(rill_backend_ops)),
    /* .residual_add = */ Guarded<rill_cuda_residual_add>::call,
    /* .rms_norm = */ Guarded<rill_cuda_rms_norm>::call,
    /* .layer_norm = */ Guarded<rill_cuda_layer_norm>::call,
    /* .fused_add_rms_norm = */ Guarded<rill_cuda_fused_add_rms_norm>::call,
    /* .fused_add_layer_norm = */ Guarded<rill_cuda_fused_add_layer_norm>::call,
    /* .gemm = */ Guarded<rill_cuda_gemm>::call,
    /* .rope = */ Guarded<rill_cuda_rope>::call,
    /* .attention = */ Guarded<rill_cuda_attention>::call,
    /* .activation = */ Guarded<rill_cuda_activation>::call,
    /* .supports = */ Guarded<rill_cuda_supports>::call,
    /* .attention_ex = */ Guarded<rill_cuda_attention_ex>::call,
    /* .rope_freqs = */ Guarded<rill_cuda_rope_freqs>::call,
    /* .get_rows = */ Guarded<rill_cuda_get_rows>::call,
    /* .clamp = */ Guarded<rill_cuda_clamp>::call,
    /* .wait_semaphore = */ nullptr,
    /* .signal_semaphore = */ nullptr,
    /* .shares_buffers = */ nullptr,
    /* .buffer_wrap_host = */ nullptr,
};

const rill_backend kCudaBackend = {
    /* .abi_version = */ RILL_BACKEND_ABI_VERSION,
    /* .struct_size = */ static_cast<uint32_t>(sizeof(rill_backend)),
    /* .name = */ "cuda",
    /* .device_count = */ Guarded<rill_cuda_device_count>::call,
    /* .describe_device = */ Guarded<rill_cuda_describe_device>::call,
    /* .context_create = */ Guarded<rill_cuda_context_create>::call,
    /* .context_destroy = */ Guarded<rill_cuda_context_destroy>::call,
    /* .context_device_name = */ rill_cuda_context_device_name,
    /* .synchronize = */ Guarded<rill_cuda_synchronize>::call,
    /* .buffer_alloc = */ Guarded<rill_cuda_buffer_alloc>::call,
    /* .buffer_free = */ Guarded<rill_cuda_buffer_free>::call,
    /* .buffer_write = */ Guarded<rill_cuda_buffer_write>::call,
    /* .buffer_read = */ Guarded<rill_cuda_buffer_read>::call,
    /* .buffer_copy = */ Guarded<rill_cuda_buffer_copy>::call,
    /* .ops = */ &kCudaOps,
    /* .check_options = */ Guarded<rill_cuda_check_options>::call,
};

const rill_backend* backend_for_version(uint32_t version) {
  static const rill_plugin::VersionedTables tables[] = {
      {kCudaBackend, kCudaOps, 1u}, {kCudaBackend, kCudaOps, 2u}, {kCudaBackend, kCudaOps, 3u},
      {kCudaBackend, kCudaOps, 4u}, {kCudaBackend, kCudaOps, 5u}, {kCudaBackend, kCudaOps, 6u},
      {kCudaBackend, kCudaOps, 7u}, {kCudaBackend, kCudaOps, 8u}};
  static_assert(sizeof tables / sizeof tables[0] == RILL_BACKEND_ABI_VERSION, "one table per version served");
  return tables[version - 1].backend();
}

rill_status cuda_plugin_init(uint32_t abi_version, const rill_host_services* host, const rill_backend** out_backend) {
  if (!host || !out_backend) return RILL_ERROR_INVALID_ARGUMENT;
  rill_cuda_host = host;
  if (abi_version < 1u || abi_version > RILL_BACKEND_ABI_VERSION) {
    return rill_cuda_fail(RILL_ERROR_BACKEND_UNAVAILABLE, "cuda: init: expected backend interface version 1 to " +
                                                              std::to_string(RILL_BACKEND_ABI_VERSION) + ", given " +
                                                              std::to_string(abi_version));
  }
  *out_backend = backend_for_version(abi_version);
  return RILL_OK;
}

}  // namespace

RILL_BACKEND_PLUGIN_DEFINE(1u, RILL_BACKEND_ABI_VERSION, cuda_plugin_init)
