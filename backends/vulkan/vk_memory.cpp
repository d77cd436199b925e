/* Device memory: buffers take ranges of large blocks instead of a
   VkDeviceMemory each (drivers allow few allocations, maxMemoryAllocationCount
   is 4096 on many, and each one is slow). The allocator is our own rather than
   AMD's VulkanMemoryAllocator: rill only ever places buffers (no images, so no
   bufferImageGranularity, no defragmentation, no lost allocations), which a
   first-fit range list per block covers in a few hundred lines, and VMA is not
   packaged in Debian 12, so it would have to be vendored and kept up to date. */
#include <algorithm>
#include <string>

#include "vk_internal.h"

namespace rill_vk {

namespace {

/* Buffers up to half a block share blocks; larger ones get a block of their own. */
constexpr uint64_t kDefaultBlockBytes = 64ull << 20;

uint32_t find_memory_type(const VkPhysicalDeviceMemoryProperties& props, uint32_t type_bits,
                          VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) {
  uint32_t fallback = UINT32_MAX;
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
    if ((type_bits & (1u << i)) == 0) continue;
    const VkMemoryPropertyFlags flags = props.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (fallback == UINT32_MAX) fallback = i;
  }
  return fallback;
}

/* The bytes heap can still give: its budget less its usage (both counting
   other processes) with VK_EXT_memory_budget, else its size less what rill
   holds. */
uint64_t heap_available(const SharedDevice& shared, uint32_t heap) {
  const MemoryPool& pool = shared.memory;
  if (pool.budget_extension) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{};
    budget.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
    VkPhysicalDeviceMemoryProperties2 props{};
    props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
    props.pNext = &budget;
    vkGetPhysicalDeviceMemoryProperties2(shared.physical, &props);
    return budget.heapBudget[heap] > budget.heapUsage[heap] ? budget.heapBudget[heap] - budget.heapUsage[heap] : 0;
  }
  const uint64_t size = pool.properties.memoryHeaps[heap].size;
  return size > pool.heap_used[heap] ? size - pool.heap_used[heap] : 0;
}

/* Allocates a block of bytes of memory type `type`; the caller has checked the budget. */
VkResult allocate_block(SharedDevice& device, uint32_t type, uint64_t bytes, bool shared, MemoryBlock** out) {
  VkMemoryAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  info.allocationSize = bytes;
  info.memoryTypeIndex = type;
  auto block = std::make_unique<MemoryBlock>(bytes);
  block->type = type;
  block->shared = shared;
  block->heap = device.memory.properties.memoryTypes[type].heapIndex;
  /* Whatever can run out of host memory comes before vkAllocateMemory, so
     that nothing throws between it and the block's keeping in the pool. */
  const std::string message = "new memory block of " + std::to_string(bytes) + " bytes (memory type " +
                              std::to_string(type) + ", heap " + std::to_string(block->heap) + ")";
  device.memory.blocks.reserve(device.memory.blocks.size() + 1);
  const VkResult result = vkAllocateMemory(device.device, &info, nullptr, &block->memory);
  if (result != VK_SUCCESS) return result;
  device.memory.heap_used[block->heap] += bytes;
  log_message(RILL_LOG_DEBUG, message);
  *out = block.get();
  device.memory.blocks.push_back(std::move(block));
  return VK_SUCCESS;
}

void free_block(SharedDevice& device, MemoryBlock* block) {
  if (block->mapped != nullptr) vkUnmapMemory(device.device, block->memory);
  vkFreeMemory(device.device, block->memory, nullptr);
  device.memory.heap_used[block->heap] -= block->ranges.size();
  auto& blocks = device.memory.blocks;
  blocks.erase(std::find_if(blocks.begin(), blocks.end(), [&](const auto& b) { return b.get() == block; }));
}

rill_status refuse_budget(const SharedDevice& shared, uint64_t bytes, uint32_t heap, uint64_t available) {
  return fail(RILL_ERROR_OUT_OF_MEMORY,
              "Vulkan: a buffer of " + std::to_string(bytes) + " bytes does not fit memory heap " +
                  std::to_string(heap) + ": " + std::to_string(available) + " bytes are left of its " +
                  (shared.memory.budget_extension ? "budget (VK_EXT_memory_budget)" : "size"));
}

/* memory_release with the pool's lock held. */
void release_locked(SharedDevice& device, Allocation* allocation) {
  MemoryBlock* block = allocation->block;
  if (block == nullptr) return;
  block->ranges.release(allocation->offset, allocation->bytes);
  *allocation = Allocation{};
  if (!block->ranges.empty()) return;
  /* Keep one empty shared block per memory type, so that a buffer freed and
     allocated again in a loop does not allocate device memory each time. */
  bool another_empty = false;
  for (const auto& other : device.memory.blocks) {
    if (other.get() != block && other->shared && other->type == block->type && other->ranges.empty()) {
      another_empty = true;
    }
  }
  if (!block->shared || another_empty) free_block(device, block);
}

}  // namespace

void memory_init(SharedDevice* shared) {
  vkGetPhysicalDeviceMemoryProperties(shared->physical, &shared->memory.properties);
  shared->memory.budget_extension = shared->caps.memory_budget;
  shared->memory.block_bytes = std::min(kDefaultBlockBytes, shared->caps.max_allocation_bytes);
}

rill_status memory_bind_buffer(rill_backend_context* ctx, VkBuffer buffer, VkMemoryPropertyFlags required,
                               VkMemoryPropertyFlags preferred, Allocation* out) {
  SharedDevice& device = *ctx->shared;
  std::lock_guard<std::mutex> lock(device.memory_mutex);
  MemoryPool& pool = device.memory;
  VkMemoryRequirements requirements{};
  vkGetBufferMemoryRequirements(ctx->device, buffer, &requirements);
  const uint32_t type = find_memory_type(pool.properties, requirements.memoryTypeBits, required, preferred);
  if (type == UINT32_MAX) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                "Vulkan: device \"" + ctx->caps.name + "\" has no memory type with property flags " +
                    std::to_string(required) + " among those a buffer may use (memoryTypeBits " +
                    std::to_string(requirements.memoryTypeBits) + ")");
  }
  const uint64_t bytes = requirements.size;
  const uint64_t alignment = std::max<uint64_t>(requirements.alignment, 1);
  Allocation allocation;
  allocation.bytes = bytes;
  if (bytes <= pool.block_bytes / 2) {
    for (const auto& block : pool.blocks) {
      if (!block->shared || block->type != type) continue;
      const uint64_t offset = block->ranges.allocate(bytes, alignment);
      if (offset == RangeAllocator::kNoRange) continue;
      allocation.block = block.get();
      allocation.offset = offset;
      break;
    }
  }
  if (allocation.block == nullptr) {
    const uint32_t heap = pool.properties.memoryTypes[type].heapIndex;
    const uint64_t available = heap_available(device, heap);
    if (bytes > available) return refuse_budget(device, bytes, heap, available);
    /* A shared block when the budget allows one; else just this buffer. */
    const bool shared = bytes <= pool.block_bytes / 2 && pool.block_bytes <= available;
    MemoryBlock* block = nullptr;
    VkResult result = allocate_block(device, type, shared ? pool.block_bytes : bytes, shared, &block);
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY && shared) result = allocate_block(device, type, bytes, false, &block);
    if (result != VK_SUCCESS) {
      return fail_context(ctx, result, ("vkAllocateMemory for a buffer of " + std::to_string(bytes) + " bytes").c_str());
    }
    allocation.block = block;
    allocation.offset = block->ranges.allocate(bytes, alignment);
  }
  const VkResult result =
      vkBindBufferMemory(ctx->device, buffer, allocation.block->memory, allocation.offset);
  if (result != VK_SUCCESS) {
    release_locked(device, &allocation);
    return fail_context(ctx, result, "vkBindBufferMemory");
  }
  *out = allocation;
  return RILL_OK;
}

void memory_release(rill_backend_context* ctx, Allocation* allocation) {
  std::lock_guard<std::mutex> lock(ctx->shared->memory_mutex);
  release_locked(*ctx->shared, allocation);
}

void* memory_map(rill_backend_context* ctx, const Allocation& allocation) {
  std::lock_guard<std::mutex> lock(ctx->shared->memory_mutex);
  MemoryBlock* block = allocation.block;
  if (block->mapped == nullptr) {
    const VkResult result = vkMapMemory(ctx->device, block->memory, 0, VK_WHOLE_SIZE, 0, &block->mapped);
    if (result != VK_SUCCESS) {
      fail_context(ctx, result, "vkMapMemory");
      return nullptr;
    }
  }
  return static_cast<unsigned char*>(block->mapped) + allocation.offset;
}

void memory_destroy(SharedDevice* shared) {
  std::lock_guard<std::mutex> lock(shared->memory_mutex);
  while (!shared->memory.blocks.empty()) free_block(*shared, shared->memory.blocks.back().get());
}

}  // namespace rill_vk
