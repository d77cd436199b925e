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
 *  - Determinism: on the CPU backend every result is bitwise identical for any
 *    [backend.cpu] threads value and from run to run on one machine (same
 *    binary, same CPU, same environment), so hosts that replay a session or run
 *    lockstep multiplayer may rely on it. Work is split between threads so that
 *    no output element's arithmetic depends on how many threads there are. A
 *    different CPU, instruction-set choice (RILL_CPU_ISA), GEMM choice
 *    (RILL_CPU_GEMM) or OpenBLAS kernel (OPENBLAS_CORETYPE) may round
 *    differently: each instruction set stays within the conformance suite's
 *    tolerances of double-precision references (f32 SiLU within 4 ulp), not
 *    bitwise equal to the others. GPU backends make no such promise.
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

/* Marks a declaration that stays for compatibility; the compiler warns where it
   is used, naming what to call instead. */
#if defined(__GNUC__) || defined(__clang__)
#  define RILL_DEPRECATED(replacement) __attribute__((deprecated("use " replacement)))
#elif defined(_MSC_VER)
#  define RILL_DEPRECATED(replacement) __declspec(deprecated("use " replacement))
#else
#  define RILL_DEPRECATED(replacement)
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
  RILL_ERROR_BACKEND = 9,             /* the backend failed at run time (driver error); see below */
  RILL_ERROR_INTERNAL = 10,
  RILL_ERROR_NOT_FOUND = 11,          /* a named thing does not exist or has not been set (a model weight) */
  RILL_STATUS_MAX_ENUM = 0x7FFFFFFF
} rill_status;

/* Failures leave state as it was: a call that fails (RILL_ERROR_OUT_OF_MEMORY
   included) creates nothing, leaks nothing and leaves the objects it was given
   usable. RILL_ERROR_BACKEND: rill marks no context lost; the context and its
   objects stay valid, the outputs of the failing call are undefined, and each
   later call reaches the backend again, which reports RILL_ERROR_BACKEND again
   while its device stays lost (destroy the context and make a new one then). */

/* Storage formats. Arithmetic and reductions are always f32.
   F32, F16 and BF16 are element dtypes: any tensor, any op.
   Q8_0 to Q5_1 are weight-only block formats, bit for bit GGUF's (llama.cpp's)
   layouts, so a GGUF tensor is stored without conversion (copied once into
   the backend's buffer: docs/GGUF.md). A block holds a fixed run of
   consecutive elements of one row (rill_dtype_block_elements) in a fixed
   number of bytes (rill_dtype_block_bytes), little-endian; "d" is an f16 scale.
   A tensor of a block dtype is 2-dim [N, K] with K a multiple of the block:
   the w of rill_gemm or the table of rill_get_rows. Every op operand that
   holds activations refuses it (RILL_ERROR_DTYPE naming the argument).
   docs/QUANTIZATION.md gives each layout byte by byte. */
typedef enum rill_dtype {
  RILL_DTYPE_F32 = 0,
  RILL_DTYPE_F16 = 1,  /* IEEE 754 binary16 */
  RILL_DTYPE_BF16 = 2, /* bfloat16: the top 16 bits of an f32, rounded to nearest even */
  /* 32 elements in 34 bytes: d, then 32 int8 q; x = d * q. */
  RILL_DTYPE_Q8_0 = 3,
  /* 32 elements in 18 bytes: d, then 16 bytes of 4-bit q (element j in the
     low nibble of byte j, element j + 16 in its high nibble); x = d * (q - 8). */
  RILL_DTYPE_Q4_0 = 4,
  /* 256 elements in 144 bytes: d, dmin, 12 bytes of eight 6-bit scales and
     mins, 128 bytes of 4-bit q; x = d * scale * q - dmin * min per 32. */
  RILL_DTYPE_Q4_K = 5,
  /* 256 elements in 176 bytes: Q4_K's fields plus 32 bytes of fifth bits. */
  RILL_DTYPE_Q5_K = 6,
  /* 256 elements in 210 bytes: 128 bytes of low 4 bits, 64 of high 2 bits,
     16 int8 scales (one per 16), then d; x = d * scale * (q - 32). */
  RILL_DTYPE_Q6_K = 7,
  /* 32 elements in 22 bytes: d, 4 bytes qh (a little-endian uint32 whose bit
     j is the fifth bit of element j), then 16 bytes of low 4 bits laid out as
     Q4_0's; x = d * (q - 16). llama.cpp's quantizer uses it (and Q5_1) for
     the matrices of a Q4_K_M / Q5_K_M file whose rows are no multiple of 256. */
  RILL_DTYPE_Q5_0 = 8,
  /* 32 elements in 24 bytes: d, m (f16), then Q5_0's qh and qs; x = d * q + m. */
  RILL_DTYPE_Q5_1 = 9,
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

/* Bytes per element of an element dtype (4 or 2); 0 for a block dtype, whose
   elements have no whole byte size (see rill_dtype_block_bytes), and for a
   value that is not a dtype. */
RILL_API size_t rill_dtype_size(rill_dtype dtype);

/* Elements per block: 32 (Q8_0, Q4_0, Q5_0, Q5_1), 256 (Q4_K, Q5_K, Q6_K), 1 for an
   element dtype, 0 for a value that is not a dtype. Thread-safe. */
RILL_API size_t rill_dtype_block_elements(rill_dtype dtype);

/* Bytes per block: 34 (Q8_0), 18 (Q4_0), 144 (Q4_K), 176 (Q5_K), 210 (Q6_K),
   22 (Q5_0), 24 (Q5_1),
   the element size for an element dtype, 0 for a value that is not a dtype.
   A row of K elements takes K / rill_dtype_block_elements * this many bytes.
   Thread-safe. */
RILL_API size_t rill_dtype_block_bytes(rill_dtype dtype);

/* A static name for a dtype ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_k",
   "q5_k", "q6_k", "q5_0", "q5_1"), or "invalid". Never NULL. */
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
   from any thread that uses rill; it must be thread-safe, and it must not call
   rill_set_log_callback (the callback runs while the logger is locked). */
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
   config text; RILL_ERROR_OUT_OF_MEMORY when host memory runs out, also while a
   backend lists its devices (never printed as the backend being unavailable).
   Thread-safe. */
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
       threads = 0                          # 0 = all cores; results never depend on it
       [backend.cuda]
       device = 0
       tf32 = false                         # allow TF32 for f32 GEMM
       [backend.vulkan]
       device = "radeon"                    # an index, or part of the device name
   config_toml NULL or "" gives the defaults shown. Unknown keys, wrong types and
   bad values are RILL_ERROR_CONFIG with the key and its line:column.
   A [backend.<name>] table may be given for any backend, plugins included.
   `device` is read by rill for every backend: an index (as `rill info` lists
   them), or text that picks the first device whose name contains it, ignoring
   ASCII case. With no `device`, a discrete GPU is preferred, then an
   integrated GPU, a virtual GPU, any other device, and a CPU implementation
   of a GPU API last (the first of the best kind). No such device makes that backend
   unavailable, with a reason that names what was asked and lists the devices.
   Every other key belongs to the backend, which checks it: the CPU backend
   takes `threads` (integer 0 to 1024), CUDA `tf32` (boolean), Vulkan
   `pipeline_cache` (the path of its pipeline cache file) and `queue_priority`
   (float 0.0 to 1.0, its compute queue's priority); a plugin documents
   its own. Values are booleans, integers, floats or
   strings. Each backend with a table checks it when the context is created,
   whichever backend is chosen; the table of a backend whose plugin cannot be
   loaded cannot be checked and is ignored (a warning is logged).
   Plugins (librill-<name>.so; rill-<name>.dll on Windows) are searched in
   plugin_dir, then in each folder of the RILL_PLUGIN_PATH environment variable
   (':'-separated; ';' on Windows), then in the folder holding librill itself.
   Paths are UTF-8 on every system.
   A backend asked for by name that cannot be had fails with
   RILL_ERROR_BACKEND_UNAVAILABLE and the reason (RILL_ERROR_OUT_OF_MEMORY when
   its context could not be made for lack of memory). "auto" walks `prefer`, skips
   what it cannot have — and a Vulkan device that is a CPU implementation (such
   as lavapipe), where the CPU backend is faster, unless `device` names it —
   and records why each was
   skipped (rill_context_selection_report, and the log at RILL_LOG_INFO).
   out_ctx: receives the new context; the caller owns it.
   Thread-safe. */
RILL_API rill_status rill_context_create(const char* config_toml, rill_context** out_ctx);

/* As rill_context_create, with the config read from the file at path (UTF-8).
   Errors: RILL_ERROR_IO when the file cannot be read; config errors name the
   file. */
RILL_API rill_status rill_context_create_from_file(const char* path, rill_context** out_ctx);

/* A Vulkan device that the host owns (a game engine's), for
   rill_context_create_on_vulkan_device. The handles are the host's VkInstance,
   VkPhysicalDevice, VkDevice and VkQueue, passed as pointers so that rill.h
   needs no Vulkan header. Zero the struct and set struct_size = sizeof it. */
typedef struct rill_vulkan_device {
  uint32_t struct_size;
  void* instance;        /* VkInstance, made with Vulkan 1.2 or newer */
  void* physical_device; /* VkPhysicalDevice of instance, Vulkan 1.2 or newer */
  void* device;          /* VkDevice made from physical_device */
  void* queue;           /* VkQueue of device, from queue_family */
  uint32_t queue_family; /* a queue family with VK_QUEUE_COMPUTE_BIT */
  /* Nonzero when device was created with storageBuffer16BitAccess enabled
     (VkPhysicalDeviceVulkan11Features): rill then runs f16 and bf16; with 0,
     f32 only (the others are RILL_ERROR_UNSUPPORTED). */
  uint32_t storage_16bit;
} rill_vulkan_device;

/* As rill_context_create on the Vulkan backend, but on the host's own device:
   rill creates no instance or device of its own and never destroys the
   host's; it makes its command pool, fences, buffers and pipelines on device
   and submits to queue. The host keeps device and instance alive until
   rill_context_destroy returns, and does not use queue from another thread
   while a rill call runs on this context (Vulkan requires queue submissions
   to be externally synchronized). Work is ordered as on any rill context:
   rill_context_synchronize waits for it; the host's own work on other queues
   is not ordered against rill's. config_toml's [runtime] backend must be
   "vulkan" or "auto" (the default); `device` in [backend.vulkan] is not read.
   Errors: RILL_ERROR_INVALID_ARGUMENT naming the member for a NULL device,
   a struct_size too small, a NULL handle, or a queue_family that is not one
   of the device's families with compute; RILL_ERROR_CONFIG for bad config
   text or another backend; RILL_ERROR_BACKEND_UNAVAILABLE when the Vulkan
   backend cannot be loaded or the device is older than Vulkan 1.2.
   Thread-safe. */
RILL_API rill_status rill_context_create_on_vulkan_device(const char* config_toml, const rill_vulkan_device* device,
                                                          rill_context** out_ctx);

/* Orders rill's work on the host's device against the host's own (an
   engine's frame) with a timeline semaphore the host made on that device
   (VkSemaphoreTypeCreateInfo with VK_SEMAPHORE_TYPE_TIMELINE; the device
   needs the Vulkan 1.2 timelineSemaphore feature enabled). semaphore is the
   VkSemaphore as an integer; rill never destroys it, and the host keeps it
   alive until the work that waits for or signals it is done
   (rill_context_synchronize, or the host's wait for rill's value).
   rill_context_vulkan_wait: the work queued on ctx after this call starts on
   the GPU only once the semaphore reaches value (e.g. the host's "inputs
   uploaded"); the work queued before it does not wait. Until the host
   signals, a call on ctx that waits for the GPU (a tensor read,
   rill_context_synchronize) or queues work while rill's command buffers are
   all in flight blocks.
   rill_context_vulkan_signal: the semaphore is set to value once all the
   work queued on ctx before this call is done; that work is submitted at
   once, so that the host can wait for value (vkWaitSemaphores, or a wait in
   its own vkQueueSubmit). value must exceed the semaphore's current value
   and every value given to rill_context_vulkan_signal on it before.
   Errors: RILL_ERROR_INVALID_ARGUMENT naming the argument for a NULL ctx, a
   semaphore of 0, a ctx not made by rill_context_create_on_vulkan_device, or
   a signal value that does not go up; RILL_ERROR_UNSUPPORTED for a context
   on another backend or a device without the timelineSemaphore feature.
   Vulkan has no query for a semaphore's type: a binary semaphore is not
   detected (the validation layer reports it).
   Not thread-safe with other calls on ctx. */
RILL_API rill_status rill_context_vulkan_wait(rill_context* ctx, uint64_t semaphore, uint64_t value);
RILL_API rill_status rill_context_vulkan_signal(rill_context* ctx, uint64_t semaphore, uint64_t value);

/* Waits for the context's pending work and releases it, together with every
   tensor, model and KV cache made on it that is still alive. Destroying those
   objects first (in any order) and the context last is clean, and so is
   destroying only the context; but once the context is destroyed, the handles
   of its objects are invalid: destroying or using them afterwards is undefined.
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
   in size_t. A block dtype (RILL_DTYPE_Q8_0 ...) needs ndim 2 and a last dim
   that is a multiple of its block (rill_dtype_block_elements).
   Errors: RILL_ERROR_INVALID_ARGUMENT (NULL ctx, shape or out_tensor; bad dtype
   or ndim), RILL_ERROR_SHAPE (a dim < 1, a size that overflows, a block
   tensor's shape),
   RILL_ERROR_OUT_OF_MEMORY. The tensor belongs to ctx and must not outlive it. */
RILL_API rill_status rill_tensor_create(rill_context* ctx, rill_dtype dtype, int32_t ndim, const int64_t* shape,
                                        rill_tensor** out_tensor);

/* Releases a tensor. Safe while queued ops still use it: its memory is
   released only after they finish (which may wait for them). Call it before
   rill_context_destroy or not at all: destroying the context releases the
   tensors left in it. NULL is a no-op. */
RILL_API void rill_tensor_destroy(rill_tensor* tensor);

/* Copies bytes raw bytes, already in the tensor's dtype, into the tensor.
   bytes must equal the tensor's byte size exactly (rill_tensor_nbytes).
   Ordered after earlier ops on the context. */
RILL_API rill_status rill_tensor_write(rill_tensor* tensor, const void* src, size_t bytes);

/* Copies the tensor's contents, in its dtype, to dst; waits for pending work
   that writes the tensor. bytes must equal rill_tensor_nbytes. */
RILL_API rill_status rill_tensor_read(const rill_tensor* tensor, void* dst, size_t bytes);

/* Writes count floats, converting them to the tensor's dtype (round to nearest
   even). count must equal rill_tensor_numel. A block dtype is quantized
   (Q8_0 and Q4_0 as GGUF's reference quantizers, the K formats by rill's own
   fit; docs/QUANTIZATION.md) and takes finite values of magnitude at most
   2^18 = 262144, so that its f16 scales stay finite; any other value is
   RILL_ERROR_INVALID_ARGUMENT naming its index, with nothing written. */
RILL_API rill_status rill_tensor_write_f32(rill_tensor* tensor, const float* src, size_t count);

/* Reads the tensor converted to floats (a block dtype dequantized);
   count must equal rill_tensor_numel. */
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
   alpha, beta: finite.
   w may also be of a block dtype (quantized weights); a, bias and out then
   share a's element dtype. The CPU backend quantizes each block of a row of a
   to 8 bits and takes integer dot products with w's blocks, as llama.cpp does
   (docs/QUANTIZATION.md gives the error this adds); a backend that cannot run
   w's format returns RILL_ERROR_UNSUPPORTED naming it, before any work.
   A NaN or an infinity in a never gives a finite output it feeds. On the CPU
   those outputs are NaN: an infinity has no 8-bit level, so its block of 32
   (of 256 for the K formats) gets a NaN scale. Backends that dot in float
   (Vulkan, CUDA) give IEEE's value instead: an infinity times a weight is
   +-inf by the weight's sign (NaN where a zero weight or opposite infinities
   meet), a NaN stays NaN. */
RILL_API rill_status rill_gemm(rill_context* ctx, const rill_tensor* a, const rill_tensor* w, const rill_tensor* bias,
                               float alpha, float beta, rill_tensor* out);

/* Gathers rows of a table (an embedding lookup): out[i, :] = table[ids[i], :].
   table: 2-dim [V, D], of any dtype (a block dtype is dequantized). ids: host
   memory, id_count values, each in [0, V), read before the call returns.
   out: [id_count, D] (or any shape of id_count rows of D) in f32, f16 or bf16;
   a table of an element dtype must have out's dtype. A backend without the
   op or the table's format returns RILL_ERROR_UNSUPPORTED. */
RILL_API rill_status rill_get_rows(rill_context* ctx, const rill_tensor* table, const int32_t* ids, size_t id_count,
                                   rill_tensor* out);

/* ------------------------------------------------------------------------- */
/* Decoder-layer operators                                                   */
/*                                                                           */
/* The kernels a decoder layer needs besides the residual-stream ops above.  */
/* Same rules: one dtype per op, tensors of ctx, queued on the context.      */
/* Backends implement them optionally: a backend without one returns         */
/* RILL_ERROR_UNSUPPORTED naming the backend and the op.                     */
/* ------------------------------------------------------------------------- */

/* Elementwise activation functions. */
typedef enum rill_act_fn {
  RILL_ACT_SILU = 0,      /* x * sigmoid(x) */
  RILL_ACT_GELU = 1,      /* 0.5 x (1 + erf(x / sqrt 2)): PyTorch's default GELU */
  RILL_ACT_GELU_TANH = 2, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
  RILL_ACT_RELU = 3,      /* max(x, 0) */
  RILL_ACT_MAX_ENUM = 0x7FFFFFFF
} rill_act_fn;

/* Rotary position embedding in the NeoX rotate-half layout (the Hugging Face
   Llama/Qwen2 layout), in place. x: [tokens, heads, head_dim] or
   [B, T, heads, head_dim] (tokens = B*T, row-major, so token b*T + t).
   positions: position_count = tokens int32 values, each >= 0. With h = rotary_dim/2
   and i < h: angle = position * theta^(-2i/rotary_dim),
     x[i] = x[i] cos(angle) - x[i+h] sin(angle), x[i+h] = x[i+h] cos(angle) + x[i] sin(angle);
   elements at index >= rotary_dim are left alone (partial rotary).
   theta: finite, > 0. rotary_dim: even, in [2, head_dim]. */
RILL_API rill_status rill_rope(rill_context* ctx, rill_tensor* x, const int32_t* positions, size_t position_count,
                               float theta, int32_t rotary_dim);

/* rill_rope with the frequencies given: angle = position * inv_freq[i] for
   i < rotary_dim/2 instead of position * theta^(-2i/rotary_dim), and cos and
   sin multiplied by attention_factor:
     x[i] = x[i] c - x[i+h] s, x[i+h] = x[i+h] c + x[i] s,
     c = attention_factor cos(angle), s = attention_factor sin(angle).
   This is Hugging Face's rotary embedding for every rope_type (linear,
   dynamic, yarn, longrope, llama3): inv_freq is its inv_freq, attention_factor
   its attention_scaling (1 for most types). x, positions and rotary_dim as
   for rill_rope. inv_freq: inv_freq_count = rotary_dim/2 finite values > 0,
   read before the call returns. attention_factor: finite, > 0.
   Errors: as rill_rope; RILL_ERROR_UNSUPPORTED when the backend lacks the op. */
RILL_API rill_status rill_rope_freqs(rill_context* ctx, rill_tensor* x, const int32_t* positions,
                                     size_t position_count, const float* inv_freq, size_t inv_freq_count,
                                     float attention_factor, int32_t rotary_dim);

/* Causal scaled-dot-product attention with grouped/multi-query KV heads.
   q, out: [B, T, Hq, head_dim]. k, v: [B, S, Hkv, head_dim], Hkv dividing Hq;
   query head h reads KV head h / (Hq / Hkv).
   kv_lengths: B int32 values, each in [T, S], or NULL for "every sequence holds
   S keys" (then S must be >= T). For sequence b the T queries are the last T of
   its kv_lengths[b] positions: query t sits at p = kv_lengths[b] - T + t and
   attends to key slots 0..p. So prefill is k, v of the same T tokens
   (kv_lengths NULL), and a decode step is T = 1 against a KV cache holding
   kv_lengths[b] valid slots. Logits scale * q.k and the softmax are f32.
   scale: finite, > 0 (a decoder uses 1/sqrt(head_dim)). out must not alias q, k, v. */
RILL_API rill_status rill_attention(rill_context* ctx, const rill_tensor* q, const rill_tensor* k,
                                    const rill_tensor* v, const int32_t* kv_lengths, size_t kv_length_count,
                                    float scale, rill_tensor* out);

/* What rill_attention_ex adds to rill_attention. Set struct_size to
   sizeof(rill_attention_params); members are only ever appended, and those
   past struct_size read as 0. */
typedef struct rill_attention_params {
  uint32_t struct_size;
  float scale;    /* logits scale * q.k: finite, > 0 */
  int32_t window; /* sliding window W >= 0; 0 = none: the query at p sees slots p-W+1..p (Mistral, Gemma 2) */
  float softcap;  /* logit soft-cap c: finite, >= 0; 0 = off: logits = c tanh(logits / c) (Gemma 2) */
} rill_attention_params;

/* rill_attention with a sliding window and logit soft-capping: as
   rill_attention with scale = params->scale, except that the query at
   position p attends to key slots max(0, p - window + 1)..p when window > 0,
   and that each logit l = scale * q.k becomes softcap * tanh(l / softcap)
   before the softmax when softcap > 0. params: not NULL, struct_size at least
   up to scale. A backend without the sliding window or soft-cap returns
   RILL_ERROR_UNSUPPORTED naming the backend and the op; with window and
   softcap 0 every backend with rill_attention runs it. */
RILL_API rill_status rill_attention_ex(rill_context* ctx, const rill_tensor* q, const rill_tensor* k,
                                       const rill_tensor* v, const int32_t* kv_lengths, size_t kv_length_count,
                                       const rill_attention_params* params, rill_tensor* out);

/* out = fn(x) * up elementwise (gated: SwiGLU with RILL_ACT_SILU, GeGLU with
   RILL_ACT_GELU), or out = fn(x) when up is NULL. x, up, out: one shape and
   dtype; out may alias x or up. */
RILL_API rill_status rill_activation(rill_context* ctx, rill_act_fn fn, const rill_tensor* x, const rill_tensor* up,
                                     rill_tensor* out);

/* ------------------------------------------------------------------------- */
/* Decoder stacks                                                            */
/*                                                                           */
/* A rill_model is a stack of num_layers decoder layers with their weights,  */
/* living in one context (a single layer is a model with num_layers = 1).    */
/* rill_model_forward runs hidden states [B, T, D] through it, for prefill,  */
/* and, with a rill_kv_cache, for decode steps against the cached keys and   */
/* values. All composition is done with the ops above on the context's      */
/* backend.                                                                  */
/*                                                                           */
/* Weights use Hugging Face names. Layer i's tensors live under              */
/* "model.layers.{i}." (PyTorch Linear layout: [out_features, in_features]): */
/*   self_attn.q_proj.weight [Hq*hd, D]   .bias [Hq*hd]  (qkv_bias)          */
/*   self_attn.k_proj.weight [Hkv*hd, D]  .bias [Hkv*hd] (qkv_bias)          */
/*   self_attn.v_proj.weight [Hkv*hd, D]  .bias [Hkv*hd] (qkv_bias)          */
/*   self_attn.o_proj.weight [D, Hq*hd]   .bias [D]      (o_bias)            */
/*   mlp.gate_proj.weight [I, D] .bias [I] (gated activations; mlp_bias)     */
/*   mlp.up_proj.weight   [I, D] .bias [I] (mlp_bias)                        */
/*   mlp.down_proj.weight [D, I] .bias [D] (mlp_bias)                        */
/*   input_layernorm.weight [D], post_attention_layernorm.weight [D]         */
/*   sandwich adds pre_feedforward_layernorm.weight and                      */
/*     post_feedforward_layernorm.weight [D]                                 */
/*   every norm has a .bias [D] too when norm is RILL_NORM_LAYER             */
/*   self_attn_gain [D], mlp_gain [D] (layer_scale)                          */
/*   self_attn.q_norm.weight, self_attn.k_norm.weight (qk_norm): [hd] each   */
/*     for RILL_QK_NORM_HEAD, [Hq, hd] and [Hkv, hd] for                     */
/*     RILL_QK_NORM_HEAD_WEIGHTS, [Hq*hd] and [Hkv*hd] for RILL_QK_NORM_FULL */
/*   output puts post_attention_layernorm and post_feedforward_layernorm     */
/*     [D] on the sublayer outputs and has no input_layernorm                */
/* and the final norm is "model.norm.weight" (.bias for LayerNorm) when      */
/* final_norm is set. The loaders also take checkpoints' fused tensors and   */
/* split them (rows along dim 0; .bias likewise where the parts have one):   */
/*   self_attn.qkv_proj.weight [(Hq+2Hkv)*hd, D]: q, k, v rows (Phi-3)       */
/*   mlp.gate_up_proj.weight [2I, D]: gate, then up rows (Phi-3; gated only) */
/* and GPT-NeoX's names under "gpt_neox.layers.{i}.": attention.             */
/*   query_key_value [Hq*3*hd, D] (per head its q, k, v rows; Hkv = Hq only),*/
/*   attention.dense (o_proj), mlp.dense_h_to_4h (up_proj),                  */
/*   mlp.dense_4h_to_h (down_proj), input_layernorm,                         */
/*   post_attention_layernorm, and "gpt_neox.final_layer_norm" (model.norm). */
/* and Falcon's names under "transformer.h.{i}.": self_attention.            */
/*   query_key_value [(Hq+2Hkv)*hd, D] (per KV head its Hq/Hkv query heads'  */
/*   rows, then its k and v rows), self_attention.dense (o_proj),            */
/*   mlp.dense_h_to_4h, mlp.dense_4h_to_h, input_layernorm,                  */
/*   post_attention_layernorm, ln_attn (input_layernorm), ln_mlp             */
/*   (post_attention_layernorm), and "transformer.ln_f" (model.norm).        */
/* and StableLM 2 12B's per-head QK norm tensors (head_weights only):        */
/*   self_attn.q_layernorm.norms.{h}.weight [hd] (h < Hq) and                */
/*   self_attn.k_layernorm.norms.{h}.weight [hd] (h < Hkv), stacked in head  */
/*   order into q_norm.weight and k_norm.weight by the file loaders, which   */
/*   take a norm's heads all at once (rill_lm_load across shards).           */
/* With rope_interleave the q and k rows (q_proj, k_proj, their biases, the  */
/* QK norm weights) are reordered within each head as they are set; see      */
/* rope_interleave in rill_model_desc.                                       */
/*                                                                           */
/* norm_weight_offset: Gemma's RMSNorm scales by (1 + w) and its checkpoints */
/* store w; norm_weight_offset = 1 loads them as they are stored. The offset */
/* is added to each norm weight when it is set (rill_model_set_weight,       */
/* rill_model_load_safetensors): input_layernorm, post_attention_layernorm,  */
/* pre_feedforward_layernorm, post_feedforward_layernorm, model.norm and    */
/* the QK norms' self_attn.q_norm / k_norm (Gemma 3 stores those as w too)   */
/* (their .weight only: never a LayerNorm .bias, a LayerScale gain or a      */
/* projection), in f32 from the value given, then rounded once to the model  */
/* dtype. The model keeps only w + offset: setting a weight again starts     */
/* from the new value, and rill has no call that reads weights back. In f16  */
/* and bf16 the sum is what is rounded, so 1 + w keeps fewer bits of w than  */
/* w itself does (Gemma computes 1 + w in f32 at run time).                  */
/*                                                                           */
/* The residual stream h, with A = attention, M = MLP, alpha =               */
/* residual_scale, beta = branch_scale, g_A / g_M = the LayerScale gains     */
/* (ones without layer_scale), and the kernels the runtime runs:             */
/*                                                                           */
/* pre (Llama, Qwen2, Mistral):                                              */
/*   h = alpha h + beta g_A * A(input_layernorm(h))                          */
/*   h = alpha h + beta g_M * M(post_attention_layernorm(h))                 */
/*   then model.norm(h) after the last layer when final_norm is set.         */
/*   Kernels: one plain norm before layer 0; after each sublayer one fused   */
/*   add+norm that adds the sublayer output to h and normalizes h with the   */
/*   next norm (the MLP's, the next layer's input_layernorm, or model.norm); */
/*   a plain residual add after the last layer when there is no final norm.  */
/* post (original Transformer, BERT):                                        */
/*   h = input_layernorm(alpha h + beta g_A * A(h))                          */
/*   h = post_attention_layernorm(alpha h + beta g_M * M(h))                 */
/*   Kernels: one fused add+norm per sublayer (the add and its norm); a      */
/*   plain norm at the end when final_norm is set.                           */
/* deepnorm (DeepNet): post with the skip scaled: alpha = residual_scale.    */
/*   Same kernels as post.                                                   */
/* sandwich (Gemma 2):                                                       */
/*   h = alpha h + beta g_A * post_attention_layernorm(A(input_layernorm(h)))*/
/*   h = alpha h + beta g_M * post_feedforward_layernorm(                    */
/*                                  M(pre_feedforward_layernorm(h)))         */
/*   Kernels: as pre, plus one plain norm on each sublayer's output before   */
/*   its fused add+norm.                                                     */
/* output (OLMo 2): a norm on each sublayer's output, none on its input:     */
/*   h = alpha h + beta g_A * post_attention_layernorm(A(h))                 */
/*   h = alpha h + beta g_M * post_feedforward_layernorm(M(h))               */
/*   then model.norm(h) after the last layer when final_norm is set.         */
/*   Kernels: per sublayer one plain norm on its output, then a plain        */
/*   residual add: the next sublayer reads h itself, and a fused add+norm    */
/*   normalizes the sum, not the update. The last add and model.norm are one */
/*   fused add+norm (then a copy into h), as in pre.                         */
/* parallel (parallel_residual with placement pre; Phi-2, GPT-J, Falcon,     */
/* Cohere with parallel_norms = 1, GPT-NeoX/Pythia with 2):                  */
/*   h = alpha h + beta (A(input_layernorm(h)) + M(n(h)))                    */
/*   n = input_layernorm (parallel_norms 1: one shared norm, and no          */
/*   post_attention_layernorm) or post_attention_layernorm (2), both on the  */
/*   same h; A + M is summed first, as those models do.                      */
/*   Kernels: one plain norm before layer 0; with 2 norms one plain norm of  */
/*   h for the MLP input per layer; one plain residual add A + M; one fused  */
/*   add+norm that adds the sum to h and normalizes h with the next layer's  */
/*   input_layernorm (or model.norm); a plain residual add after the last    */
/*   layer when there is no final norm. layer_scale and the other            */
/*   placements are refused with it (one gain per branch cannot act on the   */
/*   summed branches).                                                       */
/* alpha applies in every placement (1 leaves it out); the norm outputs are  */
/* rounded to the model dtype like every intermediate.                       */
/*                                                                           */
/* Attention: q, k, v projections, the QK norm (qk_norm), RoPE on q and k    */
/* (unless rope_theta is 0 or the layer is a NoPE layer of                   */
/* no_rope_layer_interval; scaled as rope_type says, see rill_rope_type),    */
/* causal attention with scale                                               */
/* 1/sqrt(query_pre_attn_scalar) (Gemma 2 and 3; 0 = head_dim:               */
/* 1/sqrt(head_dim)), o projection. With sliding_window W > 0, layer i       */
/* slides when i >= max_window_layers and, for sliding_window_pattern N > 0, */
/* (i + 1) % N != 0 (N = 0: every such layer slides; Gemma 2 is N = 2, Gemma */
/* 3 N = 6): its query at position p sees only positions p-W+1..p (W         */
/* positions, itself included, as Hugging Face's Mistral and Gemma 2 masks), */
/* in prefill and decode alike (the KV cache holds every position), and RoPE */
/* uses rope_local_base_freq (when nonzero) instead of rope_theta, unscaled: */
/* rope_scaling applies to the other layers (as Gemma 3 scales only its      */
/* global layers) and to sliding layers without a theta of their own.        */
/* attn_logit_softcapping c > 0 caps every layer's logits l = scale * q.k to */
/* c tanh(l / c) before the causal mask and softmax (Gemma 2). The QK norm   */
/* is the model's norm with eps norm_eps and no bias (an RMSNorm with       */
/* RILL_NORM_RMS, a LayerNorm with RILL_NORM_LAYER) of each head's hd values */
/* of q and of k with one [hd] weight shared by the heads (head: Qwen3,      */
/* Gemma 3), or with a weight per head (head_weights: Cohere use_qk_norm),   */
/* or of the whole q and k projections (full: OLMo 2, OLMoE); one plain norm */
/* each on q and on k, in place; head_weights then multiplies by its         */
/* weights with one residual_add (residual scale 0, the weights as gain).    */
/* clip_qkv c > 0 (OLMo, OLMoE) clamps q, k and v to [-c, c] after the       */
/* projections and the QK norm, before RoPE: one clamp op each, in place,    */
/* as transformers' OlmoAttention (no QK norm) and OlmoeAttention (after its */
/* full QK norm) do.                                                         */
/* MLP: gated                                                                */
/* act(gate_proj(x)) * up_proj(x) -> down_proj, or plain act(up_proj(x)) ->  */
/* down_proj.                                                                */
/* Mixture of experts (num_experts E > 0; Mixtral, Qwen2-MoE, OLMoE): the    */
/* router's logits x @ mlp.gate.weight^T [E]; p = softmax over all E in f32; */
/* the k = num_experts_per_tok largest p (ties: the lowest expert first),    */
/* renormalized to sum 1 with norm_topk_prob; out = sum of p_e expert_e(x),  */
/* each expert a gated MLP of width moe_intermediate_size. With              */
/* shared_expert_intermediate_size > 0, out += sigmoid(x @                   */
/* mlp.shared_expert_gate.weight^T) shared_expert(x). pre placement only,    */
/* not parallel. Kernels: the router GEMM, then a synchronizing read of the  */
/* [rows, E] logits to the host, which chooses the experts; per expert with  */
/* tokens, buffer copies gather its rows, its GEMMs and activation run on    */
/* those rows only, and one residual_add per row adds p_e times its output.  */
/* Layers that decoder_sparse_step or mlp_only_layers make dense (Qwen2-MoE) */
/* run the dense gated MLP of intermediate_size and have no experts.         */
/* ------------------------------------------------------------------------- */

/* How each norm normalizes: RMSNorm, or LayerNorm (weight and bias). */
typedef enum rill_norm_kind {
  RILL_NORM_RMS = 0,
  RILL_NORM_LAYER = 1,
  RILL_NORM_MAX_ENUM = 0x7FFFFFFF
} rill_norm_kind;

/* Where the norms sit around each sublayer (see above). */
typedef enum rill_norm_placement {
  RILL_PLACEMENT_PRE = 0,
  RILL_PLACEMENT_POST = 1,
  RILL_PLACEMENT_SANDWICH = 2,
  RILL_PLACEMENT_DEEPNORM = 3,
  RILL_PLACEMENT_OUTPUT = 4,
  RILL_PLACEMENT_MAX_ENUM = 0x7FFFFFFF
} rill_norm_placement;

/* The norm on q and k before RoPE (see above). */
typedef enum rill_qk_norm {
  RILL_QK_NORM_NONE = 0,
  RILL_QK_NORM_HEAD = 1, /* per head, one [hd] weight shared by every head */
  RILL_QK_NORM_FULL = 2, /* over the whole projection: [Hq*hd] and [Hkv*hd] weights */
  RILL_QK_NORM_HEAD_WEIGHTS = 3, /* per head, a weight per head: [Hq, hd] and [Hkv, hd] */
  RILL_QK_NORM_MAX_ENUM = 0x7FFFFFFF
} rill_qk_norm;

/* The MLP's activation: gated (two input projections) or plain. */
typedef enum rill_mlp_activation {
  RILL_MLP_SILU_GLU = 0,  /* silu(gate_proj x) * up_proj x: SwiGLU */
  RILL_MLP_GELU_GLU = 1,  /* gelu(gate_proj x) * up_proj x with the erf GELU: GeGLU */
  RILL_MLP_GELU = 2,      /* gelu(up_proj x), erf form */
  RILL_MLP_GELU_TANH = 3, /* gelu(up_proj x), tanh approximation */
  RILL_MLP_RELU = 4,      /* relu(up_proj x) */
  RILL_MLP_GELU_TANH_GLU = 5, /* gelu(gate_proj x) * up_proj x, tanh GELU: Gemma's GeGLU */
  RILL_MLP_MAX_ENUM = 0x7FFFFFFF
} rill_mlp_activation;

/* How rope_scaling rescales the rotary frequencies: Hugging Face's
   rope_scaling["rope_type"], computed as transformers 4.47.1's
   ROPE_INIT_FUNCTIONS do, from rope_theta and rope_dim (d; h = d/2, i < h,
   base_i = rope_theta^(2i/d)). Each gives inv_freq_i and an attention factor
   a that multiplies cos and sin (rill_rope_freqs):
     default:  1 / base_i; a = 1.
     linear:   1 / (base_i * factor); a = 1.
     dynamic:  dynamic NTK: rope_theta becomes rope_theta * (factor * L / M -
               (factor - 1))^(d / (d - 2)) with M = max_position_embeddings and
               L = max(M, longest position of the forward call + 1); a = 1.
     yarn:     per frequency a blend of 1/base_i and 1/(factor base_i) by a
               ramp between the dimensions where beta_fast and beta_slow
               rotations fit in M = max_position_embeddings;
               a = attention_factor, or 0.1 ln(factor) + 1.
     longrope: 1 / (ext_i * base_i), ext = long_factor when the longest
               position of the forward call + 1 exceeds
               original_max_position_embeddings (O), short_factor otherwise
               (Phi-3); a = attention_factor, or with s = M / O:
               sqrt(1 + ln s / ln O) (1 when s <= 1). factor is not read.
     llama3:   1 / base_i where the wavelength 2 pi base_i is under
               O / high_freq_factor, 1 / (factor base_i) above
               O / low_freq_factor, interpolated between; a = 1.
   dynamic and longrope depend on the call's positions: each call of
   rill_model_forward derives its frequencies from its own longest position,
   which is what transformers computes for one forward pass of that length.
   Keys already in a KV cache keep the rotation they were given, as in
   transformers' cache; a decode step uses the frequencies of its own
   position (transformers keeps the largest length seen instead, which is the
   same while positions only grow). */
typedef enum rill_rope_type {
  RILL_ROPE_DEFAULT = 0,
  RILL_ROPE_LINEAR = 1,
  RILL_ROPE_DYNAMIC = 2,
  RILL_ROPE_YARN = 3,
  RILL_ROPE_LONGROPE = 4,
  RILL_ROPE_LLAMA3 = 5,
  RILL_ROPE_MAX_ENUM = 0x7FFFFFFF
} rill_rope_type;

/* The most per-frequency factors LongRoPE's short and long lists hold:
   rope_dim / 2 of each, so rope_dim up to 512. */
#define RILL_ROPE_MAX_FACTORS 256

/* The most layers rill_model_desc.mlp_only_layers lists. */
#define RILL_MAX_MLP_ONLY_LAYERS 256

/* Describes a decoder stack. Fill it with rill_model_desc_init, then set the
   sizes. Fields are only ever appended; struct_size = sizeof(rill_model_desc). */
typedef struct rill_model_desc {
  uint32_t struct_size;
  rill_dtype dtype;              /* storage of weights, activations and the KV cache */
  int32_t num_layers;            /* >= 1 */
  int32_t hidden_size;           /* D >= 1 */
  int32_t num_heads;             /* Hq >= 1 */
  int32_t num_kv_heads;          /* Hkv >= 1, dividing Hq (Hkv = Hq: MHA; 1: MQA) */
  int32_t head_dim;              /* hd >= 1; 0 = hidden_size / num_heads (which must divide) */
  int32_t intermediate_size;     /* I >= 1 */
  rill_norm_kind norm;
  float norm_eps;                /* finite, >= 0 */
  rill_norm_placement norm_placement;
  rill_mlp_activation activation;
  float rope_theta;              /* finite, >= 0; 0 = no RoPE */
  int32_t rope_dim;              /* rotary dims per head, even, <= hd; 0 = hd */
  uint32_t qkv_bias;             /* nonzero: q/k/v projections have a bias */
  uint32_t o_bias;               /* nonzero: the output projection has a bias */
  uint32_t mlp_bias;             /* nonzero: every MLP projection has a bias */
  uint32_t final_norm;           /* nonzero: model.norm after the last layer */
  float residual_scale;          /* alpha on the skip path: finite, nonzero */
  float branch_scale;            /* beta on each sublayer output: finite */
  uint32_t layer_scale;          /* nonzero: per-channel gains self_attn_gain, mlp_gain */
  rill_qk_norm qk_norm;          /* the model's norm (no bias) on q and k */
  float norm_weight_offset;      /* added to every norm weight as it is set: finite; Gemma: 1 */
  float query_pre_attn_scalar;   /* attention scale s^-1/2: finite, >= 0; 0 = head_dim */
  uint32_t parallel_residual;    /* nonzero: attention and MLP read the same h, one add (pre only) */
  int32_t parallel_norms;        /* input norms of the parallel form: 1 shared, 2 one per sublayer */
  /* Sliding-window attention (see above): which layers slide, their window
     and RoPE theta; the logit soft-cap of every layer. */
  int32_t sliding_window;         /* W >= 0: a sliding layer's query at p sees p-W+1..p; 0 = none */
  int32_t sliding_window_pattern; /* >= 0; 0: every layer slides; N: layer i is global when (i+1) % N == 0 */
  int32_t max_window_layers;      /* >= 0: layers below it are global (Qwen2); 0 = none */
  float attn_logit_softcapping;   /* c: finite, >= 0; logits c tanh(l / c) before the softmax; 0 = off */
  float rope_local_base_freq;     /* RoPE theta of the sliding layers: finite, >= 0; 0 = rope_theta */
  /* RoPE scaling (rill_rope_type above); only the fields its type reads are
     checked. The factor lists are values inside the struct: no ownership. */
  rill_rope_type rope_type;      /* not with rope_theta 0 */
  float rope_factor;             /* linear, dynamic, yarn, llama3: finite, > 0 */
  int32_t max_position_embeddings;                /* dynamic, yarn, longrope: >= 1 */
  int32_t rope_original_max_position_embeddings;  /* llama3, longrope: >= 1 */
  float rope_low_freq_factor;    /* llama3: finite, > 0 */
  float rope_high_freq_factor;   /* llama3: finite, > rope_low_freq_factor */
  float rope_beta_fast;          /* yarn: finite, > 0; default 32 */
  float rope_beta_slow;          /* yarn: finite, > 0; default 1 */
  float rope_attention_factor;   /* yarn, longrope: finite, >= 0; 0 = derived */
  int32_t rope_factor_count;     /* longrope: rope_dim / 2; other types: 0 */
  float rope_short_factor[RILL_ROPE_MAX_FACTORS]; /* longrope: the first rope_factor_count, finite, > 0 */
  float rope_long_factor[RILL_ROPE_MAX_FACTORS];  /* longrope: likewise */
  int32_t no_rope_layer_interval; /* >= 0; n > 0: layers l with (l + 1) % n == 0 have no RoPE (SmolLM3) */
  /* Mixture of experts (see MLP above): every layer's MLP is num_experts
     gated experts and a router; 0 experts = the dense MLP. */
  int32_t num_experts;           /* E >= 0; 0 = dense MLP (Mixtral: num_local_experts) */
  int32_t num_experts_per_tok;   /* k in [1, E] with experts, 0 without */
  uint32_t norm_topk_prob;       /* nonzero: the k routing weights are renormalized to sum 1 (Mixtral) */
  int32_t moe_intermediate_size; /* each expert's width: >= 0; 0 = intermediate_size */
  int32_t shared_expert_intermediate_size; /* >= 0; > 0: a gated shared expert of this width (Qwen2-MoE) */
  /* Interleaved (GPT-J style) rotary checkpoints: nonzero when the stored
     q/k projections rotate dims (2i, 2i+1) together, as GPT-J and Cohere do
     (DeepSeek-V3's config key of this name). rill runs the half-split
     (NeoX) rotary: each head's first rope_dim q and k rows, their biases and
     the QK norm weights are permuted as they are set (even dims, then odd),
     which leaves every attention score as it was. Needs rope_theta > 0. */
  uint32_t rope_interleave;
  /* Dense layers among the experts (Qwen2-MoE; with num_experts > 0): layer
     i runs the dense MLP (mlp.gate_proj, up_proj, down_proj of
     intermediate_size) instead of the experts when mlp_only_layers lists it
     or, with decoder_sparse_step N > 1, when (i + 1) % N != 0, as
     transformers' Qwen2MoeDecoderLayer chooses. */
  int32_t decoder_sparse_step;   /* >= 0; 0 and 1: every layer not listed is sparse; > 1 needs experts */
  int32_t mlp_only_layer_count;  /* 0 to RILL_MAX_MLP_ONLY_LAYERS; > 0 needs experts */
  int32_t mlp_only_layers[RILL_MAX_MLP_ONLY_LAYERS]; /* the first mlp_only_layer_count: distinct, in [0, num_layers) */
  /* Storage of the weight matrices (the [model] key weight_format = "f32",
     "q8_0", "q4_0", "q5_0", "q5_1", "q4_k", "q5_k" or "q6_k"): RILL_DTYPE_F32 keeps them in
     dtype; a block dtype (RILL_DTYPE_Q8_0 ... _Q5_1) quantizes every 2-dim
     linear weight given in f32, f16 or bf16 as it is set (its rows must be
     whole blocks of 32; a K format falls back for rows that are not whole
     blocks of 256 as llama.cpp's quantizer does: q4_k to q5_0, q5_k to
     q5_1, q6_k to q8_0; the backend must run the formats); norms and biases stay
     in dtype. rill_lm_load sets it from rill_lm_load_options.weight_format. */
  rill_dtype weight_format;
  /* OLMo's and OLMoE's clip_qkv c: q, k and v are clamped to [-c, c] after
     the projections and the QK norm, before RoPE (see Attention above);
     finite, >= 0; 0 = off (config.json's null). Needs a backend with the
     clamp op (interface version 5). */
  float clip_qkv;
} rill_model_desc;

/* Fills desc with the defaults of the [model] TOML table: f32, rms, eps 1e-6,
   pre, silu_glu, rope_theta 10000, rope_dim 0, no biases, final_norm on,
   scales 1, no layer_scale, no qk_norm, norm_weight_offset 0, no
   parallel_residual with parallel_norms 1, no sliding window
   (sliding_window, sliding_window_pattern, max_window_layers 0), no
   soft-cap, rope_local_base_freq 0 (= rope_theta), rope_type default with
   rope_factor 1, rope_beta_fast 32, rope_beta_slow 1 and the other rope
   scaling fields 0, no_rope_layer_interval 0, no experts (num_experts,
   num_experts_per_tok, norm_topk_prob, moe_intermediate_size,
   shared_expert_intermediate_size 0, decoder_sparse_step 0, no
   mlp_only_layers), no rope_interleave, weight_format RILL_DTYPE_F32,
   clip_qkv 0 (off),
   num_kv_heads, head_dim and
   query_pre_attn_scalar 0 (= derived), and the
   sizes num_layers, hidden_size, num_heads, intermediate_size 0 (to be set).
   NULL is a no-op. */
RILL_API void rill_model_desc_init(rill_model_desc* desc);

/* Parses the [model] table of TOML text (other tables are ignored) into
   out_desc, starting from rill_model_desc_init's defaults:
       [model]
       dtype = "f32"             # "f32" | "f16" | "bf16"
       num_layers = 2
       hidden_size = 64
       num_heads = 4
       num_kv_heads = 2          # default num_heads
       head_dim = 16             # default hidden_size / num_heads
       intermediate_size = 128
       norm = "rms"              # "rms" | "layer"
       norm_eps = 1e-6
       norm_placement = "pre"    # "pre" | "post" | "sandwich" | "deepnorm" | "output"
       activation = "silu_glu"   # "silu_glu" | "gelu_glu" | "gelu_tanh_glu" | "gelu" |
                                 # "gelu_tanh" | "relu"
       rope_theta = 10000.0      # 0 = no RoPE
       rope_dim = 0              # rotary dims per head, 0 = head_dim
       qkv_bias = false
       o_bias = false
       mlp_bias = false
       final_norm = true
       residual_scale = 1.0
       branch_scale = 1.0
       layer_scale = false
       qk_norm = "none"          # "none" | "head" | "head_weights" | "full"
       norm_weight_offset = 0.0  # Gemma: 1.0
       query_pre_attn_scalar = 0.0  # attention scale 1/sqrt(this); 0 = head_dim
       parallel_residual = false # GPT-NeoX use_parallel_residual, Falcon parallel_attn
       parallel_norms = 1        # 1 | 2: Falcon num_ln_in_parallel_attn
       sliding_window = 0        # window of the sliding layers; 0 = none
       sliding_window_pattern = 0  # 0 = every layer slides; N = every N-th is global
       max_window_layers = 0     # layers below it are global (Qwen2)
       attn_logit_softcapping = 0.0  # Gemma 2: 50.0; 0 = off
       rope_local_base_freq = 0.0    # RoPE theta of sliding layers; 0 = rope_theta
       max_position_embeddings = 0  # dynamic, yarn, longrope
       no_rope_layer_interval = 0   # n: layers l with (l + 1) % n == 0 skip RoPE
       num_experts = 0           # experts per MoE MLP; 0 = dense (Mixtral: num_local_experts)
       num_experts_per_tok = 0   # top-k experts per token, 1..num_experts with experts
       norm_topk_prob = false    # renormalize the top-k weights (Mixtral: true)
       moe_intermediate_size = 0 # each expert's width; 0 = intermediate_size
       shared_expert_intermediate_size = 0  # Qwen2-MoE's shared expert; 0 = none
       rope_interleave = false   # GPT-J, Cohere: checkpoints with interleaved rotary dims
       decoder_sparse_step = 0   # Qwen2-MoE: N > 1: layers with (i + 1) % N != 0 are dense
       mlp_only_layers = []      # Qwen2-MoE: layers with the dense MLP
       weight_format = "f32"     # "f32" | "q8_0" | "q4_0" | "q5_0" | "q5_1" | "q4_k" | "q5_k" | "q6_k":
                                 # weight matrices quantized as they are set
       clip_qkv = 0.0            # OLMo, OLMoE: clamp q, k, v to [-c, c]; 0 = off
       [model.rope_scaling]      # Hugging Face's rope_scaling dict; absent = default
       rope_type = "llama3"      # "default" | "linear" | "dynamic" | "yarn" |
                                 # "longrope" | "llama3" ("type" is read too)
       factor = 8.0
       original_max_position_embeddings = 8192   # llama3, longrope
       low_freq_factor = 1.0     # llama3
       high_freq_factor = 4.0    # llama3
       beta_fast = 32.0          # yarn
       beta_slow = 1.0           # yarn
       attention_factor = 0.0    # yarn, longrope; 0 or absent = derived
       short_factor = [1.0, ...] # longrope: rope_dim / 2 numbers
       long_factor = [1.0, ...]  # longrope: rope_dim / 2 numbers
   source_name: names the text in messages (a file name), or NULL.
   Errors: RILL_ERROR_CONFIG for a missing [model] table or size, an unknown key,
   a wrong type or a bad value, with the key and its line:column; the values are
   then also checked as rill_model_create checks them. Thread-safe. */
RILL_API rill_status rill_model_desc_from_toml(const char* toml, const char* source_name,
                                               rill_model_desc* out_desc);

/* A decoder stack with its weights, in one context. */
typedef struct rill_model rill_model;
/* Cached keys and values of every layer of a model, for B sequences. */
typedef struct rill_kv_cache rill_kv_cache;

/* Creates a model in ctx from desc. Weights start missing; set every one the
   description calls for (rill_model_set_weight, rill_model_load_safetensors)
   before rill_model_forward.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL arguments, a struct_size too
   small, or any field out of range (the message names the field, the
   expected range and the value: a head count that does not divide, an odd
   rope_dim, ...); RILL_ERROR_OUT_OF_MEMORY. The model must not outlive ctx. */
RILL_API rill_status rill_model_create(rill_context* ctx, const rill_model_desc* desc, rill_model** out_model);

/* Releases a model and its weights. Its KV caches may be destroyed before or
   after it, but not used with another model. Call it before
   rill_context_destroy or not at all: destroying the context releases the
   models left in it. NULL is a no-op. */
RILL_API void rill_model_destroy(rill_model* model);

/* Sets one weight from host memory, converting it to the model dtype (round to
   nearest even); a norm weight gets norm_weight_offset added first (above).
   name: a Hugging Face name listed above that this model uses, or a fused
   tensor or GPT-NeoX or Falcon name listed above, whose parts are set.
   src_dtype: the dtype of data, or a block dtype (RILL_DTYPE_Q8_0 ...) for
   a linear layer's 2-dim weight, which is then stored as it is (its blocks;
   rows of whole blocks) and runs through the block gemm; a norm weight,
   bias or gain of a block dtype is refused with RILL_ERROR_DTYPE.
   ndim, shape: data's shape, which must be the weight's. bytes: must equal
   the product of shape times the dtype size (for a block dtype: rows times
   rill_dtype_block_bytes per block of the row).
   Errors: RILL_ERROR_NOT_FOUND for a name the model does not use (named; for
   a fused tensor the model cannot use, such as gate_up_proj without a gated
   MLP, also why; for one head's q_layernorm.norms.{h}.weight, the stacked
   weight to set instead), RILL_ERROR_SHAPE for a shape that is not the
   weight's (both shapes named),
   RILL_ERROR_OUT_OF_MEMORY; a device failure while storing is the backend's
   status (RILL_ERROR_BACKEND). Replaces a weight set before. All-or-nothing:
   on any failure every weight keeps its previous value (a fused tensor sets
   all of its parts or none). Replacing a weight holds its old and its new
   copy in device memory until the call returns. */
RILL_API rill_status rill_model_set_weight(rill_model* model, const char* name, rill_dtype src_dtype, int32_t ndim,
                                           const int64_t* shape, const void* data, size_t bytes);

/* Loads every weight the model uses that the safetensors file at path holds
   (F32, F16 or BF16, converted to the model dtype; norm weights get
   norm_weight_offset added as in rill_model_set_weight). The file is
   memory-mapped; tensors the model does not use are skipped, so a
   checkpoint's shards can be loaded one after another. Fused tensors and
   GPT-NeoX and Falcon names (listed above) are split into the weights they
   hold; per-head norm tensors (listed above) are stacked, so a file holding
   some of a norm's heads must hold them all. Every tensor used is checked
   before any is stored. The header, every offset and size, overlaps and the
   file's length are validated.
   All-or-nothing: on any failure (a bad tensor, or memory or the device
   failing part-way) every weight keeps the value it had before the call.
   The new weights are stored beside the ones they replace and swapped in at
   the end, so replacing weights holds both copies until the call returns.
   The weights are copied: the file may change once the call returns
   (rill_lm_load reads files in place).
   Errors: RILL_ERROR_IO naming the file (and the tensor) for an unreadable,
   truncated or corrupt file, a tensor of another dtype, or a per-head norm
   lacking a head (the first missing one named); RILL_ERROR_SHAPE for
   a tensor of the wrong shape (file, tensor and both shapes named);
   RILL_ERROR_INVALID_ARGUMENT for a file holding one weight twice (a fused
   tensor and its part, or two names of it: both named) or a fused tensor this
   model cannot use (named, with why); RILL_ERROR_OUT_OF_MEMORY; the backend's
   status for a device failure (RILL_ERROR_BACKEND). */
RILL_API rill_status rill_model_load_safetensors(rill_model* model, const char* path);

/* Checks that every weight the model uses has been set.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL; RILL_ERROR_NOT_FOUND naming the
   first missing weight and its shape. */
RILL_API rill_status rill_model_check_weights(const rill_model* model);

/* Creates a KV cache for batch sequences of up to capacity tokens each, every
   sequence empty. Memory: 2 * num_layers * batch * capacity * Hkv * hd values.
   Errors: RILL_ERROR_INVALID_ARGUMENT (NULL, batch or capacity < 1),
   RILL_ERROR_OUT_OF_MEMORY. The cache must not outlive its model. */
RILL_API rill_status rill_kv_cache_create(rill_model* model, int32_t batch, int32_t capacity,
                                          rill_kv_cache** out_cache);

/* Releases a cache. Call it before rill_context_destroy or not at all:
   destroying the context releases the caches left in it. NULL is a no-op. */
RILL_API void rill_kv_cache_destroy(rill_kv_cache* cache);

/* Deprecated: rill_kv_cache_get_length reports a failure as a status and a
   message. The number of tokens cached for sequence, or -1 for NULL or a
   sequence out of range. */
RILL_DEPRECATED("rill_kv_cache_get_length")
RILL_API int32_t rill_kv_cache_length(const rill_kv_cache* cache, int32_t sequence);

/* The number of tokens cached for sequence (0 to the cache's capacity).
   out_length: receives the length.
   Errors: RILL_ERROR_INVALID_ARGUMENT for a NULL cache or out_length, or a
   sequence outside [0, batch - 1] (the range named). */
RILL_API rill_status rill_kv_cache_get_length(const rill_kv_cache* cache, int32_t sequence, int32_t* out_length);

/* Shortens sequence to length tokens (0 empties it), e.g. to drop the padding
   of a batch prefilled to a common length, so that sequences of one batch
   decode from different lengths.
   Errors: RILL_ERROR_INVALID_ARGUMENT for a sequence out of range or a length
   outside [0, current length]. */
RILL_API rill_status rill_kv_cache_set_length(rill_kv_cache* cache, int32_t sequence, int32_t length);

/* Runs hidden states through the stack, in place.
   hidden: [B, T, D] in the model's context and dtype; on return it holds the
     stack's output (after the final norm when final_norm is set).
   cache: NULL to run the T tokens as one causal prefill with no memory; or a
     cache of the model with batch B: token t of sequence b then goes to cache
     slot length(b) + t, attends to slots 0 .. length(b) + t, and length(b)
     grows by T. T = 1 is a decode step.
   positions: B*T int32 RoPE positions (token b*T + t), each >= 0, or NULL for
     length(b) + t (t without a cache). position_count: B*T, or 0 with NULL.
   A mixture-of-experts model (num_experts > 0) waits once per layer for the
   work queued so far, to read its router logits to the host.
   Errors: RILL_ERROR_NOT_FOUND naming a weight not set;
   RILL_ERROR_INVALID_ARGUMENT (NULL model or hidden, a cache of another model
   or batch, a negative position, a sequence
   whose length + T exceeds the cache's capacity: "position past the cache's
   end"), RILL_ERROR_SHAPE / RILL_ERROR_DTYPE for hidden, and
   RILL_ERROR_UNSUPPORTED naming the backend and op when the context's backend
   lacks a kernel the model needs. On failure the cache lengths are unchanged. */
RILL_API rill_status rill_model_forward(rill_model* model, rill_kv_cache* cache, rill_tensor* hidden,
                                        const int32_t* positions, size_t position_count);

/* ------------------------------------------------------------------------- */
/* Language models                                                           */
/*                                                                           */
/* A decoder stack with its token embedding, final norm and LM head, loaded  */
/* from a Hugging Face model folder (docs/MODELS.md lists the model_types).  */
/* ------------------------------------------------------------------------- */

/* A language model: a rill_model (the decoder stack) plus the embedding table
   and the LM head, on one context. */
typedef struct rill_lm rill_lm;

/* Options of rill_lm_load. Fill with rill_lm_load_options_init first. */
typedef struct rill_lm_load_options {
  uint32_t struct_size;    /* sizeof(rill_lm_load_options) */
  uint32_t override_dtype; /* nonzero: compute in dtype; 0: the checkpoint's torch_dtype (f32 when absent) */
  rill_dtype dtype;        /* read only with override_dtype */
  /* RILL_DTYPE_F32 (the default): weight matrices in the compute dtype. A
     block dtype (RILL_DTYPE_Q8_0 ... _Q5_1): every weight matrix given in
     f32/f16/bf16 (the decoder's linear layers, the token embedding and the
     LM head) is quantized to it as it is loaded, with rill's reference
     quantizer (docs/QUANTIZATION.md); norms, biases and gains stay in the
     compute dtype, and tensors a GGUF file already holds in a block dtype
     are kept as they are. Each matrix's rows must be whole blocks of 32
     elements, else RILL_ERROR_SHAPE names it; a K format falls back for rows
     that are not whole blocks of 256 (Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to
     Q8_0, as llama.cpp's quantizer does). A
     backend that cannot run the format refuses the load with
     RILL_ERROR_UNSUPPORTED naming the backend and the format. */
  rill_dtype weight_format;
  /* 0 (the default): the tensors stored as they are in the model's files
     are read in place from their memory maps where the backend can (the
     CPU backend; see rill_lm_load). Nonzero: every tensor is copied into
     memory the backend allocates, and the files are closed when the load
     returns. */
  uint32_t copy_weights;
} rill_lm_load_options;

/* Sets struct_size and the defaults: no override (the checkpoint's dtype).
   NULL is a no-op. */
RILL_API void rill_lm_load_options_init(rill_lm_load_options* options);

/* Loads the Hugging Face model folder at path onto ctx:
     config.json             model_type and sizes, mapped to a rill_model_desc
                             (docs/MODELS.md: the model_types, the keys read
                             and the keys refused);
     model.safetensors, or model.safetensors.index.json and every shard its
                             weight_map names: the decoder weights,
                             model.embed_tokens.weight, model.norm and
                             lm_head.weight (absent with tie_word_embeddings),
                             or the family's own names for them;
     generation_config.json  optional: EOS and BOS ids, sampling defaults.
   A path ending in ".gguf" is loaded instead as one GGUF file (v2 or v3):
   its architecture metadata, F32/F16/BF16 tensors, Q8_0/Q4_0/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K
   tensors (kept in their block dtype: the compute dtype is then f32 unless
   overridden) and special ids (docs/GGUF.md lists the architectures and keys
   read and refused).
   Weights are memory-mapped and converted once to the compute dtype (or
   quantized to options->weight_format). Tensors that need no conversion
   (in the compute dtype already, or a GGUF file's block tensors; not
   norms that get norm_weight_offset, rotary rows that are reordered, the
   parts of a fused tensor, or llama's q and k in a GGUF file) are read in
   place from the map on a backend that reads host memory in place (the CPU
   backend), unless options->copy_weights: no copy is made, the pages are
   the file's (shared with the page cache and other processes that map it;
   the load reads them in, so that the first forward pass does not), and
   the map stays open until the last tensor that reads it is released. rill_lm_info.weight_bytes_mapped
   says how much. The files must then not be changed or truncated while the
   model lives (reading a truncated map raises SIGBUS), as with
   llama.cpp's default mmap; copy_weights avoids it.
   All-or-nothing: every shard is opened and validated (and checked against
   the index) before the model is made, each shard's tensors are checked
   before any of its weights is stored, and every tensor of the checkpoint
   must be one the model uses. On any failure nothing stays allocated.
   options: NULL for the defaults.
   out: receives the model; the caller owns it and destroys it with
     rill_lm_destroy before destroying ctx.
   Errors: RILL_ERROR_INVALID_ARGUMENT (NULL ctx, path or out; a bad options
   struct_size or dtype); RILL_ERROR_IO (a file missing, unreadable or
   corrupt, a tensor missing from its shard or unused by the model, each
   named); RILL_ERROR_CONFIG (config.json not JSON, a key of the wrong type or
   value, sizes the descriptor refuses); RILL_ERROR_UNSUPPORTED (a model_type
   rill does not run, named with the supported ones; a config key that
   changes the computation in a way rill cannot, named with its value);
   RILL_ERROR_SHAPE (a tensor of the wrong shape); RILL_ERROR_OUT_OF_MEMORY. */
RILL_API rill_status rill_lm_load(rill_context* ctx, const char* path, const rill_lm_load_options* options,
                                  rill_lm** out);

/* Releases the model, its decoder stack and its tensors. Its KV caches may be
   destroyed before or after. Call it before destroying the context. NULL is a
   no-op. */
RILL_API void rill_lm_destroy(rill_lm* lm);

/* Creates in ctx a language model that uses source's weights in place: its
   decoder stack, embedding table, norms and LM head are source's device
   buffers, held once however many models share them. Each model keeps its
   own KV caches, scratch and sessions, so contexts sharing weights can each
   run a model at once (one thread per context).
   ctx: source's own context, or another context whose backend can use
     source's buffers: on the CPU backend any CPU context; on the Vulkan
     backend a context on the same VkDevice (contexts that open one device
     index with the same validation setting and queue_priority share it,
     and so do contexts on one host device and queue:
     backends/vulkan/README.md).
   Lifetime: the weights are counted. source and the new model (and their
   contexts) may be destroyed in any order; the memory is freed with the
   last model that uses it. Destroying a model (or a context) whose weights
   another model still uses waits for the work queued on its context first.
   rill_model_set_weight on either model replaces that model's weight only.
   The work queued on source's context is waited for first, so that the new
   model reads complete weights. Not thread-safe with other calls on ctx or
   on source's context.
   out: receives the model; the caller owns it (rill_lm_destroy).
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL arguments, a ctx on another
   backend than source's (both named), or a ctx whose backend cannot use
   source's buffers (the backend's reason: on Vulkan, another VkDevice);
   RILL_ERROR_UNSUPPORTED for a backend that cannot share buffers between
   contexts (CUDA: pass source's own context); RILL_ERROR_OUT_OF_MEMORY. */
RILL_API rill_status rill_lm_create_shared(rill_context* ctx, rill_lm* source, rill_lm** out);

/* What rill_lm_get_info reports. */
typedef struct rill_lm_info {
  uint32_t struct_size; /* set by the caller: sizeof(rill_lm_info) */
  int32_t vocab_size;   /* rows of the embedding table and of the logits */
  int32_t hidden_size;
  int32_t num_layers;
  int32_t max_position_embeddings; /* from config.json; 0 when absent */
  rill_dtype dtype;                /* the compute dtype */
  int32_t bos_token_id;            /* -1: none */
  int32_t eos_token_count;         /* 0 to 8 */
  int32_t eos_token_ids[8];        /* generation_config.json's eos_token_id, else config.json's */
  /* generation_config.json's sampling defaults; absent keys read as
     transformers' GenerationConfig defaults: */
  uint32_t do_sample;       /* 0 */
  float temperature;        /* 1 */
  int32_t top_k;            /* 50; 0 = off */
  float top_p;              /* 1 = off */
  float min_p;              /* 0 = off */
  float repetition_penalty; /* 1 = off */
  char model_type[64];      /* config.json's model_type, NUL-terminated */
  /* The weights' bytes: the decoder's, the embedding table and the LM head
     (a tied head counted once), as the backend holds them. */
  uint64_t weight_bytes;
  /* Of weight_bytes, those read in place from the model file's memory map
     (rill_lm_load_options.copy_weights): file pages, not allocated memory. */
  uint64_t weight_bytes_mapped;
} rill_lm_info;

/* Fills out (the fields inside out->struct_size) with the model's sizes,
   special ids and sampling defaults.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL lm or out, or a struct_size
   smaller than the first two fields. Thread-safe with other readers. */
RILL_API rill_status rill_lm_get_info(const rill_lm* lm, rill_lm_info* out);

/* The decoder stack, for rill_kv_cache_create. Owned by lm: do not destroy
   it. NULL for NULL. */
RILL_API rill_model* rill_lm_model(rill_lm* lm);

/* Computes f32 logits for token ids: embeds them (Gemma: times
   sqrt(hidden_size) in the model dtype), runs the decoder stack through
   rill_model_forward, its final norm, then lm_head (or the tied embedding
   table), and (Gemma 2) the final logit soft-cap. The logits come out of the
   LM head in the model dtype and are converted to f32.
   cache: NULL to run the tokens as one causal prefill without memory; or a
     KV cache of rill_lm_model(lm) with this batch: token t of sequence b sits
     at position length(b) + t and the lengths grow by tokens.
   batch, tokens: >= 1 each. ids: batch*tokens ids, each in [0, vocab_size).
   last_only: nonzero to compute only each sequence's last token's logits.
   logits, logits_count: room for exactly batch*tokens*vocab_size floats
     (batch*vocab_size with last_only), row-major [batch, tokens, vocab].
   On failure the cache lengths are unchanged and logits may hold anything.
   Errors: RILL_ERROR_INVALID_ARGUMENT naming the argument (NULL, a count or
   id out of range, a cache of another model or batch, a position past the
   cache's capacity); the errors of rill_model_forward. */
RILL_API rill_status rill_lm_logits(rill_lm* lm, rill_kv_cache* cache, int32_t batch, int32_t tokens,
                                    const int32_t* ids, uint32_t last_only, float* logits, size_t logits_count);

/* ------------------------------------------------------------------------- */
/* Tokenizer                                                                 */
/* ------------------------------------------------------------------------- */

/* A Hugging Face tokenizer: a tokenizer.json file read as the tokenizers
   library (0.21) defines it, for BPE models (byte-level as GPT-2, Llama 3 and
   Qwen2; SentencePiece-style with byte fallback as Llama 2, Mistral and
   Gemma). docs/TOKENIZER.md lists the supported components and what is
   refused. Immutable once loaded: encode, decode and token_to_id may be called
   from several threads at once. */
typedef struct rill_tokenizer rill_tokenizer;

/* Loads a tokenizer.
   path: a tokenizer.json file, or a folder holding tokenizer.json. A folder's
     tokenizer_config.json, when present, adds the added tokens of its
     added_tokens_decoder that tokenizer.json lacks and, where tokenizer.json
     has no post_processor, applies add_bos_token / add_eos_token. A path
     ending in ".gguf" reads the file's byte-level BPE tokenizer metadata
     (docs/GGUF.md); RILL_ERROR_UNSUPPORTED names a vocabulary kind or
     pre-tokenizer it cannot map.
   out: receives the tokenizer; the caller owns it.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL arguments; RILL_ERROR_IO for a
   file that cannot be read or is not JSON (the file named); RILL_ERROR_CONFIG
   for a field that is missing, of the wrong type or an unsupported component
   (model other than BPE, BPE dropout, truncation or padding set, ...), naming
   the file, the JSON path of the field ("pre_tokenizer.pretokenizers[1].type")
   and what was expected. Nothing is returned on failure. Thread-safe. */
RILL_API rill_status rill_tokenizer_load(const char* path, rill_tokenizer** out);

/* Releases a tokenizer. Destroy its detokenizers first. NULL is a no-op. */
RILL_API void rill_tokenizer_destroy(rill_tokenizer* tokenizer);

/* The largest token id + 1, added tokens included.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL arguments. */
RILL_API rill_status rill_tokenizer_vocab_size(const rill_tokenizer* tokenizer, int32_t* out);

/* Encodes text as tokenizers' Tokenizer.encode(text, add_special_tokens) does:
   added tokens split out, normalizer, pre-tokenizer, BPE, and with
   add_special_tokens nonzero the special tokens the post-processor adds (a
   BOS, say).
   text, text_bytes: UTF-8 text (U+0000 allowed); text may be NULL when
     text_bytes is 0.
   ids, capacity: where to write the ids. Pass ids NULL and capacity 0 to only
     learn the count.
   out_count: receives the number of ids — also when capacity is too small.
   Errors: RILL_ERROR_INVALID_ARGUMENT for a NULL tokenizer or out_count, text
   that is not UTF-8 (the byte offset named), ids NULL with a nonzero capacity,
   or a capacity below the count (the count named; nothing is written to ids). */
RILL_API rill_status rill_tokenizer_encode(const rill_tokenizer* tokenizer, const char* text, size_t text_bytes,
                                           uint32_t add_special_tokens, int32_t* ids, size_t capacity,
                                           size_t* out_count);

/* Decodes ids to text as tokenizers' Tokenizer.decode(ids,
   skip_special_tokens) does; byte sequences that are not UTF-8 come out as
   U+FFFD.
   ids, count: the token ids, each from 0 to vocab_size - 1 (ids NULL when
     count is 0). Ids inside that range that no token has decode to nothing.
   skip_special_tokens: nonzero leaves special tokens out.
   buf, buf_size: where to write the NUL-terminated text. Pass buf NULL and
     buf_size 0 to only learn the size.
   out_required: receives the size the text needs, the NUL included — also
     when buf_size is too small.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL arguments, an id out of range
   (its index, value and the vocab size named), or a buf_size below the
   required size (named; nothing is written to buf: the text is never
   truncated). */
RILL_API rill_status rill_tokenizer_decode(const rill_tokenizer* tokenizer, const int32_t* ids, size_t count,
                                           uint32_t skip_special_tokens, char* buf, size_t buf_size,
                                           size_t* out_required);

/* The id of a token string as the vocabulary spells it ("<s>", "Ġthe",
   "▁the"); added tokens first, then the model's vocabulary.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL arguments; RILL_ERROR_NOT_FOUND
   when no token has that spelling. */
RILL_API rill_status rill_tokenizer_token_to_id(const rill_tokenizer* tokenizer, const char* token, int32_t* out_id);

/* Streaming decode, one id at a time, for printing generated text as it
   comes: each push returns the text that became complete with its id, never
   half a UTF-8 character (bytes of one character split over several tokens
   wait for the rest); the texts of all pushes followed by the flush equal
   rill_tokenizer_decode of all the ids. Uses its tokenizer, which must outlive
   it. One thread at a time per detokenizer. */
typedef struct rill_detokenizer rill_detokenizer;

/* Creates a detokenizer. skip_special_tokens: as rill_tokenizer_decode.
   out: receives it; the caller owns it.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL arguments. */
RILL_API rill_status rill_detokenizer_create(const rill_tokenizer* tokenizer, uint32_t skip_special_tokens,
                                             rill_detokenizer** out);

/* Adds id and writes the text that became complete with it (possibly empty),
   NUL-terminated.
   buf, buf_size: where to write it; pass buf NULL and buf_size 0 to learn the
     length without consuming id.
   out_len: receives the text's length in bytes, without the NUL (so buf_size
     must be at least *out_len + 1) — also when buf_size is too small.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL arguments, an id outside
   [0, vocab_size), or a buf_size too small for the text and its NUL (the size
   named). On failure the detokenizer is unchanged: push the same id again
   with a larger buffer. */
RILL_API rill_status rill_detokenizer_push(rill_detokenizer* detokenizer, int32_t id, char* buf, size_t buf_size,
                                           size_t* out_len);

/* Ends the stream: writes the text still held back (an incomplete character
   at the end comes out as U+FFFD, as the whole decode renders it) and empties
   the detokenizer, which may then start a new stream. Buffers and errors as
   rill_detokenizer_push; on failure nothing changes. */
RILL_API rill_status rill_detokenizer_flush(rill_detokenizer* detokenizer, char* buf, size_t buf_size,
                                            size_t* out_len);

/* Releases a detokenizer. NULL is a no-op. */
RILL_API void rill_detokenizer_destroy(rill_detokenizer* detokenizer);

/* ------------------------------------------------------------------------- */
/* Sampling                                                                  */
/* ------------------------------------------------------------------------- */
/* A sampler turns one row of logits, and the tokens seen so far, into the    */
/* probability distribution the next token is drawn from, in transformers'    */
/* order: repetition penalty, presence and frequency penalties, temperature,  */
/* top-k, top-p, min-p, softmax (docs/GENERATION.md defines each step).       */
/* Pure host code: the arithmetic is double, the same on every backend.       */

/* Sampling settings. Fill with rill_sampler_params_init, then change fields.
   Fields are only ever appended; struct_size = sizeof(rill_sampler_params). */
typedef struct rill_sampler_params {
  uint32_t struct_size;
  float temperature;        /* 0 = greedy (the first largest logit after penalties); default 1 */
  int32_t top_k;            /* keep the k largest (ties with the k-th kept); 0 = off (default) */
  float top_p;              /* keep the smallest top set with mass >= top_p; 1 = off (default); (0, 1] */
  float min_p;              /* drop tokens less likely than min_p * the largest probability; 0 = off; [0, 1] */
  float repetition_penalty; /* seen tokens: positive logits divided, negative multiplied by it; 1 = off; > 0 */
  float presence_penalty;   /* subtracted once from each seen token's logit; 0 = off */
  float frequency_penalty;  /* subtracted once per occurrence of a seen token; 0 = off */
  uint64_t seed;            /* the generator's seed: the same seed draws the same tokens everywhere */
} rill_sampler_params;

/* Fills params with the defaults above: plain sampling at temperature 1, every
   filter and penalty off, seed 0; struct_size = sizeof(rill_sampler_params).
   NULL is a no-op. Thread-safe. */
RILL_API void rill_sampler_params_init(rill_sampler_params* params);

/* The distribution a token would be drawn from, for hosts and tests to see.
   params: settings (struct_size read as above; the seed is not used).
   logits: vocab_size f32 values, each finite or -inf (a token ruled out), at
     least one finite.
   history: the tokens seen so far (prompt and generated), history_count ids in
     [0, vocab_size); the penalties count them. NULL only with history_count 0.
   out_probabilities: probability_count floats, probability_count == vocab_size;
     receives the distribution (0 for removed tokens; sums to 1).
   Errors: RILL_ERROR_INVALID_ARGUMENT for a NULL pointer, a vocab_size of 0, a
   probability_count other than vocab_size, a NaN or +inf logit (its index named),
   a history id out of range, or a params field out of its range (named).
   Thread-safe. */
RILL_API rill_status rill_sampler_probabilities(const rill_sampler_params* params, const float* logits,
                                                size_t vocab_size, const int32_t* history, size_t history_count,
                                                float* out_probabilities, size_t probability_count);

/* A sampler: params and the state of its random generator (xoshiro256**
   seeded with splitmix64, a fixed algorithm, so the same seed and the same
   logits give the same tokens on every platform). */
typedef struct rill_sampler rill_sampler;

/* Creates a sampler with a copy of params, its generator seeded with
   params->seed.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL or a params field out of range
   (named); RILL_ERROR_OUT_OF_MEMORY. */
RILL_API rill_status rill_sampler_create(const rill_sampler_params* params, rill_sampler** out_sampler);

/* Releases a sampler. NULL is a no-op. */
RILL_API void rill_sampler_destroy(rill_sampler* sampler);

/* Draws one token from the distribution rill_sampler_probabilities gives for
   these arguments and advances the generator (greedy draws advance it too, so
   switching temperature keeps later draws reproducible). The draw is the first
   token whose running probability sum exceeds a uniform number in [0, 1).
   out_token: receives the token id.
   Errors: as rill_sampler_probabilities. A sampler is used by one thread at a
   time. */
RILL_API rill_status rill_sampler_sample(rill_sampler* sampler, const float* logits, size_t vocab_size,
                                         const int32_t* history, size_t history_count, int32_t* out_token);

/* ------------------------------------------------------------------------- */
/* Generation sessions                                                       */
/* ------------------------------------------------------------------------- */
/* A session is one conversation with a language model (rill_lm): the tokens  */
/* so far, a KV cache holding those already run through the model, a sampler */
/* and the stops. A host appends a prompt, then calls rill_session_step,      */
/* which runs a bounded number of forward passes and returns, streaming each  */
/* new token through a callback: a game loop calls it once per frame.         */
/* docs/GENERATION.md describes the life cycle.                               */

/* Why a step returned. Values are fixed forever. */
typedef enum rill_stop_reason {
  RILL_STOP_NONE = 0,           /* the step ran its max_forwards; generation can go on */
  RILL_STOP_EOS = 1,            /* an end-of-sequence id was generated (it is in the session) */
  RILL_STOP_STRING = 2,         /* a stop string was generated */
  RILL_STOP_MAX_NEW_TOKENS = 3, /* max_new_tokens tokens were generated since the last input */
  RILL_STOP_CAPACITY = 4,       /* the session holds capacity tokens: rewind to go on */
  RILL_STOP_CANCELLED = 5,      /* rill_session_cancel was called */
  RILL_STOP_CALLBACK = 6,       /* the token callback returned nonzero */
  RILL_STOP_REASON_MAX_ENUM = 0x7FFFFFFF
} rill_stop_reason;

/* Receives each generated token during rill_session_step, on the calling
   thread. text: the text that token completes (valid during the call only;
   may be empty, never half a UTF-8 character), or NULL with text_len 0 when
   the session has no tokenizer. Return nonzero to stop after this token. */
typedef int (*rill_token_fn)(void* user_data, int32_t token, const char* text, size_t text_len);

/* Settings of a session. Fill with rill_session_options_init, then change
   fields. Fields are only ever appended. */
typedef struct rill_session_options {
  uint32_t struct_size;        /* sizeof(rill_session_options) */
  int32_t capacity;            /* most tokens the session holds (prompt and generated); >= 1 */
  int32_t max_new_tokens;      /* tokens generated after each input before RILL_STOP_MAX_NEW_TOKENS; 0 = no budget */
  int32_t prefill_chunk;       /* most prompt tokens one forward pass runs; >= 1 (default 256) */
  rill_sampler_params sampler; /* its own struct_size rules apply */
} rill_session_options;

/* Fills options with defaults: capacity = lm's max_position_embeddings (2048
   when lm is NULL or reports 0), no token budget, prefill_chunk 256, and the
   sampler from lm's generation_config.json (rill_lm_info: do_sample 0 gives
   temperature 0, greedy; else its temperature, top_k, top_p, min_p and
   repetition_penalty), or rill_sampler_params_init's values when lm is NULL.
   NULL options is a no-op. */
RILL_API void rill_session_options_init(rill_session_options* options, const rill_lm* lm);

/* A conversation with one language model. */
typedef struct rill_session rill_session;

/* Creates an empty session on lm, with a KV cache of options->capacity tokens
   and the end-of-sequence ids of rill_lm_info (change them with
   rill_session_set_eos_ids).
   options: NULL for rill_session_options_init(options, lm).
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL lm or out_session, an options
   struct_size too small, a capacity or prefill_chunk < 1, a max_new_tokens < 0,
   or sampler params out of range (each named); RILL_ERROR_OUT_OF_MEMORY. The
   session must be destroyed before lm; one thread at a time uses it, except
   rill_session_cancel. */
RILL_API rill_status rill_session_create(rill_lm* lm, const rill_session_options* options, rill_session** out_session);

/* Releases a session and its KV cache. NULL is a no-op. */
RILL_API void rill_session_destroy(rill_session* session);

/* Replaces the sampler settings and reseeds the generator with params->seed.
   Errors: as rill_sampler_create. */
RILL_API rill_status rill_session_set_sampler(rill_session* session, const rill_sampler_params* params);

/* Replaces the end-of-sequence ids (count 0: none, generation then stops only
   by the other stops).
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL, or an id outside the
   vocabulary (named). */
RILL_API rill_status rill_session_set_eos_ids(rill_session* session, const int32_t* ids, size_t count);

/* Appends count token ids to the conversation, e.g. a user's turn; the next
   step runs only them through the model (the tokens before are cached). Resets
   the max_new_tokens budget.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL, an id outside the vocabulary,
   or more tokens than the session's capacity (named). Nothing is appended then. */
RILL_API rill_status rill_session_append_ids(rill_session* session, const int32_t* ids, size_t count);

/* Replaces the whole conversation with ids. The cached tokens they start with
   are kept and only the rest runs on the next step: a chat host may pass the
   whole formatted conversation each turn and pay only for the new turn.
   Errors: as rill_session_append_ids. */
RILL_API rill_status rill_session_set_ids(rill_session* session, const int32_t* ids, size_t count);

/* Shortens the conversation to its first length tokens (0 empties it).
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL or a length outside
   [0, current length] (the range named). */
RILL_API rill_status rill_session_rewind(rill_session* session, int32_t length);

/* The conversation's token ids, prompt and generated. Writes the count to
   out_count; with capacity >= count also the ids (ids may be NULL with
   capacity 0 to ask the count only).
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL session or out_count, or a
   capacity below the count (the count named; nothing written to ids). */
RILL_API rill_status rill_session_get_ids(const rill_session* session, int32_t* ids, size_t capacity, size_t* out_count);

/* Runs at most max_forwards forward passes and returns. A forward pass is
   either a chunk of up to prefill_chunk pending tokens, or the last pending
   tokens followed by sampling one new token, which is appended to the
   conversation and passed to on_token. The step ends early at a stop (the
   stop reasons above); a later step goes on generating.
   on_token: NULL to receive nothing. user_data: passed to on_token.
   out_generated: receives the number of tokens generated (may be NULL).
   out_reason: receives why the step returned (may be NULL).
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL session, max_forwards < 1, or
   an empty conversation; the errors of rill_lm_logits; RILL_ERROR_BACKEND
   when the model's logits hold NaN; RILL_ERROR_OUT_OF_MEMORY. Tokens
   generated by the step's earlier forward passes stay in the session; the
   failing pass leaves it as it was (its token is not kept, its draw not
   taken). Every other session call that fails leaves the session as it was. */
RILL_API rill_status rill_session_step(rill_session* session, int32_t max_forwards, rill_token_fn on_token,
                                       void* user_data, int32_t* out_generated, rill_stop_reason* out_reason);

/* Attaches a tokenizer (NULL detaches it): then text prompts can be appended,
   on_token receives the text of each generated token (decoded with special
   tokens skipped, never half a UTF-8 character), and stop strings apply.
   tokenizer: borrowed; it must outlive the session or be detached first.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL session, or a tokenizer with
   more tokens than the model's vocabulary (both named). */
RILL_API rill_status rill_session_set_tokenizer(rill_session* session, const rill_tokenizer* tokenizer);

/* Encodes text_bytes of UTF-8 text with the session's tokenizer
   (add_special_tokens: as rill_tokenizer_encode; nonzero for a first prompt,
   0 for a later turn) and appends the ids as rill_session_append_ids does.
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL, a session without a
   tokenizer, or more tokens than the capacity; the errors of
   rill_tokenizer_encode. Nothing is appended on failure. */
RILL_API rill_status rill_session_append_text(rill_session* session, const char* text, size_t text_bytes,
                                              uint32_t add_special_tokens);

/* Encodes text as rill_session_append_text does and replaces the conversation
   with it as rill_session_set_ids does (the cached prefix it shares is kept).
   Errors: as rill_session_append_text. */
RILL_API rill_status rill_session_set_text(rill_session* session, const char* text, size_t text_bytes,
                                           uint32_t add_special_tokens);

/* Adds a stop string (text_bytes >= 1 bytes of UTF-8, copied). When the
   generated text contains one, the step returns RILL_STOP_STRING; on_token
   receives the text before it, never the stop string nor a part of it that
   later completes: text that may begin a stop string is held back until it
   cannot (and comes out when the generation ends otherwise).
   Errors: RILL_ERROR_INVALID_ARGUMENT for NULL or an empty text. */
RILL_API rill_status rill_session_add_stop_string(rill_session* session, const char* text, size_t text_bytes);

/* Removes every stop string. Errors: RILL_ERROR_INVALID_ARGUMENT for NULL. */
RILL_API rill_status rill_session_clear_stop_strings(rill_session* session);

/* Asks the step running on another thread (or the next step) to return with
   RILL_STOP_CANCELLED before its next forward pass. Thread-safe; NULL is a
   no-op. */
RILL_API void rill_session_cancel(rill_session* session);

#ifdef __cplusplus
}
#endif

#endif /* RILL_H */
