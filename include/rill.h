/*
 * rill.h — the public C API of rill, an embeddable runtime for transformer
 * decoder layers.
 *
 * This header is the authoritative description of how every interface is meant
 * to behave. It is plain C99 and compiles as C++.
 *
 * Conventions that hold for every function below unless its own block says
 * otherwise:
 *  - Fallible calls return a rill_status. On failure the out-parameters are left
 *    untouched and rill_last_error() returns a message naming the argument, what
 *    was expected and what was given.
 *  - No C++ exception ever crosses this boundary.
 *  - Handles returned by *_create are owned by the caller and released with the
 *    matching *_destroy; *_destroy(NULL) is a no-op. Accessors borrow: strings
 *    they return live as long as the object they came from.
 *  - A context, and the tensors created in it, are externally synchronized: one
 *    thread at a time per context. Different contexts may be used from different
 *    threads at once. Functions that take no context are thread-safe.
 *  - Enum values never change; new values are only appended.
 *  - Options structs that may grow begin with uint32_t struct_size; the runtime
 *    reads only the fields that fit inside that size.
 */
#ifndef RILL_H
#define RILL_H

#include <stddef.h>
#include <stdint.h>

#define RILL_VERSION_MAJOR 0
#define RILL_VERSION_MINOR 1
#define RILL_VERSION_PATCH 0
#define RILL_VERSION_NUMBER (RILL_VERSION_MAJOR * 10000 + RILL_VERSION_MINOR * 100 + RILL_VERSION_PATCH)

#if defined(RILL_STATIC)
#  define RILL_API
#elif defined(_WIN32)
#  if defined(RILL_BUILDING_LIBRARY)
#    define RILL_API __declspec(dllexport)
#  else
#    define RILL_API __declspec(dllimport)
#  endif
#else
#  define RILL_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Status codes, dtypes, handles                                             */
/* ------------------------------------------------------------------------- */

/* The result of every fallible call. Values are fixed forever. */
typedef enum rill_status {
  RILL_OK = 0,
  RILL_ERROR_INVALID_ARGUMENT = 1,    /* NULL handle/pointer, bad enum or value, aliasing not allowed */
  RILL_ERROR_SHAPE = 2,               /* shapes do not fit the operation */
  RILL_ERROR_DTYPE = 3,               /* dtype unsupported or operands disagree */
  RILL_ERROR_OUT_OF_MEMORY = 4,       /* host or device allocation failed */
  RILL_ERROR_BACKEND_UNAVAILABLE = 5, /* plugin missing or unloadable, no device, driver too old */
  RILL_ERROR_CONFIG = 6,              /* config text invalid: unknown key, wrong type, bad value */
  RILL_ERROR_IO = 7,                  /* file missing, unreadable or corrupt */
  RILL_ERROR_UNSUPPORTED = 8,         /* a valid request this backend cannot do */
  RILL_ERROR_BACKEND = 9,             /* the backend failed at run time (driver error) */
  RILL_ERROR_INTERNAL = 10,
  RILL_STATUS_MAX_ENUM = 0x7FFFFFFF
} rill_status;

/* Storage formats. Arithmetic and reductions are always f32. */
typedef enum rill_dtype {
  RILL_DTYPE_F32 = 0,
  RILL_DTYPE_F16 = 1,  /* IEEE 754 binary16 */
  RILL_DTYPE_BF16 = 2, /* bfloat16: the top 16 bits of an f32, rounded to nearest even */
  RILL_DTYPE_MAX_ENUM = 0x7FFFFFFF
} rill_dtype;

/* One backend device and its queue/stream. Created from a config. */
typedef struct rill_context rill_context;
/* A row-major, contiguous array of 1 to 4 dims that lives in one context. */
typedef struct rill_tensor rill_tensor;

/* ------------------------------------------------------------------------- */
/* Library                                                                   */
/* ------------------------------------------------------------------------- */

/* The version of the library actually loaded: MAJOR*10000 + MINOR*100 + PATCH.
   Compare with RILL_VERSION_NUMBER to detect a header/library mismatch.
   Thread-safe. */
RILL_API uint32_t rill_version_number(void);

/* A static English name for a status ("RILL_ERROR_SHAPE"), or
   "RILL_STATUS_UNKNOWN" for a value not listed above. Never NULL. Thread-safe. */
RILL_API const char* rill_status_string(rill_status status);

/* The message of the last failed call made on the calling thread, or "" when no
   call on this thread has failed yet. Successful calls do not clear it. The
   string is thread-local and stays valid until the next failing call on the
   same thread. Never NULL. */
RILL_API const char* rill_last_error(void);

/* Bytes per element of a dtype (4 or 2), or 0 for a value that is not a dtype. */
RILL_API size_t rill_dtype_size(rill_dtype dtype);

/* A static name for a dtype ("f32", "f16", "bf16"), or "invalid". Never NULL. */
RILL_API const char* rill_dtype_name(rill_dtype dtype);

/* Severity of a log message. */
typedef enum rill_log_level {
  RILL_LOG_DEBUG = 0,
  RILL_LOG_INFO = 1,
  RILL_LOG_WARNING = 2,
  RILL_LOG_ERROR = 3,
  RILL_LOG_MAX_ENUM = 0x7FFFFFFF
} rill_log_level;

/* Receives log messages. message is valid only during the call. May be called
   from any thread that uses rill; it must be thread-safe. */
typedef void (*rill_log_fn)(rill_log_level level, const char* message, void* user_data);

/* Routes the library's log messages (backend selection, plugin loading) to fn.
   fn NULL restores the default, which prints messages at or above the level in
   the RILL_LOG environment variable ("debug", "info", "warning", "error") to
   stderr and prints nothing when RILL_LOG is unset. Messages below min_level are
   dropped before fn is called.
   Errors: RILL_ERROR_INVALID_ARGUMENT for a min_level out of range.
   Thread-safe; takes effect for messages emitted after it returns. */
RILL_API rill_status rill_set_log_callback(rill_log_fn fn, void* user_data, rill_log_level min_level);

/* Writes a human-readable report of the library version, every backend rill
   knows (cpu, cuda, vulkan) with its availability, the reason when it is
   unavailable, and the devices of each available backend — the text that
   `rill info` prints.
   config_toml: optional TOML text (NULL or "" = defaults); its [runtime]
     plugin_dir is searched for plugins as rill_context_create would.
   buf, buf_size: where to write the NUL-terminated report. Pass buf NULL and
     buf_size 0 to only learn the size.
   out_required: receives the size in bytes the report needs, including the NUL.
   Errors: RILL_ERROR_INVALID_ARGUMENT when out_required is NULL, when buf is NULL
   with a nonzero buf_size, or when buf_size is smaller than the report (nothing
   is written then: the report is never truncated); RILL_ERROR_CONFIG for bad
   config text. Thread-safe. */
RILL_API rill_status rill_info_report(const char* config_toml, char* buf, size_t buf_size, size_t* out_required);

/* ------------------------------------------------------------------------- */
/* Contexts                                                                  */
/* ------------------------------------------------------------------------- */

/* Creates a context from TOML config text:
       [runtime]
       backend = "auto"                     # "auto" | "cpu" | "cuda" | "vulkan"
       prefer = ["cuda", "vulkan", "cpu"]   # the order "auto" tries
       plugin_dir = "/opt/game/rill"        # optional
       [backend.cpu]
       threads = 0                          # 0 = all cores
       [backend.cuda]
       device = 0
       tf32 = false                         # allow TF32 for f32 GEMM
       [backend.vulkan]
       device = 0                           # an index, or a substring of the device name
   config_toml NULL or "" gives the defaults shown. Unknown keys, wrong types and
   bad values are RILL_ERROR_CONFIG with the key and its line:column.
   Plugins (librill-<name>.so) are searched in plugin_dir, then in each folder of
   the RILL_PLUGIN_PATH environment variable (':'-separated), then in the folder
   holding librill itself.
   A backend asked for by name that cannot be had fails with
   RILL_ERROR_BACKEND_UNAVAILABLE and the reason. "auto" walks `prefer`, skips
   what it cannot have — and a Vulkan device that is a CPU implementation (such
   as lavapipe), where the CPU backend is faster — and records why each was
   skipped (rill_context_selection_report, and the log at RILL_LOG_INFO).
   out_ctx: receives the new context; the caller owns it.
   Thread-safe. */
RILL_API rill_status rill_context_create(const char* config_toml, rill_context** out_ctx);

/* As rill_context_create, with the config read from the file at path (UTF-8).
   Errors: RILL_ERROR_IO when the file cannot be read; config errors name the
   file. */
RILL_API rill_status rill_context_create_from_file(const char* path, rill_context** out_ctx);

/* Waits for the context's pending work and releases it. Tensors of the context
   must be destroyed first; destroying a context that still owns tensors frees
   them too, and any later use of those tensor handles is undefined.
   NULL is a no-op. */
RILL_API void rill_context_destroy(rill_context* ctx);

/* The backend that runs the context's work: "cpu", "cuda" or "vulkan".
   Returns "" for NULL. */
RILL_API const char* rill_context_backend_name(const rill_context* ctx);

/* A human-readable name of the context's device (e.g. "NVIDIA H200",
   "x86-64 CPU, 16 threads, AVX2"). Returns "" for NULL. */
RILL_API const char* rill_context_device_name(const rill_context* ctx);

/* How the backend was chosen: one line per backend that was considered, in
   order, "name: chosen" or "name: skipped: reason". Returns "" for NULL. */
RILL_API const char* rill_context_selection_report(const rill_context* ctx);

/* Waits until all work submitted to the context has finished. Ops may run
   asynchronously on GPU backends; reads wait on their own. A backend failure
   discovered here is RILL_ERROR_BACKEND. */
RILL_API rill_status rill_context_synchronize(rill_context* ctx);

/* ------------------------------------------------------------------------- */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------- */

/* The most dims a tensor may have. */
#define RILL_MAX_DIMS 4

/* Creates a tensor of the given dtype and shape in ctx's device memory. Its
   contents are undefined until written. Row-major and contiguous; "rows" is the
   product of all dims but the last and D is the last dim.
   ndim: 1 to RILL_MAX_DIMS. shape: ndim dims, each >= 1; the byte size must fit
   in size_t.
   Errors: RILL_ERROR_INVALID_ARGUMENT (NULL ctx, shape or out_tensor; bad dtype
   or ndim), RILL_ERROR_SHAPE (a dim < 1, or a size that overflows),
   RILL_ERROR_OUT_OF_MEMORY. The tensor belongs to ctx and must not outlive it. */
RILL_API rill_status rill_tensor_create(rill_context* ctx, rill_dtype dtype, int32_t ndim, const int64_t* shape,
                                        rill_tensor** out_tensor);

/* Releases a tensor (after work that uses it has finished). NULL is a no-op. */
RILL_API void rill_tensor_destroy(rill_tensor* tensor);

/* Copies bytes raw bytes, already in the tensor's dtype, into the tensor.
   bytes must equal the tensor's byte size exactly (rill_tensor_nbytes).
   Ordered after earlier ops on the context. */
RILL_API rill_status rill_tensor_write(rill_tensor* tensor, const void* src, size_t bytes);

/* Copies the tensor's contents, in its dtype, to dst; waits for pending work
   that writes the tensor. bytes must equal rill_tensor_nbytes. */
RILL_API rill_status rill_tensor_read(const rill_tensor* tensor, void* dst, size_t bytes);

/* Writes count floats, converting them to the tensor's dtype (round to nearest
   even). count must equal rill_tensor_numel. */
RILL_API rill_status rill_tensor_write_f32(rill_tensor* tensor, const float* src, size_t count);

/* Reads the tensor converted to floats; count must equal rill_tensor_numel. */
RILL_API rill_status rill_tensor_read_f32(const rill_tensor* tensor, float* dst, size_t count);

/* Accessors. For a NULL tensor they return 0 (dtype: RILL_DTYPE_MAX_ENUM,
   context: NULL). rill_tensor_dim returns 0 for a dim index out of range. */
RILL_API rill_dtype rill_tensor_dtype(const rill_tensor* tensor);
RILL_API int32_t rill_tensor_ndim(const rill_tensor* tensor);
RILL_API int64_t rill_tensor_dim(const rill_tensor* tensor, int32_t index);
RILL_API size_t rill_tensor_numel(const rill_tensor* tensor);
RILL_API size_t rill_tensor_nbytes(const rill_tensor* tensor);
RILL_API rill_context* rill_tensor_context(const rill_tensor* tensor);

/* ------------------------------------------------------------------------- */
/* Residual-stream operators                                                 */
/*                                                                           */
/* All operands of one op are tensors of ctx and share one dtype; a mismatch */
/* is RILL_ERROR_DTYPE, a tensor of another context RILL_ERROR_INVALID_ARGUMENT.*/
/* "[D]" means a 1-dim tensor whose length is the last dim of the main       */
/* operand. Ops are queued on the context and may complete asynchronously.   */
/* ------------------------------------------------------------------------- */

/* residual = residual_scale*residual + update_scale*(gain ⊙ update), per row.
   residual, update: the same shape. gain: [D] or NULL (all ones).
   update may not alias residual. Scales must be finite. */
RILL_API rill_status rill_residual_add(rill_context* ctx, rill_tensor* residual, const rill_tensor* update,
                                       const rill_tensor* gain, float residual_scale, float update_scale);

/* out = x * rsqrt(mean(x^2) + eps) * weight, per row of the last dim.
   weight: [D] or NULL (all ones). out: x's shape; may alias x. eps: finite, >= 0. */
RILL_API rill_status rill_rms_norm(rill_context* ctx, const rill_tensor* x, const rill_tensor* weight, float eps,
                                   rill_tensor* out);

/* out = (x - mean) * rsqrt(var + eps) * weight + bias with the biased variance.
   weight, bias: [D] or NULL (ones, zeros). out: x's shape; may alias x.
   eps: finite, >= 0. */
RILL_API rill_status rill_layer_norm(rill_context* ctx, const rill_tensor* x, const rill_tensor* weight,
                                     const rill_tensor* bias, float eps, rill_tensor* out);

/* In place, per row:
     residual = residual_scale*residual + update_scale*(gain ⊙ x), rounded to the residual's dtype;
     x = rms_norm(residual) * weight.
   Equal to rill_residual_add followed by rill_rms_norm(residual -> x).
   x, residual: the same shape, not aliased. gain, weight: [D] or NULL. */
RILL_API rill_status rill_fused_add_rms_norm(rill_context* ctx, rill_tensor* x, rill_tensor* residual,
                                             const rill_tensor* gain, const rill_tensor* weight, float eps,
                                             float residual_scale, float update_scale);

/* As rill_fused_add_rms_norm with a LayerNorm (weight, bias: [D] or NULL). */
RILL_API rill_status rill_fused_add_layer_norm(rill_context* ctx, rill_tensor* x, rill_tensor* residual,
                                               const rill_tensor* gain, const rill_tensor* weight,
                                               const rill_tensor* bias, float eps, float residual_scale,
                                               float update_scale);

/* out[rows,N] = alpha * a[rows,K] · w[N,K]^T + beta * out + bias[N]
   (the PyTorch Linear layout: w holds one output feature per row).
   a: [..., K] (rows = product of the leading dims). w: 2-dim [N, K].
   bias: [N] or NULL. out: a's leading dims and N. With beta == 0, out's prior
   contents are ignored (NaNs in it do not propagate). out must not alias a or w.
   alpha, beta: finite. */
RILL_API rill_status rill_gemm(rill_context* ctx, const rill_tensor* a, const rill_tensor* w, const rill_tensor* bias,
                               float alpha, float beta, rill_tensor* out);

#ifdef __cplusplus
}
#endif

#endif /* RILL_H */
