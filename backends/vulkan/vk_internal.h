/* Internal declarations shared by the files of the Vulkan backend plugin.
   One file per object: vk_device.cpp (instance, enumeration, errors),
   vk_device_list.cpp (one listing per GPU), vk_shared_device.cpp (the
   device, queue and memory that contexts share), vk_context.cpp (command
   recording, hazards, submission), vk_memory.cpp and vk_ranges.cpp
   (memory blocks and their free ranges), vk_buffer.cpp (device buffers,
   staging, deferred frees), vk_pipelines.cpp (embedded SPIR-V, pipelines,
   dispatch), vk_pipeline_cache.cpp (the pipeline cache file and the backend's
   options), vk_ops.cpp (the residual-stream operators), vk_gemm_plan.cpp
   (the tiled GEMM's tile and split-K for a shape), vk_quant_ops.cpp
   (get_rows and gemm on block-format weights),
   vk_coopmat_gemm.cpp (the cooperative-matrix GEMM),
   vk_layer_ops.cpp (the decoder-layer operators), vk_timeline.cpp (the
   host's timeline semaphores), vk_plugin.cpp (tables),
   vk_functions.cpp (the Vulkan functions, loaded at run time). */
#ifndef RILL_VK_INTERNAL_H
#define RILL_VK_INTERNAL_H

#include "vk_functions.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill_backend.h"
#include "vk_coopmat.h"
#include "vk_device_list.h"
#include "vk_float_controls.h"
#include "vk_gemm_plan.h"
#include "vk_ranges.h"

namespace rill_vk {

/* ---- vk_device.cpp ------------------------------------------------------ */

/* The host services handed to the plugin at init. */
extern const rill_host_services* g_host;

/* Reports "Vulkan: <what>: <problem>" without allocating (for use while
   handling an exception) and returns status. */
rill_status fail_static(rill_status status, const char* what, const char* problem) noexcept;

/* Runs fn(args...) and turns any C++ exception into a status, so that none
   crosses the plugin boundary. */
template <typename Fn, typename... Args>
rill_status guarded(const char* what, Fn fn, Args... args) noexcept {
  try {
    return fn(args...);
  } catch (const std::bad_alloc&) {
    return fail_static(RILL_ERROR_OUT_OF_MEMORY, what, "out of host memory");
  } catch (...) {
    return fail_static(RILL_ERROR_INTERNAL, what, "unexpected C++ exception");
  }
}

/* Reports status with message through the host and returns status. */
rill_status fail(rill_status status, const std::string& message);
/* Maps a failed VkResult to a rill status (out of memory, device lost, ...)
   and reports "<what> failed: <VkResult name>". */
rill_status fail_vk(VkResult result, const char* what);
const char* vk_result_name(VkResult result);
void log_message(rill_log_level level, const std::string& message);

/* Features of a physical device that rill uses. */
struct DeviceCaps {
  uint32_t api_version = 0;
  bool storage_16bit = false;      /* storageBuffer16BitAccess */
  bool subgroup_arithmetic = false; /* subgroupAdd in compute shaders */
  uint32_t subgroup_size = 0;
  /* Float controls usable for 16-bit floats: RoundingModeRTE and
     DenormPreserve (added to the f16 shader variants, vk_float_controls.h). */
  rill_vk::F16FloatControls f16_float_controls;
  bool cooperative_matrix = false; /* VK_KHR_cooperative_matrix reported */
  /* The shape gemm_coopmat.comp runs with (vk_coopmat.h); none where the
     extension, its features (cooperativeMatrix, shaderFloat16,
     vulkanMemoryModel) or an f16 shape are missing, on a host's device (whose
     enabled extensions rill does not know), or in a plugin built without the
     shader. */
  rill_vk::CoopmatTile coopmat_tile;
  bool timeline_semaphore = false; /* the timelineSemaphore feature (Vulkan 1.2) */
  uint64_t device_local_bytes = 0;
  uint64_t max_allocation_bytes = 0; /* maxMemoryAllocationSize */
  bool memory_budget = false;        /* VK_EXT_memory_budget supported */
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  VkPhysicalDeviceLimits limits{};
  GemmDeviceLimits gemm_limits; /* what plan_gemm reads of limits */
  std::string name;
  std::string details;
};

/* Creates an instance (with the Khronos validation layer and a messenger when
   validation is true). On failure reports and returns a status. */
rill_status create_instance(bool validation, PFN_vkDebugUtilsMessengerCallbackEXT callback, void* user_data,
                            VkInstance* out_instance, VkDebugUtilsMessengerEXT* out_messenger);
void destroy_instance(VkInstance instance, VkDebugUtilsMessengerEXT messenger);
/* The physical devices rill lists and opens by index: each GPU once, however
   many drivers expose it (unique_devices). On failure reports and returns a status. */
rill_status list_physical_devices(VkInstance instance, std::vector<VkPhysicalDevice>* out);
/* Queries what rill needs to know about a physical device of instance. */
DeviceCaps query_caps(VkInstance instance, VkPhysicalDevice physical);
/* True when the environment asks for validation (RILL_VULKAN_VALIDATION=1). */
bool validation_requested();

rill_status device_count(uint32_t* out_count);
rill_status describe_device(uint32_t index, rill_backend_device_info* out_info);

/* ---- vk_memory.cpp ------------------------------------------------------ */

/* One VkDeviceMemory from which buffers take ranges. */
struct MemoryBlock {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint32_t type = 0;
  uint32_t heap = 0;
  bool shared = false;     /* false: made for one large buffer */
  void* mapped = nullptr;  /* host address once mapped (host-visible types) */
  RangeAllocator ranges;
  explicit MemoryBlock(uint64_t bytes) : ranges(bytes) {}
};

/* A buffer's range of a block. */
struct Allocation {
  MemoryBlock* block = nullptr;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/* The device memory of a shared device: blocks per memory type, and what rill holds
   of each heap (the budget where VK_EXT_memory_budget is absent). */
struct MemoryPool {
  VkPhysicalDeviceMemoryProperties properties{};
  bool budget_extension = false;
  uint64_t block_bytes = 0;
  uint64_t heap_used[VK_MAX_MEMORY_HEAPS] = {};
  std::vector<std::unique_ptr<MemoryBlock>> blocks;
};

/* ---- vk_options.cpp: the [backend.vulkan] options --------------------- */

constexpr const char* kPipelineCacheOption = "pipeline_cache";
constexpr const char* kQueuePriorityOption = "queue_priority";
constexpr float kDefaultQueuePriority = 1.0f;

/* The backend's check_options: pipeline_cache, a non-empty path;
   queue_priority, a float from 0.0 to 1.0. */
rill_status check_options(const rill_backend_option* options, uint32_t count, uint32_t* out_rejected);
/* The queue priority options ask for (checked already), else the default. */
float queue_priority(const rill_backend_context_options* options);
/* A float option's value for a message: "1.5", "-0.1", "nan" (not
   std::to_string's six digits). */
std::string float_text(double value);

/* ---- vk_shared_device.cpp ---------------------------------------------- */

/* A VkDevice with its compute queue and its memory, shared by every context
   that opens the same device: rill's own device by index (with the same
   validation setting and queue priority), or a host's device and queue with
   the same enabled 16-bit storage. Buffers come from the shared memory, so a buffer of one
   context may be used (and freed) by another on the same device. Counted by
   contexts; the last one to let go destroys what rill made, and never the
   host's objects. */
struct SharedDevice {
  /* What a context must ask for to share this device. */
  bool validation = false;
  int32_t device_index = -1;            /* rill's own device; -1 on a host's */
  float queue_priority = kDefaultQueuePriority; /* rill's own device's queue */
  VkDevice host_device = VK_NULL_HANDLE; /* a host's device and queue */
  VkQueue host_queue = VK_NULL_HANDLE;
  bool host_storage_16bit = false;

  VkInstance instance = VK_NULL_HANDLE; /* rill's own, or the host's */
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  bool owned = true; /* false on a host's device: nothing here is destroyed */
  DeviceCaps caps;
  /* Changed under the registry's lock (vk_shared_device.cpp); read without it
     where a stale count does no harm. */
  std::atomic<uint32_t> contexts{0};

  /* VkQueue is externally synchronized: every vkQueueSubmit holds this. */
  std::mutex queue_mutex;
  std::mutex memory_mutex; /* guards memory */
  MemoryPool memory;

  /* Validation-layer messages seen (with RILL_VULKAN_VALIDATION=1): the
     layer reports per instance, so they count against every context here. */
  std::mutex validation_mutex;
  uint32_t validation_messages = 0;
  std::string first_validation_message;
};

/* The shared device that options ask for: an existing one (its count raised)
   or a new one. */
rill_status acquire_device(const rill_backend_context_options* options, SharedDevice** out);
/* Lowers the count; the last release destroys what rill made. NULL is a no-op. */
void release_device(SharedDevice* shared);
/* The backend's shares_buffers (interface version 7): RILL_OK when ctx and
   other hold one shared device, else why not. */
rill_status shares_buffers(rill_backend_context* ctx, rill_backend_context* other);

/* ---- vk_buffer.cpp ------------------------------------------------------ */

}  // namespace rill_vk

struct rill_backend_buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  rill_vk::Allocation allocation;
  uint64_t size = 0;
};

namespace rill_vk {

/* A host-visible, persistently mapped buffer used for uploads and downloads. */
struct StagingChunk {
  VkBuffer buffer = VK_NULL_HANDLE;
  Allocation allocation;
  void* mapped = nullptr;
  uint64_t size = 0;
  uint64_t used = 0;
};

/* ---- vk_context.cpp ----------------------------------------------------- */

/* One in-flight command buffer with what its commands need until they finish. */
struct Frame {
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  bool recording = false;
  bool submitted = false; /* submitted and not yet waited for */
  uint32_t descriptor_sets = 0;
  std::vector<StagingChunk> staging;
  uint64_t staging_used = 0;
  /* Buffers freed while this frame (or an earlier one) may still use them;
     destroyed once its fence has signalled. */
  std::vector<rill_backend_buffer*> freed;
};

/* A byte range of a buffer touched by a recorded command. */
struct Access {
  VkBuffer buffer;
  uint64_t begin;
  uint64_t end;
  bool write;
};

/* A RoPE table on the device: cos and sin per (token, frequency) for the
   positions, frequencies and factor it was made for. */
struct RopeTable {
  std::vector<double> inv_freq;
  double factor = 1.0;
  std::vector<int32_t> positions;
  rill_backend_buffer* table = nullptr;
  uint64_t last_use = 0;
};

/* A value of a host's timeline semaphore. */
struct TimelinePoint {
  VkSemaphore semaphore = VK_NULL_HANDLE;
  uint64_t value = 0;
};

/* The timeline-semaphore part of one vkQueueSubmit (vk_timeline.cpp): the
   host's semaphores to wait for and to signal, chained to a VkSubmitInfo that
   must not outlive it. */
class TimelineSubmit {
 public:
  TimelineSubmit(const std::vector<TimelinePoint>& waits, const std::vector<TimelinePoint>& signals);
  TimelineSubmit(const TimelineSubmit&) = delete;
  TimelineSubmit& operator=(const TimelineSubmit&) = delete;
  /* Leaves submit as it is when there is nothing to wait for or signal. */
  void attach(VkSubmitInfo& submit);

 private:
  std::vector<VkSemaphore> wait_semaphores_, signal_semaphores_;
  std::vector<uint64_t> wait_values_, signal_values_;
  std::vector<VkPipelineStageFlags> wait_stages_;
  VkTimelineSemaphoreSubmitInfo info_{};
};

constexpr uint32_t kFrameCount = 2;
constexpr uint32_t kMaxSetsPerFrame = 512;
constexpr uint32_t kBindingCount = 5;
constexpr uint32_t kPushConstantBytes = 64;
constexpr uint64_t kStagingChunkBytes = 16ull << 20;
constexpr uint64_t kStagingBytesPerFrame = 64ull << 20;

}  // namespace rill_vk

struct rill_backend_context {
  /* The device, queue and memory, shared with the other contexts on it; the
     handles below are its, copied for brevity. */
  rill_vk::SharedDevice* shared = nullptr;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  /* False on the host's own device (rill_context_create_on_vulkan_device):
     the instance and device are the host's, never destroyed here. */
  bool owns_device = true;
  rill_vk::DeviceCaps caps;
  bool use_subgroups = false;
  /* Workgroups per grid dimension that a kernel loops over (groups_for, the
     tiled GEMM's row tiles): kMaxGroupsPerDispatch, or fewer for tests
     (RILL_VULKAN_TEST_MAX_GROUPS), so that small shapes take more than one
     pass of the grid. Dimensions no kernel loops over (GEMM column tiles,
     split-K runs, attention key ranges) keep kMaxGroupsPerDispatch. */
  uint32_t max_groups = rill_vk::kMaxGroupsPerDispatch;
  /* False with RILL_VULKAN_NO_FLASH_ATTENTION=1: attention runs the row
     kernel (attention.comp) everywhere, as on a device whose shared memory
     cannot hold a flash-attention tile. */
  bool flash_attention = true;
  /* The device's cooperative-matrix shape for the f16 prefill GEMM
     (gemm_coopmat.comp); none with RILL_VULKAN_NO_COOPMAT=1, so that the
     tiled gemm.comp can be compared on the same device. */
  rill_vk::CoopmatTile coopmat_tile;
  /* The float-controls modes the f16 shader variants run with (what the
     device supports), inserted as each pipeline is made. */
  rill_vk::F16FloatControls f16_float_controls;

  VkCommandPool command_pool = VK_NULL_HANDLE;
  rill_vk::Frame frames[rill_vk::kFrameCount];
  uint32_t current_frame = 0;
  /* Accesses recorded since the last barrier; a new command that conflicts
     with one of them gets a barrier first. */
  std::vector<rill_vk::Access> pending_accesses;

  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  std::unordered_map<std::string, VkPipeline> pipelines;
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE; /* with pipeline_cache_path only */
  std::string pipeline_cache_path;
  rill_backend_buffer* placeholder = nullptr; /* bound where an operand is absent */
  /* RoPE cos/sin tables of recent calls: every layer of a forward pass rotates
     q and k at the same positions, so one table serves them all. */
  std::vector<rill_vk::RopeTable> rope_tables;
  uint64_t rope_calls = 0;

  /* The host's timeline semaphores (wait_semaphore, signal_semaphore) that
     the next submission waits for and signals, and the last value each
     semaphore was given to signal, which a later signal must exceed. */
  std::vector<rill_vk::TimelinePoint> timeline_waits;
  std::vector<rill_vk::TimelinePoint> timeline_signals;
  std::unordered_map<uint64_t, uint64_t> timeline_last_signal;

  /* Set after a device loss: every later call fails with this message. */
  bool lost = false;
  std::string lost_message;
};

namespace rill_vk {

rill_status context_create(const rill_backend_context_options* options, rill_backend_context** out_ctx);
void context_destroy(rill_backend_context* ctx);
const char* context_device_name(rill_backend_context* ctx);
rill_status synchronize(rill_backend_context* ctx);

/* Fails when the context is lost or validation reported something. */
rill_status check_usable(rill_backend_context* ctx);
/* The frame being recorded, starting one (and waiting for its previous use)
   when needed. */
rill_status begin_recording(rill_backend_context* ctx, Frame** out_frame);
/* Records a barrier first if any of the accesses conflicts with an earlier,
   unbarriered command, then remembers them. */
void track_accesses(rill_backend_context* ctx, Frame* frame, const Access* accesses, size_t count);
/* Submits the frame being recorded (if any) and moves to the next one. */
rill_status flush(rill_backend_context* ctx);
/* Submits and waits for everything. */
rill_status finish(rill_backend_context* ctx);
/* Waits for frame's submission (if any) to complete, leaving its resources
   (staging included) untouched until the frame is recorded again. */
rill_status wait_for_frame(rill_backend_context* ctx, Frame* frame);
/* The host's timeline semaphore (vk_timeline.cpp): the next submission waits
   for value; or signals value once the work queued so far is done. */
rill_status wait_semaphore(rill_backend_context* ctx, uint64_t semaphore, uint64_t value);
rill_status signal_semaphore(rill_backend_context* ctx, uint64_t semaphore, uint64_t value);
/* Maps a failure that may be a device loss and marks the context lost. */
rill_status fail_context(rill_backend_context* ctx, VkResult result, const char* what);

/* ---- vk_memory.cpp ------------------------------------------------------ */

/* The memory of a shared device (its memory_mutex taken inside each call).
   memory_init reads the memory types and sets the block size once the device
   exists; memory_destroy frees every block. */
void memory_init(SharedDevice* shared);
/* Binds memory to buffer: a range of a shared block (a dedicated block for
   large buffers) of a memory type allowed by the buffer's memoryTypeBits
   with the required properties, preferring those with preferred too. Refuses
   with RILL_ERROR_OUT_OF_MEMORY, naming the bytes, what the heap's budget
   (VK_EXT_memory_budget, or the heap's size less what rill holds) cannot give. */
rill_status memory_bind_buffer(rill_backend_context* ctx, VkBuffer buffer, VkMemoryPropertyFlags required,
                               VkMemoryPropertyFlags preferred, Allocation* out);
/* Gives a range back; a block left empty is freed unless it is the only
   empty one of its type (kept for the next allocation). */
void memory_release(rill_backend_context* ctx, Allocation* allocation);
void memory_destroy(SharedDevice* shared);
/* The host address of an allocation in host-visible memory (blocks are
   mapped on first use); nullptr with a report on failure. */
void* memory_map(rill_backend_context* ctx, const Allocation& allocation);

/* ---- vk_buffer.cpp ------------------------------------------------------ */

struct BoundRange;

rill_status buffer_alloc(rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer** out_buffer);
void buffer_free(rill_backend_context* ctx, rill_backend_buffer* buffer);
rill_status buffer_write(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, const void* src,
                         uint64_t bytes);
rill_status buffer_read(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, void* dst,
                        uint64_t bytes);
rill_status buffer_copy(rill_backend_context* ctx, rill_backend_buffer* src, uint64_t src_offset,
                        rill_backend_buffer* dst, uint64_t dst_offset, uint64_t bytes);
/* Creates a device buffer of bytes in device-local memory. */
rill_status create_device_buffer(rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer* out);
void destroy_device_buffer(rill_backend_context* ctx, rill_backend_buffer* buffer);
/* Copies bytes of host data (e.g. positions, lengths) into staging memory
   of the frame being recorded and describes it for binding to the next
   dispatch, which must be recorded right after (the frame is flushed first if
   it could not take that dispatch). */
rill_status upload_to_staging(rill_backend_context* ctx, const void* data, uint64_t bytes, BoundRange* out);
/* Destroys the buffers freed into frame (its fence has signalled). */
void destroy_freed_buffers(rill_backend_context* ctx, Frame* frame);
/* Makes frame's staging chunks reusable; frees oversized ones. */
void reset_staging(rill_backend_context* ctx, Frame* frame);
void destroy_staging(rill_backend_context* ctx, Frame* frame);

/* ---- vk_pipelines.cpp --------------------------------------------------- */

/* The part of a buffer bound to one shader binding. */
struct BoundRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  bool tracked = true;          /* false for placeholders and staged uploads */
  uint64_t bind_offset = 0;     /* aligned to minStorageBufferOffsetAlignment */
  uint64_t bind_range = 0;
  uint32_t element_offset = 0;  /* the tensor's first element inside the range */
  uint64_t access_begin = 0;    /* the bytes the op touches */
  uint64_t access_end = 0;
  bool write = false;
};

/* Computes the bound range for elements [first, first + count) of elem_size
   bytes at byte offset in buffer; UNSUPPORTED when the range exceeds the
   device's maxStorageBufferRange. */
rill_status bind_range(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, uint64_t count,
                       uint32_t elem_size, bool write, BoundRange* out);
/* A read-only placeholder for an absent operand. */
BoundRange placeholder_range(rill_backend_context* ctx);
/* Creates the descriptor set layout and pipeline layout of ctx. */
rill_status create_pipeline_layout(rill_backend_context* ctx);
void destroy_pipelines(rill_backend_context* ctx);
/* Records one dispatch of the named shader variant with kBindingCount bound
   ranges and push constants; constant0, when not 0, is the value of the
   shader's specialization constant 0 (ROWS of common/gemv.glsl, VEC4 of
   gemm.comp). */
rill_status record_dispatch(rill_backend_context* ctx, const std::string& shader, const BoundRange* ranges,
                            const void* push, uint32_t push_size, uint32_t groups_x, uint32_t groups_y,
                            uint32_t constant0 = 0);
/* record_dispatch with the shader's specialization constants 0, 1, ... set
   to constants. */
rill_status record_dispatch_specialized(rill_backend_context* ctx, const std::string& shader,
                                        const std::vector<uint32_t>& constants, const BoundRange* ranges,
                                        const void* push, uint32_t push_size, uint32_t groups_x,
                                        uint32_t groups_y);

/* ---- vk_ops.cpp --------------------------------------------------------- */

extern const rill_backend_ops g_ops;
/* Helpers shared by the operator files. */
uint64_t tensor_numel(const rill_backend_tensor* t);
uint32_t dtype_size(rill_dtype dtype);
const char* dtype_suffix(rill_dtype dtype);
/* Checks the context and that the device can store dtype. */
rill_status prepare_op(rill_backend_context* ctx, const char* op, rill_dtype dtype);
/* The limits that the ops and the capability query share; each fails with a
   message naming the op, the parameter and the limit. */
rill_status check_dtype(rill_backend_context* ctx, const char* op, rill_dtype dtype);
rill_status check_gemm_n(uint64_t rows, uint64_t n);
/* A gemm with at most this many rows streams the weights once (gemm_rows.comp,
   gemm_q.comp: MAX_ROWS of common/gemv.glsl); more rows take the tiled gemm.comp
   (vk_gemm_plan.h). */
constexpr int64_t kGemmRowsMax = 8;
/* gemm's push constants: the Params block of gemm.comp and gemm_rows.comp,
   and the start of gemm_q.comp's. */
struct GemmParams {
  uint32_t a_offset, w_offset, bias_offset, out_offset, rows, n, k, has_bias;
  float alpha, beta;
};
/* Records the decode GEMV (common/gemv.glsl) of the named kernel for
   params.rows rows and params.n output columns. */
rill_status record_gemv(rill_backend_context* ctx, const std::string& kernel, const BoundRange* ranges,
                        const void* push, uint32_t push_size, const GemmParams& params);
/* Binds gemm's operands to bindings 0-3 (a, w, bias, out; w in its element
   or block layout, all n rows), the placeholder to 4, and fills params. */
rill_status bind_gemm_operands(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                               const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out,
                               BoundRange* ranges, GemmParams* params);
/* gemm with w of a's element dtype (gemm_rows.comp or gemm.comp); the
   context and dtype already checked. */
rill_status gemm_elements(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                          const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out);
/* gemm on the device's matrix units (vk_coopmat_gemm.cpp, gemm_coopmat.comp)
   with the operands bound by bind_gemm_operands; where coopmat_applies. */
rill_status gemm_coopmat(rill_backend_context* ctx, const BoundRange* ranges, const GemmParams& params);
/* Binds a tensor (or the placeholder for NULL). */
rill_status bind_tensor(rill_backend_context* ctx, const rill_backend_tensor* t, bool write, BoundRange* out);
/* Workgroups for work_items split per_group each, capped at ctx->max_groups
   (kernels loop over the rest). */
uint32_t groups_for(const rill_backend_context* ctx, uint64_t work_items, uint64_t per_group);
std::string reduction_suffix(rill_backend_context* ctx);

/* ---- vk_layer_ops.cpp: the decoder-layer operators (interface version 2) - */

rill_status layer_rope(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions, float theta,
                       int32_t rotary_dim);
rill_status layer_rope_freqs(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                             const float* inv_freq, float attention_factor, int32_t rotary_dim);
rill_status layer_attention(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                            const rill_backend_tensor* v, const int32_t* kv_lengths, float scale,
                            const rill_backend_tensor* out);
/* Attention with the sliding window and soft-cap of params (interface version 3). */
rill_status layer_attention_ex(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                               const rill_backend_tensor* v, const int32_t* kv_lengths,
                               const rill_attention_params* params, const rill_backend_tensor* out);
rill_status layer_activation(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                             const rill_backend_tensor* up, const rill_backend_tensor* out);
/* x clamped to [lo, hi] into out (interface version 5), by activation.comp. */
rill_status layer_clamp(rill_backend_context* ctx, const rill_backend_tensor* x, float lo, float hi,
                        const rill_backend_tensor* out);
rill_status check_attention_head_dim(int64_t head_dim);
/* Frees the cached RoPE tables (at context destruction). */
void release_rope_tables(rill_backend_context* ctx);

/* ---- vk_quant_ops.cpp: weights of any dtype (interface version 4) ----- */

/* gemm with w of a block dtype; the context and a's dtype already checked. */
rill_status gemm_block_weights(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                               const rill_backend_tensor* bias, float alpha, float beta,
                               const rill_backend_tensor* out);
rill_status get_rows(rill_backend_context* ctx, const rill_backend_tensor* table, const int32_t* ids, uint64_t count,
                     const rill_backend_tensor* out);
/* Binds the first rows of a weight table of any dtype for common/weights.glsl,
   which reads 32-bit words and addresses bytes. */
rill_status bind_weights(rill_backend_context* ctx, const rill_backend_tensor* t, uint64_t rows, BoundRange* out);

/* ---- vk_pipeline_cache.cpp: [backend.vulkan] pipeline_cache --------- */

/* Creates ctx's pipeline cache from the file options name, if any (a file
   that cannot be used is logged and ignored). */
rill_status pipeline_cache_open(rill_backend_context* ctx, const rill_backend_context_options* options);
/* Writes the cache back to its file and destroys it. */
void pipeline_cache_close(rill_backend_context* ctx);

/* ---- vk_supports.cpp: the capability query (interface version 3) ------- */

rill_status supports(rill_backend_context* ctx, const rill_backend_op_desc* desc);
/* The backend table of interface version 1 to 3. */
const rill_backend* backend_for_version(uint32_t version);

}  // namespace rill_vk

#endif
