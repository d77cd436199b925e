/*
 * rill_backend.h — the interface between the rill runtime and its backends.
 *
 * A backend is either built into librill (the CPU backend) or a plugin: a shared
 * library named librill-<name>.so (rill-<name>.dll on Windows) that exports the
 * two symbols declared at the end of this file (use RILL_BACKEND_PLUGIN_DEFINE).
 * Plugins never link against librill: everything they need from the host comes
 * through rill_host_services.
 *
 * The runtime validates every argument before it calls a backend: handles are
 * non-NULL, dtypes agree, shapes fit, optional operands are NULL or well-formed.
 * Backends may rely on that and need not check again.
 *
 * Every table a backend implements starts with abi_version and struct_size.
 * Members are only ever appended. Members marked (optional) may be NULL; the
 * runtime then supplies a default or reports RILL_ERROR_UNSUPPORTED.
 *
 * struct_size has one meaning everywhere, for tables and for the structs passed
 * in either direction: it is the caller's size, the size of the struct as
 * whoever filled it (or, for an out-parameter, whoever will read it) knows it.
 * The receiver reads only the members that lie wholly inside it
 * (RILL_STRUCT_HAS) and, for an out-parameter, writes nothing past it: the
 * bytes past struct_size are never touched.
 * A receiver that knows fewer members than an out-parameter's struct_size
 * lowers struct_size to the size it filled. An out-parameter whose struct_size
 * cannot hold struct_size itself (e.g. 0) is an invalid argument. A plugin
 * hands out the tables of the version agreed at init, with the struct_size
 * that version defines (RILL_BACKEND_SIZE, RILL_BACKEND_OPS_SIZE).
 *
 * Changelog
 *   1  First version: plugin negotiation and init, host services (log, error),
 *      device enumeration, contexts, buffers (alloc, free, write, read, copy),
 *      synchronize, and the residual-stream ops: residual_add, rms_norm,
 *      layer_norm, fused_add_rms_norm, fused_add_layer_norm, gemm.
 *   2  Decoder-layer ops, appended to rill_backend_ops, all (optional): rope,
 *      attention (causal, GQA/MQA, prefill and decode against a KV cache with
 *      per-sequence lengths), activation (plain and gated). A backend without
 *      one makes the layer API return RILL_ERROR_UNSUPPORTED naming it.
 *   3  Options that belong to the backend: rill_backend_option, a typed
 *      key/value list of the config's [backend.<name>] table, reaches the
 *      backend through rill_backend_context_options (options, option_count)
 *      and the new (optional) rill_backend member check_options, which
 *      validates it. The runtime alone matches the config's `device` to a
 *      device index (by index or name substring, using describe_device) and
 *      passes the index only. The context options' device_name, threads and
 *      allow_tf32 are read by version 1-2 backends only.
 *      rill_backend_ops.supports (optional): the capability query, with
 *      rill_backend_op, rill_backend_op_desc and rill_backend_op_name. The
 *      runtime asks it for every op a model will run, with its dtype and
 *      parameters, before any work is queued; without it an op counts as
 *      supported when its member is present. One struct_size rule for every
 *      struct (above), with RILL_STRUCT_HAS, RILL_BACKEND_SIZE and
 *      RILL_BACKEND_OPS_SIZE; describe_device refuses a struct_size of 0
 *      instead of reading it as the full size. A plugin hands out tables carrying the agreed version, for
 *      every version it advertises. host->fail is called on the thread that
 *      called the backend only: a failure on a backend's worker thread is
 *      handed to that thread, which reports it.
 *      rill_backend_ops.attention_ex (optional): attention with a sliding
 *      window and logit soft-capping (rill_attention_params, as
 *      rill_attention_ex); rill_backend_op_desc.window and .softcap tell the
 *      capability query that an attention call needs them. The runtime calls
 *      attention when neither is set, so a backend without attention_ex
 *      keeps running plain attention.
 *      rill_backend_ops.rope_freqs (optional), RILL_BACKEND_OP_ROPE_FREQS:
 *      RoPE from a table of inverse frequencies and an attention factor
 *      (the scaled RoPE variants: linear, dynamic NTK, llama3, YaRN,
 *      LongRoPE). A backend without it makes a model with rope scaling
 *      return RILL_ERROR_UNSUPPORTED naming the op before any work is queued.
 *   4  Quantized weights. A tensor may have a block dtype (RILL_DTYPE_Q8_0 to
 *      RILL_DTYPE_Q6_K, GGUF's layouts; RILL_DTYPE_Q5_0 and _Q5_1 came later
 *      without a new version, as the runtime asks supports for each
 *      weight_dtype and a backend refuses one it does not know); only gemm's w and get_rows' table
 *      ever do. rill_backend_op_desc.weight_dtype gives w's (or the table's)
 *      dtype; the runtime sends a gemm with block weights, or a get_rows from
 *      a block table, only to a version 4 backend whose supports accepts that
 *      weight_dtype (a backend without supports gets none). Versions 1-3 get
 *      element dtypes only.
 *      rill_backend_ops.get_rows (optional), RILL_BACKEND_OP_GET_ROWS: an
 *      embedding lookup, rows of a table of any dtype into f32/f16/bf16.
 *      rill_backend_context_options.host_device: a device the host owns
 *      (rill_context_create_on_vulkan_device), for the Vulkan backend.
 *   5  rill_backend_ops.clamp (optional), RILL_BACKEND_OP_CLAMP: elementwise
 *      clamp to [lo, hi] (OLMo's and OLMoE's clip_qkv on q, k and v). A
 *      backend without it makes a model with clip_qkv return
 *      RILL_ERROR_UNSUPPORTED naming the backend and the op before any work
 *      is queued; other models never need it.
 *   6  rill_backend_ops.wait_semaphore and signal_semaphore (optional):
 *      ordering against a host's timeline semaphore
 *      (rill_context_vulkan_wait, rill_context_vulkan_signal). A backend
 *      without them makes those functions return RILL_ERROR_UNSUPPORTED.
 *   7  rill_backend_ops.shares_buffers (optional): whether one context's ops
 *      may use, and free, buffers allocated through another context of the
 *      backend (the two share a device and its memory), for weights shared
 *      between contexts (rill_lm_create_shared). A backend without it makes
 *      rill_lm_create_shared across contexts return RILL_ERROR_UNSUPPORTED.
 *   8  rill_backend_ops.buffer_wrap_host (optional): a buffer over host
 *      memory the runtime owns, read in place, for weights used straight
 *      from a memory-mapped model file (a GGUF file's tensors). A backend
 *      without it gets a copy of every weight, as before.
 */
#ifndef RILL_BACKEND_H
#define RILL_BACKEND_H

#include <stddef.h>

#include "rill.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest interface version this header describes. */
#define RILL_BACKEND_ABI_VERSION 8u
/* The oldest interface version the runtime built from this header accepts. */
#define RILL_BACKEND_ABI_MIN_VERSION 1u

/* Nonzero when the struct at ptr (a pointer to type, with a struct_size first
   member) holds member wholly inside its struct_size: the one test of the
   struct_size rule above, for C and C++. */
#define RILL_STRUCT_HAS(type, ptr, member) \
  ((size_t)(ptr)->struct_size >= offsetof(type, member) + sizeof(((const type*)0)->member))

/* (version 4) The dtype facts of rill.h for backends, which never link
   against librill: rill_dtype_block_elements, rill_dtype_block_bytes and
   rill_dtype_name are these. */
static inline size_t rill_backend_block_elements(rill_dtype dtype) {
  switch (dtype) {
    case RILL_DTYPE_F32: case RILL_DTYPE_F16: case RILL_DTYPE_BF16: return 1;
    case RILL_DTYPE_Q8_0: case RILL_DTYPE_Q4_0: case RILL_DTYPE_Q5_0: case RILL_DTYPE_Q5_1: return 32;
    case RILL_DTYPE_Q4_K: case RILL_DTYPE_Q5_K: case RILL_DTYPE_Q6_K: return 256;
    default: return 0;
  }
}
static inline size_t rill_backend_block_bytes(rill_dtype dtype) {
  switch (dtype) {
    case RILL_DTYPE_F32: return 4;
    case RILL_DTYPE_F16: case RILL_DTYPE_BF16: return 2;
    case RILL_DTYPE_Q8_0: return 34;
    case RILL_DTYPE_Q4_0: return 18;
    case RILL_DTYPE_Q4_K: return 144;
    case RILL_DTYPE_Q5_K: return 176;
    case RILL_DTYPE_Q6_K: return 210;
    case RILL_DTYPE_Q5_0: return 22;
    case RILL_DTYPE_Q5_1: return 24;
    default: return 0;
  }
}
static inline const char* rill_backend_dtype_name(rill_dtype dtype) {
  switch (dtype) {
    case RILL_DTYPE_F32: return "f32";
    case RILL_DTYPE_F16: return "f16";
    case RILL_DTYPE_BF16: return "bf16";
    case RILL_DTYPE_Q8_0: return "q8_0";
    case RILL_DTYPE_Q4_0: return "q4_0";
    case RILL_DTYPE_Q4_K: return "q4_k";
    case RILL_DTYPE_Q5_K: return "q5_k";
    case RILL_DTYPE_Q6_K: return "q6_k";
    case RILL_DTYPE_Q5_0: return "q5_0";
    case RILL_DTYPE_Q5_1: return "q5_1";
    default: return "invalid";
  }
}
/* Nonzero for a block (quantized weight) dtype. */
static inline int rill_backend_dtype_is_block(rill_dtype dtype) { return rill_backend_block_elements(dtype) > 1; }

/* ------------------------------------------------------------------------- */
/* Host services: what the runtime offers a backend                           */
/* ------------------------------------------------------------------------- */

typedef struct rill_host_services {
  uint32_t abi_version; /* the version negotiated with this plugin */
  uint32_t struct_size; /* sizeof(rill_host_services) as the host knows it */
  /* Emits a log message through the host's logger. backend is the backend's
     name ("vulkan"); message is copied before the call returns. */
  void (*log)(rill_log_level level, const char* backend, const char* message);
  /* Records message as the calling thread's rill_last_error() and returns
     status, so a backend can write `return host->fail(RILL_ERROR_BACKEND, msg);`.
     (version 3) Call it only on the thread that called into the backend: on
     any other thread (a worker of the backend's own pool, a driver callback)
     the message lands in that thread's last error, where no caller sees it. A
     worker that fails hands its status and message to the calling thread,
     which calls fail once the work has joined and returns the status. */
  rill_status (*fail)(rill_status status, const char* message);
} rill_host_services;

/* ------------------------------------------------------------------------- */
/* Objects handed to a backend                                               */
/* ------------------------------------------------------------------------- */

/* A backend's own buffer object, created by buffer_alloc. */
typedef struct rill_backend_buffer rill_backend_buffer;
/* A backend's own context object (a device plus its queue/stream). */
typedef struct rill_backend_context rill_backend_context;

/* A view of a tensor: a byte range of one buffer with a dtype and a shape.
   Row-major and contiguous: element (i0, .., iN) lies at
   offset + ((i0*shape[1] + i1)*shape[2] + ..)*dtype_size. offset is a multiple
   of the dtype size. Unused entries of shape are 1.
   (version 4) A tensor of a block dtype is 2-dim [N, K], K a multiple of the
   block: row r is K / rill_dtype_block_elements(dtype) blocks of
   rill_dtype_block_bytes(dtype) bytes starting at offset + r * that row size. */
typedef struct rill_backend_tensor {
  rill_backend_buffer* buffer;
  uint64_t offset; /* bytes from the start of buffer */
  rill_dtype dtype;
  int32_t ndim;
  int64_t shape[RILL_MAX_DIMS];
} rill_backend_tensor;

/* What a backend option holds. */
typedef enum rill_backend_option_type {
  RILL_BACKEND_OPTION_BOOL = 0,   /* int_value: 0 or 1 */
  RILL_BACKEND_OPTION_INT = 1,    /* int_value */
  RILL_BACKEND_OPTION_FLOAT = 2,  /* float_value */
  RILL_BACKEND_OPTION_STRING = 3, /* string_value: NUL-terminated, never NULL */
  RILL_BACKEND_OPTION_MAX_ENUM = 0x7FFFFFFF
} rill_backend_option_type;

/* (version 3) One key of the config's [backend.<name>] table, translated by
   the runtime (backends never see TOML). key is the name inside the table
   ("threads"); keys are unique within a list. The runtime handles `device`
   itself (see device_index) and never passes it; it refuses arrays, tables and
   dates, and strings holding a NUL. Strings stay valid for the call they are
   passed to only. */
typedef struct rill_backend_option {
  const char* key;
  rill_backend_option_type type;
  int64_t int_value;
  double float_value;
  const char* string_value;
} rill_backend_option;

/* Options for a new backend context, translated by the runtime from the config.
   The runtime passes the struct_size of the version agreed with the backend:
   offsetof(options) for versions 1-2, sizeof for version 3. */
typedef struct rill_backend_context_options {
  uint32_t struct_size;
  /* The device: an index below device_count. The runtime matches the config's
     `device` (an index, or part of a name) against describe_device and always
     passes an index here; a backend never matches names itself. (Versions 1-2
     also allowed -1, meaning device_name; this runtime never passes it.) */
  int32_t device_index;
  const char* device_name;   /* versions 1-2 only: NULL */
  uint32_t threads;          /* versions 1-2 only: the table's `threads`; version 3: 0 */
  uint32_t allow_tf32;       /* versions 1-2 only: the table's `tf32`; version 3: 0 */
  /* ---- version 3 ---- */
  /* The backend's [backend.<name>] keys other than `device`, already accepted
     by check_options; NULL when option_count is 0. Valid during context_create. */
  const rill_backend_option* options;
  uint32_t option_count;
  /* ---- version 4 ---- */
  /* A device the host owns, for the backend it is meant for (the Vulkan
     backend: a rill_vulkan_device); NULL otherwise. With it the backend opens
     no device of its own, ignores device_index, and never destroys the
     host's objects. Valid during context_create only. */
  const void* host_device;
} rill_backend_context_options;

/* What a device is. */
typedef enum rill_device_type {
  RILL_DEVICE_TYPE_CPU = 0,             /* the host CPU (the CPU backend) */
  RILL_DEVICE_TYPE_DISCRETE_GPU = 1,
  RILL_DEVICE_TYPE_INTEGRATED_GPU = 2,
  RILL_DEVICE_TYPE_VIRTUAL_GPU = 3,
  RILL_DEVICE_TYPE_CPU_IMPLEMENTATION = 4, /* a GPU API implemented on the CPU (lavapipe, SwiftShader) */
  RILL_DEVICE_TYPE_OTHER = 5,
  RILL_DEVICE_TYPE_MAX_ENUM = 0x7FFFFFFF
} rill_device_type;

/* A description of one device, filled by describe_device. */
typedef struct rill_backend_device_info {
  uint32_t struct_size;
  char name[256];
  rill_device_type type;
  uint64_t memory_bytes;  /* device-local memory, 0 if unknown */
  uint32_t subgroup_size; /* SIMD/warp/subgroup width, 0 if not meaningful */
  char details[512];      /* one line of backend-specific facts: features, driver, ISA */
} rill_backend_device_info;

/* ------------------------------------------------------------------------- */
/* Operators                                                                 */
/* Semantics are those of the same-named functions in rill.h. Optional        */
/* operands (gain, weight, bias) are NULL when absent. Ops may complete       */
/* asynchronously; a later read, copy or synchronize observes their result.   */
/* ------------------------------------------------------------------------- */

/* The ops a capability query can ask about, one per member of rill_backend_ops. */
typedef enum rill_backend_op {
  RILL_BACKEND_OP_RESIDUAL_ADD = 0,
  RILL_BACKEND_OP_RMS_NORM = 1,
  RILL_BACKEND_OP_LAYER_NORM = 2,
  RILL_BACKEND_OP_FUSED_ADD_RMS_NORM = 3,
  RILL_BACKEND_OP_FUSED_ADD_LAYER_NORM = 4,
  RILL_BACKEND_OP_GEMM = 5,
  RILL_BACKEND_OP_ROPE = 6,
  RILL_BACKEND_OP_ATTENTION = 7,
  RILL_BACKEND_OP_ACTIVATION = 8,
  RILL_BACKEND_OP_ROPE_FREQS = 9, /* version 3 */
  RILL_BACKEND_OP_GET_ROWS = 10,  /* version 4 */
  RILL_BACKEND_OP_CLAMP = 11,     /* version 5 */
  RILL_BACKEND_OP_MAX_ENUM = 0x7FFFFFFF
} rill_backend_op;

/* The name of op as rill_backend_ops spells its member ("attention"), or
   "unknown op" for a value outside the enum: the one spelling for messages. */
static inline const char* rill_backend_op_name(rill_backend_op op) {
  switch (op) {
    case RILL_BACKEND_OP_RESIDUAL_ADD: return "residual_add";
    case RILL_BACKEND_OP_RMS_NORM: return "rms_norm";
    case RILL_BACKEND_OP_LAYER_NORM: return "layer_norm";
    case RILL_BACKEND_OP_FUSED_ADD_RMS_NORM: return "fused_add_rms_norm";
    case RILL_BACKEND_OP_FUSED_ADD_LAYER_NORM: return "fused_add_layer_norm";
    case RILL_BACKEND_OP_GEMM: return "gemm";
    case RILL_BACKEND_OP_ROPE: return "rope";
    case RILL_BACKEND_OP_ATTENTION: return "attention";
    case RILL_BACKEND_OP_ACTIVATION: return "activation";
    case RILL_BACKEND_OP_ROPE_FREQS: return "rope_freqs";
    case RILL_BACKEND_OP_GET_ROWS: return "get_rows";
    case RILL_BACKEND_OP_CLAMP: return "clamp";
    default: return "unknown op";
  }
}

/* (version 3) One op with its dtype and the parameters that bound what a
   backend can run, as asked of rill_backend_ops.supports. The asker zeroes the
   struct and fills struct_size, op, dtype and the parameters of that op; the
   others stay 0. The dimensions are those of the op's call in rill.h:
     residual_add, the norms:  rows, cols (the normalized/added row length)
     gemm:                     rows, cols = K, n = N (out features), has_bias
     rope, rope_freqs:         rows = tokens, heads, head_dim, rotary_dim
     attention:                batch, rows = T (queries), kv_length = S,
                               heads, kv_heads, head_dim, and window and
                               softcap when attention_ex will run it
     activation:               rows * cols elements, act_fn, gated
     get_rows:                 rows = ids, cols = D, n = V (table rows),
                               dtype = out's dtype
     clamp:                    rows * cols elements
   (version 4) weight_dtype: for gemm w's dtype, for get_rows the table's;
   the runtime sets it for these two ops even when it equals dtype. A desc
   whose struct_size does not hold it (a version 3 host) means w's dtype is
   dtype. A backend refuses a block weight_dtype it cannot run.
   A dimension of 0 means "not known yet": the backend answers for the
   parameters given and checks the rest when the op runs. */
typedef struct rill_backend_op_desc {
  uint32_t struct_size;
  rill_backend_op op;
  rill_dtype dtype;
  int32_t heads;
  int64_t batch;
  int64_t rows;
  int64_t cols;
  int64_t n;
  int64_t kv_length;
  int32_t kv_heads;
  int32_t head_dim;
  int32_t rotary_dim;
  rill_act_fn act_fn;
  uint32_t gated;    /* activation: nonzero for fn(x) * up */
  uint32_t has_bias; /* gemm: nonzero with a bias operand */
  int32_t window;    /* attention: the sliding window, 0 = none (through attention_ex) */
  float softcap;     /* attention: the logit soft-cap, 0 = off (through attention_ex) */
  /* ---- version 4 ---- */
  rill_dtype weight_dtype; /* gemm: w's dtype; get_rows: the table's dtype */
} rill_backend_op_desc;

typedef struct rill_backend_ops {
  uint32_t abi_version;
  uint32_t struct_size;
  rill_status (*residual_add)(rill_backend_context* ctx, const rill_backend_tensor* residual,
                              const rill_backend_tensor* update, const rill_backend_tensor* gain,
                              float residual_scale, float update_scale);
  rill_status (*rms_norm)(rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight,
                          float eps, const rill_backend_tensor* out);
  rill_status (*layer_norm)(rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight,
                            const rill_backend_tensor* bias, float eps, const rill_backend_tensor* out);
  rill_status (*fused_add_rms_norm)(rill_backend_context* ctx, const rill_backend_tensor* x,
                                    const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                    const rill_backend_tensor* weight, float eps, float residual_scale,
                                    float update_scale);
  rill_status (*fused_add_layer_norm)(rill_backend_context* ctx, const rill_backend_tensor* x,
                                      const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                      const rill_backend_tensor* weight, const rill_backend_tensor* bias, float eps,
                                      float residual_scale, float update_scale);
  /* out = alpha * a · w^T + beta * out + bias; a viewed as [rows, K], w [N, K].
     (version 4) w may have a block dtype the backend's supports accepted for
     gemm; a, bias and out then have one element dtype. */
  rill_status (*gemm)(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                      const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out);

  /* ---- version 2: decoder-layer ops. Each is (optional): check that
     struct_size covers the member and that it is non-NULL before calling. ---- */

  /* (optional) Rotary position embedding, NeoX rotate-half layout, in place.
     x: [tokens, heads, head_dim] (ndim 3). positions: host memory, one int32 per
     token, each >= 0; read before the call returns. For each token and head,
     with h = rotary_dim / 2 and i < h:
       angle = positions[token] * theta^(-2i / rotary_dim)
       x'[i]     = x[i] * cos(angle) - x[i + h] * sin(angle)
       x'[i + h] = x[i + h] * cos(angle) + x[i] * sin(angle)
     Elements at index >= rotary_dim pass through. rotary_dim is even, in
     [2, head_dim]; theta > 0. Angles in at least f32, math in f32. */
  rill_status (*rope)(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                      float theta, int32_t rotary_dim);
  /* (optional) Causal scaled-dot-product attention with grouped KV heads.
     q, out: [B, T, Hq, head_dim]; k, v: [B, S, Hkv, head_dim] with Hkv dividing
     Hq (query head h reads KV head h / (Hq / Hkv)). kv_lengths: host memory, B
     int32, each in [T, S]; read before the call returns. For sequence b the T
     queries are the last T of its kv_lengths[b] positions: query t sits at
     p = kv_lengths[b] - T + t and attends to key slots 0..p. Logits
     scale * q.k and the softmax are f32. Prefill is T = kv_lengths[b] (S >= T);
     decode is T = 1 against a cache. out does not alias q, k or v. */
  rill_status (*attention)(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                           const rill_backend_tensor* v, const int32_t* kv_lengths, float scale,
                           const rill_backend_tensor* out);
  /* (optional) out = fn(x) * up elementwise (a gated product, e.g. SwiGLU), or
     out = fn(x) when up is NULL. x, up, out: one shape; out may alias x or up. */
  rill_status (*activation)(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                            const rill_backend_tensor* up, const rill_backend_tensor* out);

  /* ---- version 3 ---- */

  /* (optional) The capability query (after ggml's supports_op): can ctx run
     desc->op in desc->dtype with desc's parameters? Returns RILL_OK when it
     can, or RILL_ERROR_UNSUPPORTED (or RILL_ERROR_DTYPE) through host->fail
     with a message that names the op, the parameter, its limit and the value
     given, e.g. "vulkan: attention: head_dim must be at most 256, given 512".
     Reads only the members inside desc->struct_size; queues no work, may be
     called at any time between context_create and context_destroy, from the
     thread that owns ctx. The runtime asks before it queues a model's ops;
     when the member is absent it takes an op as supported when the op's
     member is present. An op the query accepts may still fail when it runs
     (out of memory, a device lost). */
  rill_status (*supports)(rill_backend_context* ctx, const rill_backend_op_desc* desc);
  /* (optional) attention with the members of params (rill_attention_params,
     semantics of rill_attention_ex): the logits are params->scale * q.k,
     soft-capped to softcap * tanh(logit / softcap) when softcap > 0, and the
     query at position p attends to key slots max(0, p - window + 1)..p when
     window > 0. Otherwise as attention. params: host memory, read before the
     call returns, members past params->struct_size taken as 0. The runtime
     calls it only for a nonzero window or softcap. */
  rill_status (*attention_ex)(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                              const rill_backend_tensor* v, const int32_t* kv_lengths,
                              const rill_attention_params* params, const rill_backend_tensor* out);
  /* (optional) rope with the frequencies given instead of derived from a
     theta, and cos and sin scaled: for each token and head, with
     h = rotary_dim / 2 and i < h,
       angle = positions[token] * inv_freq[i]
       c = attention_factor * cos(angle), s = attention_factor * sin(angle)
       x'[i]     = x[i] * c - x[i + h] * s
       x'[i + h] = x[i + h] * c + x[i] * s
     x, positions and rotary_dim as for rope. inv_freq: host memory, h finite
     values > 0, read before the call returns. attention_factor: finite, > 0.
     Angles, cos and sin in at least f32 from the f32 inv_freq, math in f32. */
  rill_status (*rope_freqs)(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                            const float* inv_freq, float attention_factor, int32_t rotary_dim);

  /* ---- version 4 ---- */

  /* (optional) Gathers rows: out row i = table row ids[i], converted to out's
     dtype (a block table dequantized). table: [V, D], element dtype equal to
     out's, or a block dtype supports accepted for get_rows. ids: host memory,
     count values in [0, V), read before the call returns. out: [count, D] in
     f32, f16 or bf16; out does not alias table. */
  rill_status (*get_rows)(rill_backend_context* ctx, const rill_backend_tensor* table, const int32_t* ids,
                          uint64_t count, const rill_backend_tensor* out);

  /* ---- version 5 ---- */

  /* (optional) out = min(max(x, lo), hi) elementwise in f32, rounded to the
     storage dtype; a NaN stays NaN (torch.clamp). x, out: one shape and one
     dtype, f32, f16 or bf16; out may alias x. lo <= hi, both finite. */
  rill_status (*clamp)(rill_backend_context* ctx, const rill_backend_tensor* x, float lo, float hi,
                       const rill_backend_tensor* out);

  /* ---- version 6 ---- */

  /* (optional) A host's timeline semaphore (a VkSemaphore on Vulkan, as an
     integer), never destroyed by the backend. wait_semaphore: the work queued
     after the call starts only once the semaphore reaches value.
     signal_semaphore: the semaphore is set to value once all work queued
     before the call is done; the work is submitted at once. The runtime has
     checked ctx and that semaphore is nonzero; the backend checks the rest. */
  rill_status (*wait_semaphore)(rill_backend_context* ctx, uint64_t semaphore, uint64_t value);
  rill_status (*signal_semaphore)(rill_backend_context* ctx, uint64_t semaphore, uint64_t value);

  /* ---- version 7 ---- */

  /* (optional) RILL_OK when ctx's ops and transfers may use buffers allocated
     through other, and ctx may free them (buffer_free), also after other is
     destroyed: the two share a device and its memory. Otherwise a status
     (RILL_ERROR_INVALID_ARGUMENT) with the reason through host->fail. ctx and
     other are two distinct contexts of this backend. The runtime synchronizes
     other before ctx first uses its buffers, and ctx before it lets go of a
     buffer that another context still uses. */
  rill_status (*shares_buffers)(rill_backend_context* ctx, rill_backend_context* other);

  /* ---- version 8 ---- */

  /* (optional) A buffer of bytes (>= 1) whose contents are the host memory
     at data, used in place: ops and buffer_read read data itself, nothing is
     copied. The runtime keeps the memory valid and unchanged until
     buffer_free has returned, and never writes the buffer (no buffer_write
     or buffer_copy into it, no op output in it); buffer_free releases the
     backend's own object only, never the memory, once no queued work reads
     it. RILL_ERROR_UNSUPPORTED (a message through host->fail is optional)
     when the backend cannot use this memory in place: its alignment, or
     memory the device cannot reach. The runtime then allocates a buffer and
     copies, so refusing is always correct. */
  rill_status (*buffer_wrap_host)(rill_backend_context* ctx, const void* data, uint64_t bytes,
                                  rill_backend_buffer** out_buffer);
} rill_backend_ops;

/* The struct_size of rill_backend_ops at interface version v (1 to
   RILL_BACKEND_ABI_VERSION): a plugin that agreed to v hands out its ops table
   with this size, and its members past it are never read. */
#define RILL_BACKEND_OPS_SIZE(v)                                                    \
  ((v) <= 1u   ? (uint32_t)offsetof(rill_backend_ops, rope)                       \
   : (v) == 2u ? (uint32_t)offsetof(rill_backend_ops, supports)                   \
   : (v) == 3u ? (uint32_t)offsetof(rill_backend_ops, get_rows)                   \
   : (v) == 4u ? (uint32_t)offsetof(rill_backend_ops, clamp)                      \
   : (v) == 5u ? (uint32_t)offsetof(rill_backend_ops, wait_semaphore)             \
   : (v) == 6u ? (uint32_t)offsetof(rill_backend_ops, shares_buffers)             \
   : (v) == 7u ? (uint32_t)offsetof(rill_backend_ops, buffer_wrap_host)           \
               : (uint32_t)sizeof(rill_backend_ops))

/* ------------------------------------------------------------------------- */
/* The backend                                                               */
/* ------------------------------------------------------------------------- */

typedef struct rill_backend {
  uint32_t abi_version; /* the version this table implements */
  uint32_t struct_size; /* sizeof(rill_backend) as the backend was built */
  const char* name;     /* "cpu", "cuda", "vulkan": matches the plugin file name */

  /* Devices. device_count fails with RILL_ERROR_BACKEND_UNAVAILABLE (and the
     reason, through host->fail) when the driver or runtime is missing; zero
     devices is a success with *out_count = 0. */
  rill_status (*device_count)(uint32_t* out_count);
  /* Fills the members of *out_info that lie inside out_info->struct_size (set
     by the caller) and writes nothing past it; RILL_ERROR_INVALID_ARGUMENT
     when struct_size cannot hold struct_size itself. */
  rill_status (*describe_device)(uint32_t index, rill_backend_device_info* out_info);

  /* Contexts. context_create opens the device options->device_index and fails
     with RILL_ERROR_BACKEND_UNAVAILABLE when it cannot be had; it reads only the
     members of *options inside options->struct_size, the rest taking their
     defaults. context_destroy waits for pending work. */
  rill_status (*context_create)(const rill_backend_context_options* options, rill_backend_context** out_ctx);
  void (*context_destroy)(rill_backend_context* ctx);
  /* The chosen device's description, valid for the context's life. */
  const char* (*context_device_name)(rill_backend_context* ctx);
  rill_status (*synchronize)(rill_backend_context* ctx);

  /* Buffers. bytes >= 1. write/read/copy are ordered with the context's ops:
     a write happens after ops submitted before it; a read waits for them and
     returns the data. buffer_free may be called while submitted ops still use
     the buffer: the backend releases the memory only after they finish. */
  rill_status (*buffer_alloc)(rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer** out_buffer);
  void (*buffer_free)(rill_backend_context* ctx, rill_backend_buffer* buffer);
  rill_status (*buffer_write)(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset,
                              const void* src, uint64_t bytes);
  rill_status (*buffer_read)(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, void* dst,
                             uint64_t bytes);
  rill_status (*buffer_copy)(rill_backend_context* ctx, rill_backend_buffer* src, uint64_t src_offset,
                             rill_backend_buffer* dst, uint64_t dst_offset, uint64_t bytes);

  const rill_backend_ops* ops;

  /* ---- version 3 ---- */

  /* (optional) Checks the backend's own options: the keys of the config's
     [backend.<name>] table other than `device` (see rill_backend_option).
     Called before any context is created, possibly with no device present:
     it must not need one. Returns RILL_OK, or RILL_ERROR_CONFIG with a message
     through host->fail that names the key and what was expected (an unknown
     key, a wrong type, a value out of range) and *out_rejected set to the
     index of that option in options; the runtime adds where the key stands in
     the config. NULL: the backend takes no options, and the runtime refuses
     any key but `device`. */
  rill_status (*check_options)(const rill_backend_option* options, uint32_t count, uint32_t* out_rejected);
} rill_backend;

/* The struct_size of rill_backend at interface version v (1 to
   RILL_BACKEND_ABI_VERSION), as RILL_BACKEND_OPS_SIZE is for the ops table. */
#define RILL_BACKEND_SIZE(v) \
  ((v) <= 2u ? (uint32_t)offsetof(rill_backend, check_options) : (uint32_t)sizeof(rill_backend))

/* ------------------------------------------------------------------------- */
/* Plugin entry points                                                       */
/* ------------------------------------------------------------------------- */

/* Negotiation: the host offers the range [host_min, host_max] of interface
   versions it can drive; the plugin answers the highest version inside that
   range that it implements, or 0 to refuse. */
typedef uint32_t (*rill_plugin_negotiate_fn)(uint32_t host_min, uint32_t host_max);
/* Init: called once after a successful negotiation with the agreed version.
   The plugin keeps host (valid until the plugin is unloaded) and hands back
   its backend table. Failing here makes the backend unavailable; the plugin
   reports the reason through host->fail. */
typedef rill_status (*rill_plugin_init_fn)(uint32_t abi_version, const rill_host_services* host,
                                           const rill_backend** out_backend);

#define RILL_PLUGIN_NEGOTIATE_SYMBOL "rill_plugin_negotiate"
#define RILL_PLUGIN_INIT_SYMBOL "rill_plugin_init"

#if defined(__cplusplus)
#  define RILL_PLUGIN_EXTERN_C extern "C"
#else
#  define RILL_PLUGIN_EXTERN_C
#endif
#if defined(_WIN32)
#  define RILL_PLUGIN_EXPORT RILL_PLUGIN_EXTERN_C __declspec(dllexport)
#else
#  define RILL_PLUGIN_EXPORT RILL_PLUGIN_EXTERN_C __attribute__((visibility("default")))
#endif

/* Defines both entry points of a plugin that implements interface versions
   [min_version, max_version]; init_fn has the rill_plugin_init_fn signature. */
#define RILL_BACKEND_PLUGIN_DEFINE(min_version, max_version, init_fn)                                   \
  RILL_PLUGIN_EXPORT uint32_t rill_plugin_negotiate(uint32_t host_min, uint32_t host_max) {              \
    uint32_t best = host_max < (max_version) ? host_max : (max_version);                                  \
    return (best >= host_min && best >= (min_version)) ? best : 0u;                                       \
  }                                                                                                       \
  RILL_PLUGIN_EXPORT rill_status rill_plugin_init(uint32_t abi_version, const rill_host_services* host,   \
                                                  const rill_backend** out_backend) {                     \
    return init_fn(abi_version, host, out_backend);                                                       \
  }

#ifdef __cplusplus
}
#endif

#endif /* RILL_BACKEND_H */
