// Pins the layout of every struct in rill_backend.h and the values of the
// public enums. Plugins built against an older header must keep working, so
// these numbers may only ever be extended, never changed. Offsets are for the
// LP64 ABI (x86-64 and AArch64 Linux) that the plugins are built for.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstddef>

#include "rill_backend.h"

static_assert(sizeof(void*) == 8, "the pinned offsets below are for LP64 targets");

// rill_host_services
static_assert(offsetof(rill_host_services, abi_version) == 0);
static_assert(offsetof(rill_host_services, struct_size) == 4);
static_assert(offsetof(rill_host_services, log) == 8);
static_assert(offsetof(rill_host_services, fail) == 16);
static_assert(sizeof(rill_host_services) == 24);

// rill_backend_tensor
static_assert(offsetof(rill_backend_tensor, buffer) == 0);
static_assert(offsetof(rill_backend_tensor, offset) == 8);
static_assert(offsetof(rill_backend_tensor, dtype) == 16);
static_assert(offsetof(rill_backend_tensor, ndim) == 20);
static_assert(offsetof(rill_backend_tensor, shape) == 24);
static_assert(sizeof(rill_backend_tensor) == 56);

// rill_backend_context_options
static_assert(offsetof(rill_backend_context_options, struct_size) == 0);
static_assert(offsetof(rill_backend_context_options, device_index) == 4);
static_assert(offsetof(rill_backend_context_options, device_name) == 8);
static_assert(offsetof(rill_backend_context_options, threads) == 16);
static_assert(offsetof(rill_backend_context_options, allow_tf32) == 20);
static_assert(offsetof(rill_backend_context_options, options) == 24);  // version 3
static_assert(offsetof(rill_backend_context_options, option_count) == 32);
static_assert(offsetof(rill_backend_context_options, host_device) == 40);  // version 4
static_assert(sizeof(rill_backend_context_options) == 48);
// rill_vulkan_device (rill.h)
static_assert(offsetof(rill_vulkan_device, instance) == 8);
static_assert(offsetof(rill_vulkan_device, physical_device) == 16);
static_assert(offsetof(rill_vulkan_device, device) == 24);
static_assert(offsetof(rill_vulkan_device, queue) == 32);
static_assert(offsetof(rill_vulkan_device, queue_family) == 40);
static_assert(offsetof(rill_vulkan_device, storage_16bit) == 44);
static_assert(sizeof(rill_vulkan_device) == 48);

// rill_backend_option (version 3)
static_assert(offsetof(rill_backend_option, key) == 0);
static_assert(offsetof(rill_backend_option, type) == 8);
static_assert(offsetof(rill_backend_option, int_value) == 16);
static_assert(offsetof(rill_backend_option, float_value) == 24);
static_assert(offsetof(rill_backend_option, string_value) == 32);
static_assert(sizeof(rill_backend_option) == 40);
static_assert(sizeof(rill_backend_option_type) == 4);

// rill_backend_device_info
static_assert(offsetof(rill_backend_device_info, struct_size) == 0);
static_assert(offsetof(rill_backend_device_info, name) == 4);
static_assert(sizeof(rill_backend_device_info::name) == 256);
static_assert(offsetof(rill_backend_device_info, type) == 260);
static_assert(offsetof(rill_backend_device_info, memory_bytes) == 264);
static_assert(offsetof(rill_backend_device_info, subgroup_size) == 272);
static_assert(offsetof(rill_backend_device_info, details) == 276);
static_assert(sizeof(rill_backend_device_info::details) == 512);
static_assert(sizeof(rill_backend_device_info) == 792);

// rill_backend_ops: version 1 members, then version 2's, 3's and 4's.
static_assert(offsetof(rill_backend_ops, abi_version) == 0);
static_assert(offsetof(rill_backend_ops, struct_size) == 4);
static_assert(offsetof(rill_backend_ops, residual_add) == 8);
static_assert(offsetof(rill_backend_ops, rms_norm) == 16);
static_assert(offsetof(rill_backend_ops, layer_norm) == 24);
static_assert(offsetof(rill_backend_ops, fused_add_rms_norm) == 32);
static_assert(offsetof(rill_backend_ops, fused_add_layer_norm) == 40);
static_assert(offsetof(rill_backend_ops, gemm) == 48);
static_assert(offsetof(rill_backend_ops, rope) == 56);
static_assert(offsetof(rill_backend_ops, attention) == 64);
static_assert(offsetof(rill_backend_ops, activation) == 72);
static_assert(offsetof(rill_backend_ops, supports) == 80);
static_assert(offsetof(rill_backend_ops, attention_ex) == 88);
static_assert(offsetof(rill_backend_ops, rope_freqs) == 96);
static_assert(offsetof(rill_backend_ops, get_rows) == 104);  // version 4
static_assert(offsetof(rill_backend_ops, clamp) == 112);     // version 5
static_assert(offsetof(rill_backend_ops, wait_semaphore) == 120);    // version 6
static_assert(offsetof(rill_backend_ops, signal_semaphore) == 128);  // version 6
static_assert(offsetof(rill_backend_ops, shares_buffers) == 136);    // version 7
static_assert(offsetof(rill_backend_ops, buffer_wrap_host) == 144);  // version 8
static_assert(sizeof(rill_backend_ops) == 152);
static_assert(RILL_BACKEND_OPS_SIZE(1) == 56 && RILL_BACKEND_OPS_SIZE(2) == 80 && RILL_BACKEND_OPS_SIZE(3) == 104 &&
              RILL_BACKEND_OPS_SIZE(4) == 112 && RILL_BACKEND_OPS_SIZE(5) == 120 && RILL_BACKEND_OPS_SIZE(6) == 136 &&
              RILL_BACKEND_OPS_SIZE(7) == 144 && RILL_BACKEND_OPS_SIZE(8) == 152);

// rill_backend_op_desc (version 3)
static_assert(offsetof(rill_backend_op_desc, struct_size) == 0);
static_assert(offsetof(rill_backend_op_desc, op) == 4);
static_assert(offsetof(rill_backend_op_desc, dtype) == 8);
static_assert(offsetof(rill_backend_op_desc, heads) == 12);
static_assert(offsetof(rill_backend_op_desc, batch) == 16);
static_assert(offsetof(rill_backend_op_desc, rows) == 24);
static_assert(offsetof(rill_backend_op_desc, cols) == 32);
static_assert(offsetof(rill_backend_op_desc, n) == 40);
static_assert(offsetof(rill_backend_op_desc, kv_length) == 48);
static_assert(offsetof(rill_backend_op_desc, kv_heads) == 56);
static_assert(offsetof(rill_backend_op_desc, head_dim) == 60);
static_assert(offsetof(rill_backend_op_desc, rotary_dim) == 64);
static_assert(offsetof(rill_backend_op_desc, act_fn) == 68);
static_assert(offsetof(rill_backend_op_desc, gated) == 72);
static_assert(offsetof(rill_backend_op_desc, has_bias) == 76);
static_assert(offsetof(rill_backend_op_desc, window) == 80);
static_assert(offsetof(rill_backend_op_desc, softcap) == 84);
static_assert(offsetof(rill_backend_op_desc, weight_dtype) == 88);  // version 4
static_assert(sizeof(rill_backend_op_desc) == 96);

// rill_attention_params (rill.h)
static_assert(offsetof(rill_attention_params, struct_size) == 0);
static_assert(offsetof(rill_attention_params, scale) == 4);
static_assert(offsetof(rill_attention_params, window) == 8);
static_assert(offsetof(rill_attention_params, softcap) == 12);
static_assert(sizeof(rill_attention_params) == 16);

// rill_sampler_params and rill_session_options (rill.h)
static_assert(offsetof(rill_sampler_params, struct_size) == 0);
static_assert(offsetof(rill_sampler_params, temperature) == 4);
static_assert(offsetof(rill_sampler_params, top_k) == 8);
static_assert(offsetof(rill_sampler_params, top_p) == 12);
static_assert(offsetof(rill_sampler_params, min_p) == 16);
static_assert(offsetof(rill_sampler_params, repetition_penalty) == 20);
static_assert(offsetof(rill_sampler_params, presence_penalty) == 24);
static_assert(offsetof(rill_sampler_params, frequency_penalty) == 28);
static_assert(offsetof(rill_sampler_params, seed) == 32);
static_assert(sizeof(rill_sampler_params) == 40);
static_assert(offsetof(rill_session_options, struct_size) == 0);
static_assert(offsetof(rill_session_options, capacity) == 4);
static_assert(offsetof(rill_session_options, max_new_tokens) == 8);
static_assert(offsetof(rill_session_options, prefill_chunk) == 12);
static_assert(offsetof(rill_session_options, sampler) == 16);
static_assert(sizeof(rill_session_options) == 56);
static_assert(sizeof(rill_stop_reason) == 4 && RILL_STOP_NONE == 0 && RILL_STOP_EOS == 1 && RILL_STOP_STRING == 2 &&
              RILL_STOP_MAX_NEW_TOKENS == 3 && RILL_STOP_CAPACITY == 4 && RILL_STOP_CANCELLED == 5 &&
              RILL_STOP_CALLBACK == 6);
static_assert(sizeof(rill_backend_op) == 4 && RILL_BACKEND_OP_RESIDUAL_ADD == 0 && RILL_BACKEND_OP_RMS_NORM == 1 &&
              RILL_BACKEND_OP_LAYER_NORM == 2 && RILL_BACKEND_OP_FUSED_ADD_RMS_NORM == 3 &&
              RILL_BACKEND_OP_FUSED_ADD_LAYER_NORM == 4 && RILL_BACKEND_OP_GEMM == 5 && RILL_BACKEND_OP_ROPE == 6 &&
              RILL_BACKEND_OP_ATTENTION == 7 && RILL_BACKEND_OP_ACTIVATION == 8 &&
              RILL_BACKEND_OP_ROPE_FREQS == 9 && RILL_BACKEND_OP_GET_ROWS == 10 &&
              RILL_BACKEND_OP_CLAMP == 11);

// rill_backend
static_assert(offsetof(rill_backend, abi_version) == 0);
static_assert(offsetof(rill_backend, struct_size) == 4);
static_assert(offsetof(rill_backend, name) == 8);
static_assert(offsetof(rill_backend, device_count) == 16);
static_assert(offsetof(rill_backend, describe_device) == 24);
static_assert(offsetof(rill_backend, context_create) == 32);
static_assert(offsetof(rill_backend, context_destroy) == 40);
static_assert(offsetof(rill_backend, context_device_name) == 48);
static_assert(offsetof(rill_backend, synchronize) == 56);
static_assert(offsetof(rill_backend, buffer_alloc) == 64);
static_assert(offsetof(rill_backend, buffer_free) == 72);
static_assert(offsetof(rill_backend, buffer_write) == 80);
static_assert(offsetof(rill_backend, buffer_read) == 88);
static_assert(offsetof(rill_backend, buffer_copy) == 96);
static_assert(offsetof(rill_backend, ops) == 104);
static_assert(offsetof(rill_backend, check_options) == 112);  // version 3
static_assert(sizeof(rill_backend) == 120);

// Enums cross the boundary as 32-bit integers with fixed values.
static_assert(sizeof(rill_status) == 4 && sizeof(rill_dtype) == 4 && sizeof(rill_device_type) == 4);
static_assert(RILL_OK == 0 && RILL_ERROR_INVALID_ARGUMENT == 1 && RILL_ERROR_SHAPE == 2 && RILL_ERROR_DTYPE == 3 &&
              RILL_ERROR_OUT_OF_MEMORY == 4 && RILL_ERROR_BACKEND_UNAVAILABLE == 5 && RILL_ERROR_CONFIG == 6 &&
              RILL_ERROR_IO == 7 && RILL_ERROR_UNSUPPORTED == 8 && RILL_ERROR_BACKEND == 9 &&
              RILL_ERROR_INTERNAL == 10 && RILL_ERROR_NOT_FOUND == 11);
static_assert(RILL_DTYPE_F32 == 0 && RILL_DTYPE_F16 == 1 && RILL_DTYPE_BF16 == 2 && RILL_DTYPE_Q8_0 == 3 &&
              RILL_DTYPE_Q4_0 == 4 && RILL_DTYPE_Q4_K == 5 && RILL_DTYPE_Q5_K == 6 && RILL_DTYPE_Q6_K == 7 &&
              RILL_DTYPE_Q5_0 == 8 && RILL_DTYPE_Q5_1 == 9);
static_assert(RILL_LOG_DEBUG == 0 && RILL_LOG_INFO == 1 && RILL_LOG_WARNING == 2 && RILL_LOG_ERROR == 3);
static_assert(RILL_DEVICE_TYPE_CPU == 0 && RILL_DEVICE_TYPE_DISCRETE_GPU == 1 && RILL_DEVICE_TYPE_INTEGRATED_GPU == 2 &&
              RILL_DEVICE_TYPE_VIRTUAL_GPU == 3 && RILL_DEVICE_TYPE_CPU_IMPLEMENTATION == 4 &&
              RILL_DEVICE_TYPE_OTHER == 5);
static_assert(RILL_BACKEND_ABI_MIN_VERSION >= 1 && RILL_BACKEND_ABI_MIN_VERSION <= RILL_BACKEND_ABI_VERSION);

// The layout is checked when this file compiles; the case below checks that
// the library this test links against was built from the same header version.
TEST_CASE("the loaded library matches the header") {
  CHECK(rill_version_number() == RILL_VERSION_NUMBER);
}

// librill exports its C API and nothing else: internal functions, the built-in
// CPU backend's entry point and C++ library template instances stay hidden.
TEST_CASE("librill exports the C API only") {
  CHECK(dlsym(RTLD_DEFAULT, "rill_context_create") != nullptr);
  CHECK(dlsym(RTLD_DEFAULT, "rill_gemm") != nullptr);
  CHECK(dlsym(RTLD_DEFAULT, "rill_cpu_backend_get") == nullptr);
  // rill::fail(rill_status, const std::string&), an internal helper.
  CHECK(dlsym(RTLD_DEFAULT, "_ZN4rill4failE11rill_statusRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE") ==
        nullptr);
}
