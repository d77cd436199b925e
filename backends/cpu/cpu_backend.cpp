// The CPU backend's table: the entry point rill_cpu_backend_get and the glue
// to the host's services.
#include <atomic>

#include "cpu_backend.h"
#include "cpu_internal.h"
#include "cpu_layer_ops.h"
#include "cpu_quant.h"

namespace rill::cpu {

namespace {

std::atomic<const rill_host_services*> g_host{nullptr};

/* Every CPU buffer is host memory that any CPU context may use and free. */
rill_status shares_buffers(rill_backend_context*, rill_backend_context*) { return RILL_OK; }

const rill_backend_ops kOps = {
    /* .abi_version = */ RILL_BACKEND_ABI_VERSION,
    /* .struct_size = */ RILL_BACKEND_OPS_SIZE(RILL_BACKEND_ABI_VERSION),
    /* .residual_add = */ Reported<op_residual_add>::call,
    /* .rms_norm = */ Reported<op_rms_norm>::call,
    /* .layer_norm = */ Reported<op_layer_norm>::call,
    /* .fused_add_rms_norm = */ Reported<op_fused_add_rms_norm>::call,
    /* .fused_add_layer_norm = */ Reported<op_fused_add_layer_norm>::call,
    /* .gemm = */ Reported<op_gemm_any_weights>::call,
    /* .rope = */ Reported<op_rope>::call,
    /* .attention = */ Reported<op_attention>::call,
    /* .activation = */ Reported<op_activation>::call,
    /* .supports = */ supports,
    /* .attention_ex = */ Reported<op_attention_ex>::call,
    /* .rope_freqs = */ Reported<op_rope_freqs>::call,
    /* .get_rows = */ Reported<op_get_rows>::call,
    /* .clamp = */ Reported<op_clamp>::call,
    /* .wait_semaphore = */ nullptr,
    /* .signal_semaphore = */ nullptr,
    /* .shares_buffers = */ shares_buffers,
    /* .buffer_wrap_host = */ buffer_wrap_host,
};

const rill_backend kBackend = {
    /* .abi_version = */ RILL_BACKEND_ABI_VERSION,
    /* .struct_size = */ sizeof(rill_backend),
    /* .name = */ "cpu",
    /* .device_count = */ device_count,
    /* .describe_device = */ describe_device,
    /* .context_create = */ context_create,
    /* .context_destroy = */ context_destroy,
    /* .context_device_name = */ context_device_name,
    /* .synchronize = */ context_synchronize,
    /* .buffer_alloc = */ buffer_alloc,
    /* .buffer_free = */ buffer_free,
    /* .buffer_write = */ buffer_write,
    /* .buffer_read = */ buffer_read,
    /* .buffer_copy = */ buffer_copy,
    /* .ops = */ &kOps,
    /* .check_options = */ check_options,
};

}  // namespace

const rill_host_services* host_services() { return g_host.load(std::memory_order_acquire); }

rill_status fail(rill_status status, const std::string& message) {
  if (ThreadPool::record_failure(status, message)) return status;
  const rill_host_services* host = host_services();
  if (host && host->fail) return host->fail(status, message.c_str());
  return status;
}

}  // namespace rill::cpu

extern "C" const rill_backend* rill_cpu_backend_get(const rill_host_services* host) {
  if (host) rill::cpu::g_host.store(host, std::memory_order_release);
  return &rill::cpu::kBackend;
}
