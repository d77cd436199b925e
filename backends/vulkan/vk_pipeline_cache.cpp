/* The pipeline cache on disk ([backend.vulkan] pipeline_cache = "path"):
   loaded when a context is created, so that pipelines made by an earlier run
   on the same device and driver need no compilation, and written back when
   the context is destroyed. A file that is missing, unreadable, truncated or
   made for another device or driver is ignored, never a failure: its header
   is checked here before the driver sees a byte of it. A missing file (the
   first run) is logged as information, any other as a warning. */
#include <cstdio>
#include <cstring>

#include "option_checks.h"
#include "platform.h"
#include "vk_internal.h"

namespace rill_vk {

namespace {

/* A cache larger than this is not ours (rill's shaders make a few MiB at most). */
constexpr uint64_t kMaxCacheFileBytes = 256ull << 20;

/* Empty when data is a cache this device and driver made; else why not. */
std::string cache_problem(const std::vector<char>& data, const VkPhysicalDeviceProperties& props) {
  VkPipelineCacheHeaderVersionOne header{};
  if (data.size() < sizeof header) return "shorter than a pipeline cache header";
  std::memcpy(&header, data.data(), sizeof header);
  if (header.headerSize < sizeof header || header.headerSize > data.size()) return "the header size is invalid";
  if (header.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) return "unknown header version";
  if (header.vendorID != props.vendorID || header.deviceID != props.deviceID) return "made for another device";
  if (std::memcmp(header.pipelineCacheUUID, props.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
    return "made by another driver version";
  }
  return "";
}

/* The bytes of the file at path (UTF-8), or why it cannot be used;
   *out_opened says whether the file could be opened at all. */
std::string read_cache_file(const std::string& path, std::vector<char>* out, bool* out_opened) {
  uint64_t size = 0;
  std::string problem;
  std::FILE* file = rill::platform::open_regular_file(path, size, problem);
  *out_opened = file != nullptr;
  if (file == nullptr) return "cannot be opened (" + problem + "; a new one is written when the context is destroyed)";
  if (size > kMaxCacheFileBytes) {
    problem = "too large";
  } else {
    out->resize(static_cast<size_t>(size));
    if (std::fread(out->data(), 1, out->size(), file) != out->size()) problem = "cannot be read";
  }
  std::fclose(file);
  return problem;
}

}  // namespace

rill_status pipeline_cache_open(rill_backend_context* ctx, const rill_backend_context_options* options) {
  const rill_backend_option* path = nullptr;
  if (rill_options::has_option_list(options)) {
    path = rill_options::find(options->options, options->option_count, kPipelineCacheOption);
  }
  if (path == nullptr) return RILL_OK;
  ctx->pipeline_cache_path = path->string_value;
  std::vector<char> data;
  bool opened = false;
  std::string problem = read_cache_file(ctx->pipeline_cache_path, &data, &opened);
  if (problem.empty()) {
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(ctx->physical, &props);
    problem = cache_problem(data, props);
  }
  if (!problem.empty()) {
    log_message(opened ? RILL_LOG_WARNING : RILL_LOG_INFO,
                "pipeline cache " + ctx->pipeline_cache_path + " not used: " + problem);
    data.clear();
  }
  VkPipelineCacheCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  info.initialDataSize = data.size();
  info.pInitialData = data.empty() ? nullptr : data.data();
  const VkResult result = vkCreatePipelineCache(ctx->device, &info, nullptr, &ctx->pipeline_cache);
  if (result != VK_SUCCESS) return fail_vk(result, "vkCreatePipelineCache");
  return RILL_OK;
}

void pipeline_cache_close(rill_backend_context* ctx) {
  if (ctx->pipeline_cache == VK_NULL_HANDLE) return;
  size_t size = 0;
  std::vector<char> data;
  VkResult result = vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size, nullptr);
  if (result == VK_SUCCESS) {
    data.resize(size);
    result = vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size, data.data());
  }
  vkDestroyPipelineCache(ctx->device, ctx->pipeline_cache, nullptr);
  ctx->pipeline_cache = VK_NULL_HANDLE;
  if (result != VK_SUCCESS || ctx->lost) return;
  /* Written beside the target and renamed over it, so that a reader (another
     process starting) never sees half a file. */
  const std::string temporary = ctx->pipeline_cache_path + ".tmp";
  std::string problem = "cannot create " + temporary;
  bool written = false;
  if (std::FILE* file = rill::platform::open_file(temporary, "wb")) {
    written = std::fwrite(data.data(), 1, size, file) == size;
    written = std::fclose(file) == 0 && written;
    problem = "cannot write " + temporary;
  }
  if (!written || !rill::platform::replace_file(temporary, ctx->pipeline_cache_path, problem)) {
    rill::platform::remove_file(temporary);
    log_message(RILL_LOG_WARNING, "pipeline cache " + ctx->pipeline_cache_path + " could not be written: " + problem);
  }
}

}  // namespace rill_vk
