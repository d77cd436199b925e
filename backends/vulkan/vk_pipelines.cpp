/* The embedded SPIR-V shader table, compute pipelines (created on first use
   per context), descriptor binding and dispatch recording. */
#include <cstring>
#include <vector>

#include "vk_internal.h"
#include "vk_shader_table.inc" /* generated: kShaders[] with every variant */

namespace rill_vk {

namespace {

const ShaderBinary* find_shader(const std::string& name) {
  for (const ShaderBinary& shader : kShaders) {
    if (name == shader.name) return &shader;
  }
  return nullptr;
}

/* The pipeline of shader name with its specialization constants 0, 1, ...
   set to constants, made on first use. */
rill_status get_pipeline(rill_backend_context* ctx, const std::string& name, const std::vector<uint32_t>& constants,
                         VkPipeline* out_pipeline) {
  std::string key = name;
  for (uint32_t constant : constants) key += "#" + std::to_string(constant);
  auto found = ctx->pipelines.find(key);
  if (found != ctx->pipelines.end()) {
    *out_pipeline = found->second;
    return RILL_OK;
  }
  const ShaderBinary* shader = find_shader(name);
  if (shader == nullptr) return fail(RILL_ERROR_INTERNAL, "Vulkan: no embedded shader variant named " + name);
  const uint32_t* code = shader->code;
  size_t words = shader->bytes / 4;
  /* The f16 variants get the float-controls modes the device supports. */
  std::vector<uint32_t> with_modes;
  const F16FloatControls modes = ctx->f16_float_controls;
  if ((modes.round_to_nearest_even || modes.denorm_preserve) && declares_float16(code, words)) {
    with_modes = with_f16_float_controls(code, words, modes);
    if (with_modes.empty()) {
      return fail(RILL_ERROR_INTERNAL, "Vulkan: shader " + name + " is not SPIR-V 1.4 laid out for float controls");
    }
    code = with_modes.data();
    words = with_modes.size();
  }

  VkShaderModuleCreateInfo module_info{};
  module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  module_info.codeSize = words * 4;
  module_info.pCode = code;
  VkShaderModule module = VK_NULL_HANDLE;
  VkResult result = vkCreateShaderModule(ctx->device, &module_info, nullptr, &module);
  if (result != VK_SUCCESS) return fail_context(ctx, result, ("vkCreateShaderModule for " + name).c_str());

  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  std::vector<VkSpecializationMapEntry> entries;
  for (uint32_t id = 0; id < constants.size(); ++id) entries.push_back({id, id * 4u, 4u});
  const VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(),
                                            constants.size() * 4u, constants.data()};
  if (!constants.empty()) info.stage.pSpecializationInfo = &specialization;
  info.layout = ctx->pipeline_layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  result = vkCreateComputePipelines(ctx->device, ctx->pipeline_cache, 1, &info, nullptr, &pipeline);
  vkDestroyShaderModule(ctx->device, module, nullptr);
  if (result != VK_SUCCESS) return fail_context(ctx, result, ("vkCreateComputePipelines for " + name).c_str());
  ctx->pipelines.emplace(key, pipeline);
  *out_pipeline = pipeline;
  return RILL_OK;
}

}  // namespace

rill_status bind_range(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, uint64_t count,
                       uint32_t elem_size, bool write, BoundRange* out) {
  const uint64_t alignment = ctx->caps.limits.minStorageBufferOffsetAlignment;
  const uint64_t bytes = count * elem_size;
  BoundRange range;
  range.buffer = buffer->buffer;
  range.bind_offset = alignment > 0 ? offset / alignment * alignment : offset;
  range.bind_range = offset + bytes - range.bind_offset;
  range.element_offset = static_cast<uint32_t>((offset - range.bind_offset) / elem_size);
  range.access_begin = offset;
  range.access_end = offset + bytes;
  range.write = write;
  if (range.bind_range > ctx->caps.limits.maxStorageBufferRange) {
    return fail(RILL_ERROR_UNSUPPORTED, "Vulkan: a tensor of " + std::to_string(bytes) +
                                            " bytes exceeds this device's maxStorageBufferRange of " +
                                            std::to_string(ctx->caps.limits.maxStorageBufferRange) + " bytes");
  }
  *out = range;
  return RILL_OK;
}

BoundRange placeholder_range(rill_backend_context* ctx) {
  BoundRange range;
  range.buffer = ctx->placeholder->buffer;
  range.bind_range = ctx->placeholder->size;
  range.tracked = false;
  return range;
}

rill_status create_pipeline_layout(rill_backend_context* ctx) {
  VkDescriptorSetLayoutBinding bindings[kBindingCount]{};
  for (uint32_t i = 0; i < kBindingCount; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info{};
  set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  set_info.bindingCount = kBindingCount;
  set_info.pBindings = bindings;
  VkResult result = vkCreateDescriptorSetLayout(ctx->device, &set_info, nullptr, &ctx->set_layout);
  if (result != VK_SUCCESS) return fail_vk(result, "vkCreateDescriptorSetLayout");

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo layout_info{};
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &ctx->set_layout;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &push;
  result = vkCreatePipelineLayout(ctx->device, &layout_info, nullptr, &ctx->pipeline_layout);
  if (result != VK_SUCCESS) return fail_vk(result, "vkCreatePipelineLayout");
  return RILL_OK;
}

void destroy_pipelines(rill_backend_context* ctx) {
  for (auto& entry : ctx->pipelines) vkDestroyPipeline(ctx->device, entry.second, nullptr);
  ctx->pipelines.clear();
  if (ctx->pipeline_layout != VK_NULL_HANDLE) vkDestroyPipelineLayout(ctx->device, ctx->pipeline_layout, nullptr);
  if (ctx->set_layout != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(ctx->device, ctx->set_layout, nullptr);
  ctx->pipeline_layout = VK_NULL_HANDLE;
  ctx->set_layout = VK_NULL_HANDLE;
}

rill_status record_dispatch(rill_backend_context* ctx, const std::string& shader, const BoundRange* ranges,
                            const void* push, uint32_t push_size, uint32_t groups_x, uint32_t groups_y,
                            uint32_t constant0) {
  return record_dispatch_specialized(ctx, shader, constant0 == 0 ? std::vector<uint32_t>{}
                                                                 : std::vector<uint32_t>{constant0},
                                     ranges, push, push_size, groups_x, groups_y);
}

rill_status record_dispatch_specialized(rill_backend_context* ctx, const std::string& shader,
                                        const std::vector<uint32_t>& constants, const BoundRange* ranges,
                                        const void* push, uint32_t push_size, uint32_t groups_x,
                                        uint32_t groups_y) {
  VkPipeline pipeline = VK_NULL_HANDLE;
  rill_status status = get_pipeline(ctx, shader, constants, &pipeline);
  if (status != RILL_OK) return status;
  Frame* frame = nullptr;
  status = begin_recording(ctx, &frame);
  if (status != RILL_OK) return status;
  if (frame->descriptor_sets == kMaxSetsPerFrame) {
    /* A full command buffer is a submission point too. */
    status = flush(ctx);
    if (status == RILL_OK) status = begin_recording(ctx, &frame);
    if (status != RILL_OK) return status;
  }

  VkDescriptorSetAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  alloc.descriptorPool = frame->descriptor_pool;
  alloc.descriptorSetCount = 1;
  alloc.pSetLayouts = &ctx->set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkResult result = vkAllocateDescriptorSets(ctx->device, &alloc, &set);
  if (result != VK_SUCCESS) return fail_context(ctx, result, "vkAllocateDescriptorSets");
  ++frame->descriptor_sets;

  VkDescriptorBufferInfo infos[kBindingCount]{};
  VkWriteDescriptorSet writes[kBindingCount]{};
  Access accesses[kBindingCount]{};
  size_t access_count = 0;
  for (uint32_t i = 0; i < kBindingCount; ++i) {
    infos[i] = {ranges[i].buffer, ranges[i].bind_offset, ranges[i].bind_range};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
    if (ranges[i].tracked) {
      accesses[access_count++] = {ranges[i].buffer, ranges[i].access_begin, ranges[i].access_end, ranges[i].write};
    }
  }
  vkUpdateDescriptorSets(ctx->device, kBindingCount, writes, 0, nullptr);
  track_accesses(ctx, frame, accesses, access_count);

  vkCmdBindPipeline(frame->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(frame->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, ctx->pipeline_layout, 0, 1, &set, 0, nullptr);
  vkCmdPushConstants(frame->cmd, ctx->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
  vkCmdDispatch(frame->cmd, groups_x, groups_y, 1);
  return RILL_OK;
}

}  // namespace rill_vk
