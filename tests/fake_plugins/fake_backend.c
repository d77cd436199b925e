/* A small host-memory backend built as several plugins, one per way a plugin
   can go wrong (FAKE_MODE_*), plus the working one. Each is compiled from this
   file with FAKE_NAME (the backend name) and one FAKE_MODE_* defined.

   The working backend implements residual_add on f32 only; rms_norm always
   fails at run time; the other ops are absent: layer_norm and the fused ops are
   NULL, and gemm and everything after it lie beyond the ops table's
   struct_size (gemm is set to a function that aborts, to prove the runtime
   never calls a member past struct_size).

   The OPTIONS plugin implements interface version 3 and takes options of its
   own (see fake_check_options); every working context names in its device
   name what it received: the version 3 option list, or the version 1-2 fields
   threads and allow_tf32.

   The "capabilities" backend (FAKE_MODE_CAPABILITIES) speaks interface
   version 3 too: every op a decoder stack with RMSNorm needs only counts
   its calls (fake_ops_called, which tests read through dlsym), and its
   capability query refuses attention with head_dim above 4.

   Device faults, for the fault-injection tests (tests/fault), which set these
   countdowns through dlsym: when one is set to N > 0, the Nth buffer
   allocation, buffer write or (fakecaps) op from then on fails, as a device
   out of memory or a device lost would. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rill_backend.h"

#ifndef FAKE_NAME
#error "FAKE_NAME must name the backend"
#endif

#if defined(FAKE_MODE_MISSING_DEPENDENCY)
/* Defined in a library that is deliberately not installed next to the plugin. */
int fake_dependency_answer(void);
#endif

#if defined(FAKE_MODE_OPTIONS) || defined(FAKE_MODE_CAPABILITIES)
#define FAKE_ABI_VERSION 3u
#else
#define FAKE_ABI_VERSION 1u
#endif

static const rill_host_services* g_host;

RILL_PLUGIN_EXPORT int fake_fail_alloc_countdown;
RILL_PLUGIN_EXPORT int fake_fail_write_countdown;
RILL_PLUGIN_EXPORT int fake_fail_op_countdown;
int fake_fail_alloc_countdown = 0;
int fake_fail_write_countdown = 0;
int fake_fail_op_countdown = 0;

/* True when the countdown was armed and this call is the one it counts down to. */
static int fake_fault_now(int* countdown) { return *countdown > 0 && --*countdown == 0; }

struct rill_backend_buffer {
  size_t bytes;
  unsigned char data[];
};

struct rill_backend_context {
  int device;
  char name[512]; /* "fake host device", then what context_create received */
};

#if defined(FAKE_MODE_MANY_DEVICES)
/* Every device type, the most wanted ones last and a discrete GPU twice, so
   that the runtime's default choice has to rank them. */
#define FAKE_MANY_DEVICE_COUNT 6u
static const struct {
  const char* name;
  rill_device_type type;
} g_many_devices[FAKE_MANY_DEVICE_COUNT] = {
    {"fake cpu implementation", RILL_DEVICE_TYPE_CPU_IMPLEMENTATION},
    {"fake other device", RILL_DEVICE_TYPE_OTHER},
    {"fake virtual gpu", RILL_DEVICE_TYPE_VIRTUAL_GPU},
    {"fake integrated gpu", RILL_DEVICE_TYPE_INTEGRATED_GPU},
    {"fake discrete gpu A", RILL_DEVICE_TYPE_DISCRETE_GPU},
    {"fake discrete gpu B", RILL_DEVICE_TYPE_DISCRETE_GPU},
};
#endif

static rill_status fake_device_count(uint32_t* out_count) {
#if defined(FAKE_MODE_NO_DRIVER)
  (void)out_count;
  return g_host->fail(RILL_ERROR_BACKEND_UNAVAILABLE, "libfakedriver.so.1: cannot open shared object file");
#elif defined(FAKE_MODE_ZERO_DEVICES)
  *out_count = 0;
  return RILL_OK;
#elif defined(FAKE_MODE_MANY_DEVICES)
  *out_count = FAKE_MANY_DEVICE_COUNT;
  return RILL_OK;
#else
  *out_count = 1;
  return RILL_OK;
#endif
}


static rill_status fake_describe_device(uint32_t index, rill_backend_device_info* out_info) {
#if defined(FAKE_MODE_DESCRIBE_FAILS)
  (void)out_info;
  return g_host->fail(RILL_ERROR_BACKEND, "fake: device query timed out");
#endif
#if defined(FAKE_MODE_MANY_DEVICES)
  if (index >= FAKE_MANY_DEVICE_COUNT) return g_host->fail(RILL_ERROR_INVALID_ARGUMENT, "fake: no such device");
  snprintf(out_info->name, sizeof out_info->name, "%s", g_many_devices[index].name);
  out_info->type = g_many_devices[index].type;
  out_info->memory_bytes = 1u << 20;
  out_info->subgroup_size = 1;
  strcpy(out_info->details, "host memory, f32 residual_add only");
  return RILL_OK;
#endif
  if (index != 0) return g_host->fail(RILL_ERROR_INVALID_ARGUMENT, "fake: no such device");
  strcpy(out_info->name, "fake host device");
#if defined(FAKE_MODE_CPU_IMPLEMENTATION)
  out_info->type = RILL_DEVICE_TYPE_CPU_IMPLEMENTATION;
#else
  out_info->type = RILL_DEVICE_TYPE_OTHER;
#endif
  out_info->memory_bytes = 1u << 20;
  out_info->subgroup_size = 1;
  strcpy(out_info->details, "host memory, f32 residual_add only");
  return RILL_OK;
}

/* Appends text to the context's name, as far as it fits. */
static void fake_name_append(rill_backend_context* ctx, const char* text) {
  const size_t used = strlen(ctx->name);
  snprintf(ctx->name + used, sizeof(ctx->name) - used, "%s", text);
}

#if defined(FAKE_MODE_OPTIONS)
/* The options this backend takes: queue_depth (integer 1 to 64), label
   (string), scale (float) and verbose (bool). */
static rill_status fake_check_options(const rill_backend_option* options, uint32_t count, uint32_t* out_rejected) {
  static const struct {
    const char* key;
    rill_backend_option_type type;
    const char* expected;
  } keys[] = {{"queue_depth", RILL_BACKEND_OPTION_INT, "an integer"},
              {"label", RILL_BACKEND_OPTION_STRING, "a string"},
              {"scale", RILL_BACKEND_OPTION_FLOAT, "a float"},
              {"verbose", RILL_BACKEND_OPTION_BOOL, "true or false"}};
  char message[256];
  for (uint32_t i = 0; i < count; ++i) {
    size_t k = 0;
    while (k < sizeof(keys) / sizeof(keys[0]) && strcmp(keys[k].key, options[i].key) != 0) ++k;
    *out_rejected = i;
    if (k == sizeof(keys) / sizeof(keys[0])) {
      snprintf(message, sizeof message, "fake: unknown key '%s'; expected queue_depth, label, scale or verbose",
               options[i].key);
      return g_host->fail(RILL_ERROR_CONFIG, message);
    }
    if (options[i].type != keys[k].type) {
      snprintf(message, sizeof message, "fake: '%s': expected %s", options[i].key, keys[k].expected);
      return g_host->fail(RILL_ERROR_CONFIG, message);
    }
    if (k == 0 && (options[i].int_value < 1 || options[i].int_value > 64)) {
      snprintf(message, sizeof message, "fake: 'queue_depth': expected 1 to 64, got %lld",
               (long long)options[i].int_value);
      return g_host->fail(RILL_ERROR_CONFIG, message);
    }
  }
  return RILL_OK;
}
#endif

static rill_status fake_context_create(const rill_backend_context_options* options, rill_backend_context** out_ctx) {
  rill_backend_context* ctx = (rill_backend_context*)malloc(sizeof(*ctx));
  if (ctx == NULL) return g_host->fail(RILL_ERROR_OUT_OF_MEMORY, "fake: out of memory");
  ctx->device = options->device_index;
#if defined(FAKE_MODE_MANY_DEVICES)
  snprintf(ctx->name, sizeof ctx->name, "%s", g_many_devices[options->device_index].name);
#else
  strcpy(ctx->name, "fake host device");
#endif
  char item[256];
  if (options->struct_size >= offsetof(rill_backend_context_options, option_count) + sizeof(uint32_t)) {
    for (uint32_t i = 0; i < options->option_count; ++i) {
      const rill_backend_option* o = &options->options[i];
      switch (o->type) {
        case RILL_BACKEND_OPTION_BOOL: snprintf(item, sizeof item, "%s=%s", o->key, o->int_value ? "true" : "false"); break;
        case RILL_BACKEND_OPTION_INT: snprintf(item, sizeof item, "%s=%lld", o->key, (long long)o->int_value); break;
        case RILL_BACKEND_OPTION_FLOAT: snprintf(item, sizeof item, "%s=%g", o->key, o->float_value); break;
        default: snprintf(item, sizeof item, "%s=\"%s\"", o->key, o->string_value); break;
      }
      fake_name_append(ctx, i == 0 ? " (" : ", ");
      fake_name_append(ctx, item);
      if (i + 1 == options->option_count) fake_name_append(ctx, ")");
    }
  } else if (options->threads != 0 || options->allow_tf32 != 0) {
    snprintf(item, sizeof item, " (threads=%u, allow_tf32=%u)", options->threads, options->allow_tf32);
    fake_name_append(ctx, item);
  }
  *out_ctx = ctx;
  return RILL_OK;
}

static void fake_context_destroy(rill_backend_context* ctx) { free(ctx); }

static const char* fake_context_device_name(rill_backend_context* ctx) { return ctx->name; }

static rill_status fake_synchronize(rill_backend_context* ctx) {
  (void)ctx;
  return RILL_OK;
}

static rill_status fake_buffer_alloc(rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer** out_buffer) {
  (void)ctx;
  if (bytes > SIZE_MAX - sizeof(rill_backend_buffer)) {
    return g_host->fail(RILL_ERROR_OUT_OF_MEMORY, "fake: buffer larger than the address space");
  }
  if (fake_fault_now(&fake_fail_alloc_countdown)) {
    return g_host->fail(RILL_ERROR_OUT_OF_MEMORY, "fake: injected device out of memory");
  }
  rill_backend_buffer* buffer = (rill_backend_buffer*)malloc(sizeof(rill_backend_buffer) + (size_t)bytes);
  if (buffer == NULL) return g_host->fail(RILL_ERROR_OUT_OF_MEMORY, "fake: malloc failed");
  buffer->bytes = (size_t)bytes;
  *out_buffer = buffer;
  return RILL_OK;
}

static void fake_buffer_free(rill_backend_context* ctx, rill_backend_buffer* buffer) {
  (void)ctx;
  free(buffer);
}

static rill_status fake_buffer_write(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset,
                                     const void* src, uint64_t bytes) {
  (void)ctx;
  if (fake_fault_now(&fake_fail_write_countdown)) {
    return g_host->fail(RILL_ERROR_BACKEND, "fake: injected device loss on write");
  }
  memcpy(buffer->data + offset, src, (size_t)bytes);
  return RILL_OK;
}

static rill_status fake_buffer_read(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset,
                                    void* dst, uint64_t bytes) {
  (void)ctx;
  memcpy(dst, buffer->data + offset, (size_t)bytes);
  return RILL_OK;
}

static rill_status fake_buffer_copy(rill_backend_context* ctx, rill_backend_buffer* src, uint64_t src_offset,
                                    rill_backend_buffer* dst, uint64_t dst_offset, uint64_t bytes) {
  (void)ctx;
  memmove(dst->data + dst_offset, src->data + src_offset, (size_t)bytes);
  return RILL_OK;
}

#if defined(FAKE_MODE_CAPABILITIES)
RILL_PLUGIN_EXPORT int fake_ops_called;
int fake_ops_called = 0;

static rill_status counted(void) {
  if (fake_fault_now(&fake_fail_op_countdown)) {
    return g_host->fail(RILL_ERROR_BACKEND, "fake: injected device loss in an op");
  }
  ++fake_ops_called;
  return RILL_OK;
}

static rill_status caps_residual_add(rill_backend_context* ctx, const rill_backend_tensor* residual,
                                     const rill_backend_tensor* update, const rill_backend_tensor* gain,
                                     float residual_scale, float update_scale) {
  (void)ctx, (void)residual, (void)update, (void)gain, (void)residual_scale, (void)update_scale;
  return counted();
}

static rill_status caps_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                 const rill_backend_tensor* weight, float eps, const rill_backend_tensor* out) {
  (void)ctx, (void)x, (void)weight, (void)eps, (void)out;
  return counted();
}

static rill_status caps_fused_add_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                           const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                           const rill_backend_tensor* weight, float eps, float residual_scale,
                                           float update_scale) {
  (void)ctx, (void)x, (void)residual, (void)gain, (void)weight, (void)eps, (void)residual_scale, (void)update_scale;
  return counted();
}

static rill_status caps_gemm(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                             const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out) {
  (void)ctx, (void)a, (void)w, (void)bias, (void)alpha, (void)beta, (void)out;
  return counted();
}

static rill_status caps_rope(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                             float theta, int32_t rotary_dim) {
  (void)ctx, (void)x, (void)positions, (void)theta, (void)rotary_dim;
  return counted();
}

static rill_status caps_attention(rill_backend_context* ctx, const rill_backend_tensor* q,
                                  const rill_backend_tensor* k, const rill_backend_tensor* v,
                                  const int32_t* kv_lengths, float scale, const rill_backend_tensor* out) {
  (void)ctx, (void)q, (void)k, (void)v, (void)kv_lengths, (void)scale, (void)out;
  return counted();
}

static rill_status caps_activation(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                                   const rill_backend_tensor* up, const rill_backend_tensor* out) {
  (void)ctx, (void)fn, (void)x, (void)up, (void)out;
  return counted();
}

static rill_status caps_supports(rill_backend_context* ctx, const rill_backend_op_desc* desc) {
  (void)ctx;
  if (desc->op == RILL_BACKEND_OP_ATTENTION && RILL_STRUCT_HAS(rill_backend_op_desc, desc, head_dim) &&
      desc->head_dim > 4) {
    char message[96];
    snprintf(message, sizeof message, "fake: attention: head_dim must be at most 4, given %d", (int)desc->head_dim);
    return g_host->fail(RILL_ERROR_UNSUPPORTED, message);
  }
  return RILL_OK;
}

static const rill_backend_ops g_ops = {
    /* .abi_version = */ 3,
    /* .struct_size = */ RILL_BACKEND_OPS_SIZE(3),
    /* .residual_add = */ caps_residual_add,
    /* .rms_norm = */ caps_rms_norm,
    /* .layer_norm = */ NULL,
    /* .fused_add_rms_norm = */ caps_fused_add_rms_norm,
    /* .fused_add_layer_norm = */ NULL,
    /* .gemm = */ caps_gemm,
    /* .rope = */ caps_rope,
    /* .attention = */ caps_attention,
    /* .activation = */ caps_activation,
    /* .supports = */ caps_supports,
    /* .attention_ex = */ NULL,
    /* .rope_freqs = */ NULL,
    /* .get_rows = */ NULL,
    /* .clamp = */ NULL,
    /* .wait_semaphore = */ NULL,
    /* .signal_semaphore = */ NULL,
    /* .shares_buffers = */ NULL,
    /* .buffer_wrap_host = */ NULL,
};
#else
static float* f32_data(const rill_backend_tensor* t) { return (float*)(void*)(t->buffer->data + t->offset); }

static size_t numel(const rill_backend_tensor* t) {
  size_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= (size_t)t->shape[i];
  return n;
}

static rill_status fake_residual_add(rill_backend_context* ctx, const rill_backend_tensor* residual,
                                     const rill_backend_tensor* update, const rill_backend_tensor* gain,
                                     float residual_scale, float update_scale) {
  (void)ctx;
  if (residual->dtype != RILL_DTYPE_F32) {
    return g_host->fail(RILL_ERROR_UNSUPPORTED, "fake: residual_add supports f32 only");
  }
  const size_t n = numel(residual);
  const size_t d = (size_t)residual->shape[residual->ndim - 1];
  float* r = f32_data(residual);
  const float* u = f32_data(update);
  const float* g = gain != NULL ? f32_data(gain) : NULL;
  for (size_t i = 0; i < n; ++i) r[i] = residual_scale * r[i] + update_scale * (g != NULL ? g[i % d] : 1.0f) * u[i];
  return RILL_OK;
}

static rill_status fake_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                 const rill_backend_tensor* weight, float eps, const rill_backend_tensor* out) {
  (void)ctx;
  (void)x;
  (void)weight;
  (void)eps;
  (void)out;
  return g_host->fail(RILL_ERROR_BACKEND, "fake: simulated device loss");
}

static rill_status fake_gemm_must_not_be_called(rill_backend_context* ctx, const rill_backend_tensor* a,
                                                const rill_backend_tensor* w, const rill_backend_tensor* bias,
                                                float alpha, float beta, const rill_backend_tensor* out) {
  (void)ctx;
  (void)a;
  (void)w;
  (void)bias;
  (void)alpha;
  (void)beta;
  (void)out;
  abort();
}

static const rill_backend_ops g_ops = {
    /* .abi_version = */ FAKE_ABI_VERSION,
    /* .struct_size = */ (uint32_t)offsetof(rill_backend_ops, gemm),
    /* .residual_add = */ fake_residual_add,
    /* .rms_norm = */ fake_rms_norm,
    /* .layer_norm = */ NULL,
    /* .fused_add_rms_norm = */ NULL,
    /* .fused_add_layer_norm = */ NULL,
    /* .gemm = */ fake_gemm_must_not_be_called,
    /* .rope = */ NULL,
    /* .attention = */ NULL,
    /* .activation = */ NULL,
    /* .supports = */ NULL,
    /* .attention_ex = */ NULL,
    /* .rope_freqs = */ NULL,
    /* .get_rows = */ NULL,
    /* .clamp = */ NULL,
    /* .wait_semaphore = */ NULL,
    /* .signal_semaphore = */ NULL,
    /* .shares_buffers = */ NULL,
    /* .buffer_wrap_host = */ NULL,
};
#endif

static const rill_backend g_backend = {
    /* .abi_version = */ FAKE_ABI_VERSION,
#if defined(FAKE_MODE_SMALL_TABLE)
    /* .struct_size = */ (uint32_t)offsetof(rill_backend, buffer_copy),
#else
    /* .struct_size = */ (uint32_t)sizeof(rill_backend),
#endif
#if defined(FAKE_MODE_WRONG_NAME)
    /* .name = */ "someone_else",
#else
    /* .name = */ FAKE_NAME,
#endif
    /* .device_count = */ fake_device_count,
    /* .describe_device = */ fake_describe_device,
    /* .context_create = */ fake_context_create,
    /* .context_destroy = */ fake_context_destroy,
    /* .context_device_name = */ fake_context_device_name,
    /* .synchronize = */ fake_synchronize,
    /* .buffer_alloc = */ fake_buffer_alloc,
    /* .buffer_free = */ fake_buffer_free,
    /* .buffer_write = */ fake_buffer_write,
    /* .buffer_read = */ fake_buffer_read,
    /* .buffer_copy = */ fake_buffer_copy,
    /* .ops = */ &g_ops,
#if defined(FAKE_MODE_OPTIONS)
    /* .check_options = */ fake_check_options,
#else
    /* .check_options = */ NULL, /* a version 3 member: never read from a version 1 table */
#endif
};

#if defined(FAKE_MODE_NO_INIT_SYMBOL) || defined(FAKE_MODE_OUT_OF_RANGE)
/* These plugins define their entry points by hand to misbehave. */
RILL_PLUGIN_EXPORT uint32_t rill_plugin_negotiate(uint32_t host_min, uint32_t host_max) {
  (void)host_min;
#if defined(FAKE_MODE_OUT_OF_RANGE)
  return host_max + 7u; /* a buggy plugin answering outside the offer */
#else
  return host_max;
#endif
}
#if defined(FAKE_MODE_NO_INIT_SYMBOL)
/* The init function under a misspelt name, as a plugin author might slip. */
RILL_PLUGIN_EXPORT rill_status rill_plugin_initialize(uint32_t abi_version, const rill_host_services* host,
                                                      const rill_backend** out_backend);
RILL_PLUGIN_EXPORT rill_status rill_plugin_initialize(uint32_t abi_version, const rill_host_services* host,
                                                      const rill_backend** out_backend) {
  (void)abi_version;
  g_host = host;
  *out_backend = &g_backend;
  return RILL_OK;
}
#else
RILL_PLUGIN_EXPORT rill_status rill_plugin_init(uint32_t abi_version, const rill_host_services* host,
                                                const rill_backend** out_backend) {
  (void)abi_version;
  g_host = host;
  *out_backend = &g_backend;
  return RILL_OK;
}
#endif
#else
static rill_status fake_init(uint32_t abi_version, const rill_host_services* host, const rill_backend** out_backend) {
  (void)abi_version;
  g_host = host;
#if defined(FAKE_MODE_INIT_FAILS)
  (void)out_backend;
  (void)g_backend; /* the table exists, but init never hands it out */
  return host->fail(RILL_ERROR_BACKEND_UNAVAILABLE, "fake: driver version 0.0 is older than the 1.0 this plugin needs");
#else
#if defined(FAKE_MODE_MISSING_DEPENDENCY)
  if (fake_dependency_answer() != 42) return host->fail(RILL_ERROR_INTERNAL, "fake: wrong dependency");
#endif
  host->log(RILL_LOG_DEBUG, FAKE_NAME, "initialised");
#if defined(FAKE_MODE_NULL_TABLE)
  (void)g_backend; /* succeeds, yet hands back nothing */
  *out_backend = NULL;
#else
  *out_backend = &g_backend;
#endif
  return RILL_OK;
#endif
}
#if defined(FAKE_MODE_REFUSES)
/* A plugin that only speaks interface versions newer than this runtime knows. */
RILL_BACKEND_PLUGIN_DEFINE(RILL_BACKEND_ABI_VERSION + 1u, RILL_BACKEND_ABI_VERSION + 5u, fake_init)
#else
/* The fake backend implements one interface version only. */
RILL_BACKEND_PLUGIN_DEFINE(FAKE_ABI_VERSION, FAKE_ABI_VERSION, fake_init)
#endif
#endif
