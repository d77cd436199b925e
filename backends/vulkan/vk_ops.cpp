/* The operators: each one binds its operands, fills the push constants of its
   shader (gemm.comp, gemm_rows.comp, norm.comp, residual_add.comp) and records
   one dispatch; gemm on block-format weights goes to vk_quant_ops.cpp. The
   runtime has validated shapes and dtypes already. */
#include <algorithm>

#include "vk_internal.h"

namespace rill_vk {

namespace {

/* Push-constant blocks; each mirrors the Params block of its shader. */
struct ResidualParams {
  uint32_t residual_offset, update_offset, gain_offset, has_gain, count, cols;
  float residual_scale, update_scale;
};
/* gemm.comp -DSPLIT_K and gemm_split_reduce.comp. */
struct SplitGemmParams {
  GemmParams gemm;
  uint32_t splits, k_chunk;
};
struct NormParams {
  uint32_t x_offset, out_offset, weight_offset, bias_offset, gain_offset, flags, rows, cols;
  float eps, residual_scale, update_scale;
};
static_assert(sizeof(NormParams) <= kPushConstantBytes, "push constants exceed the pipeline layout");
static_assert(sizeof(SplitGemmParams) <= kPushConstantBytes, "push constants exceed the pipeline layout");

constexpr uint32_t kNormHasWeight = 1, kNormHasBias = 2, kNormHasGain = 4;
constexpr uint32_t kElementwiseGroupSize = 256;
constexpr uint32_t kGemvColumnsPerGroup = 4;  /* COLS_PER_GROUP of common/gemv.glsl */
constexpr uint32_t kGemvGroupSize = 128;      /* its WORKGROUP_SIZE (CMakeLists.txt) */
constexpr uint32_t kGemvSubgroupSlots = 32;   /* its GEMV_SUBGROUP_SLOTS */
constexpr uint32_t kSplitReduceGroupSize = 256; /* local_size_x of gemm_split_reduce.comp */

uint64_t last_dim(const rill_backend_tensor* t) { return static_cast<uint64_t>(t->shape[t->ndim - 1]); }

rill_status vk_residual_add(rill_backend_context* ctx, const rill_backend_tensor* residual,
                            const rill_backend_tensor* update, const rill_backend_tensor* gain, float residual_scale,
                            float update_scale) {
  rill_status status = prepare_op(ctx, "residual_add", residual->dtype);
  if (status != RILL_OK) return status;
  BoundRange ranges[kBindingCount];
  ranges[3] = ranges[4] = placeholder_range(ctx);
  if ((status = bind_tensor(ctx, residual, true, &ranges[0])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, update, false, &ranges[1])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, gain, false, &ranges[2])) != RILL_OK) return status;
  ResidualParams params{ranges[0].element_offset, ranges[1].element_offset, ranges[2].element_offset,
                        gain != nullptr ? 1u : 0u, static_cast<uint32_t>(tensor_numel(residual)),
                        static_cast<uint32_t>(last_dim(residual)), residual_scale, update_scale};
  return record_dispatch(ctx, std::string("residual_add_") + dtype_suffix(residual->dtype), ranges, &params,
                         sizeof params, groups_for(ctx, tensor_numel(residual), kElementwiseGroupSize), 1);
}

/* Shared by the four norms. Plain: x -> out. Fused: residual is updated from
   x and normalized into x. */
rill_status record_norm(rill_backend_context* ctx, const char* op, bool layer, const rill_backend_tensor* x,
                        const rill_backend_tensor* out_or_residual, const rill_backend_tensor* gain,
                        const rill_backend_tensor* weight, const rill_backend_tensor* bias, float eps,
                        float residual_scale, float update_scale, bool fused) {
  rill_status status = prepare_op(ctx, op, x->dtype);
  if (status != RILL_OK) return status;
  BoundRange ranges[kBindingCount];
  if ((status = bind_tensor(ctx, x, fused, &ranges[0])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, out_or_residual, true, &ranges[1])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, weight, false, &ranges[2])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, bias, false, &ranges[3])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, gain, false, &ranges[4])) != RILL_OK) return status;
  uint64_t cols = last_dim(x);
  uint64_t rows = tensor_numel(x) / cols;
  uint32_t flags = (weight != nullptr ? kNormHasWeight : 0) | (bias != nullptr ? kNormHasBias : 0) |
                   (gain != nullptr ? kNormHasGain : 0);
  NormParams params{ranges[0].element_offset,
                    ranges[1].element_offset,
                    ranges[2].element_offset,
                    ranges[3].element_offset,
                    ranges[4].element_offset,
                    flags,
                    static_cast<uint32_t>(rows),
                    static_cast<uint32_t>(cols),
                    eps,
                    residual_scale,
                    update_scale};
  std::string shader = std::string("norm_") + (layer ? "layer" : "rms") + (fused ? "_fused_" : "_") +
                       dtype_suffix(x->dtype) + reduction_suffix(ctx);
  return record_dispatch(ctx, shader, ranges, &params, sizeof params, groups_for(ctx, rows, 1), 1);
}

rill_status vk_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight,
                        float eps, const rill_backend_tensor* out) {
  return record_norm(ctx, "rms_norm", false, x, out, nullptr, weight, nullptr, eps, 1.0f, 1.0f, false);
}

rill_status vk_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight,
                          const rill_backend_tensor* bias, float eps, const rill_backend_tensor* out) {
  return record_norm(ctx, "layer_norm", true, x, out, nullptr, weight, bias, eps, 1.0f, 1.0f, false);
}

rill_status vk_fused_add_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                  const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                  const rill_backend_tensor* weight, float eps, float residual_scale,
                                  float update_scale) {
  return record_norm(ctx, "fused_add_rms_norm", false, x, residual, gain, weight, nullptr, eps, residual_scale,
                     update_scale, true);
}

rill_status vk_fused_add_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                    const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                    const rill_backend_tensor* weight, const rill_backend_tensor* bias, float eps,
                                    float residual_scale, float update_scale) {
  return record_norm(ctx, "fused_add_layer_norm", true, x, residual, gain, weight, bias, eps, residual_scale,
                     update_scale, true);
}

/* The tiled GEMM (gemm.comp) as plan says. Split-K: gemm.comp -DSPLIT_K
   writes each run's sums to a transient f32 buffer (freed behind the frame
   that uses it), gemm_split_reduce.comp adds them and writes out. */
rill_status gemm_tiled(rill_backend_context* ctx, rill_dtype dtype, BoundRange* ranges, const GemmParams& gemm,
                       const GemmPlan& plan) {
  const std::string variant = std::string(plan.tile->name) + "_" + dtype_suffix(dtype);
  /* gemm.comp loops over the row tiles (y); the column tiles (x) and split-K
     runs are one grid, within kMaxGroupsPerDispatch by check_gemm_n and
     plan_gemm. */
  const uint32_t row_groups = groups_for(ctx, plan.row_tiles, 1);
  const uint32_t vec4 = plan.vec4 ? 1u : 0u; /* specialization constant 0 */
  if (plan.splits == 1) {
    return record_dispatch(ctx, "gemm_" + variant, ranges, &gemm, sizeof gemm, plan.column_tiles, row_groups, vec4);
  }
  const uint64_t outputs = uint64_t{gemm.rows} * gemm.n;
  rill_backend_buffer* partials = nullptr;
  rill_status status = buffer_alloc(ctx, plan.splits * outputs * sizeof(float), &partials);
  if (status != RILL_OK) return status;
  status = bind_range(ctx, partials, 0, plan.splits * outputs, sizeof(float), true, &ranges[4]);
  const SplitGemmParams params{gemm, plan.splits, plan.k_chunk};
  if (status == RILL_OK) {
    status = record_dispatch(ctx, "gemm_split_" + variant, ranges, &params, sizeof params,
                             plan.column_tiles * plan.splits, row_groups, vec4);
  }
  if (status == RILL_OK) {
    ranges[4].write = false;
    status = record_dispatch(ctx, std::string("gemm_split_reduce_") + dtype_suffix(dtype), ranges, &params,
                             sizeof params, groups_for(ctx, outputs, kSplitReduceGroupSize), 1);
  }
  buffer_free(ctx, partials);
  return status;
}

rill_status vk_gemm(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                    const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out) {
  const rill_status status = prepare_op(ctx, "gemm", a->dtype);
  if (status != RILL_OK) return status;
  if (rill_backend_dtype_is_block(w->dtype)) return gemm_block_weights(ctx, a, w, bias, alpha, beta, out);
  return gemm_elements(ctx, a, w, bias, alpha, beta, out);
}

}  // namespace

rill_status bind_gemm_operands(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                               const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out,
                               BoundRange* ranges, GemmParams* params) {
  rill_status status = RILL_OK;
  const uint64_t k = last_dim(a);
  const uint64_t rows = tensor_numel(a) / k;
  const uint64_t n = static_cast<uint64_t>(w->shape[0]);
  ranges[4] = placeholder_range(ctx);
  if ((status = bind_tensor(ctx, a, false, &ranges[0])) != RILL_OK) return status;
  status = rill_backend_dtype_is_block(w->dtype) ? bind_weights(ctx, w, n, &ranges[1])
                                                 : bind_tensor(ctx, w, false, &ranges[1]);
  if (status != RILL_OK) return status;
  if ((status = bind_tensor(ctx, bias, false, &ranges[2])) != RILL_OK) return status;
  if ((status = bind_tensor(ctx, out, true, &ranges[3])) != RILL_OK) return status;
  *params = GemmParams{ranges[0].element_offset,
                       ranges[1].element_offset,
                       ranges[2].element_offset,
                       ranges[3].element_offset,
                       static_cast<uint32_t>(rows),
                       static_cast<uint32_t>(n),
                       static_cast<uint32_t>(k),
                       bias != nullptr ? 1u : 0u,
                       alpha,
                       beta};
  return RILL_OK;
}

rill_status gemm_elements(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                          const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out) {
  BoundRange ranges[kBindingCount];
  GemmParams params{};
  rill_status status = bind_gemm_operands(ctx, a, w, bias, alpha, beta, out, ranges, &params);
  if (status != RILL_OK) return status;
  if (params.rows <= static_cast<uint32_t>(kGemmRowsMax)) {
    /* Decode: stream each weight row once for all rows of a. */
    return record_gemv(ctx, std::string("gemm_rows_") + dtype_suffix(a->dtype), ranges, &params, sizeof params,
                       params);
  }
  if ((status = check_gemm_n(params.rows, params.n)) != RILL_OK) return status;
  if (coopmat_applies(ctx->coopmat_tile, a->dtype, params.rows, params.n, kGemmRowsMax, kMaxGroupsPerDispatch)) {
    return gemm_coopmat(ctx, ranges, params);
  }
  const bool rows_vec4 = ((params.a_offset | params.w_offset | params.k) & 3u) == 0u;
  const GemmPlan plan =
      plan_gemm(params.rows, params.n, params.k, dtype_size(a->dtype), rows_vec4, ctx->caps.gemm_limits);
  return gemm_tiled(ctx, a->dtype, ranges, params, plan);
}

rill_status record_gemv(rill_backend_context* ctx, const std::string& kernel, const BoundRange* ranges,
                        const void* push, uint32_t push_size, const GemmParams& params) {
  /* The subgroup reduction keeps a slot per subgroup, so it needs subgroups
     of at least kGemvGroupSize / kGemvSubgroupSlots invocations. */
  const bool subgroups = ctx->use_subgroups && ctx->caps.subgroup_size * kGemvSubgroupSlots >= kGemvGroupSize;
  return record_dispatch(ctx, kernel + (subgroups ? "_sg" : "_shared"), ranges, push, push_size,
                         groups_for(ctx, params.n, kGemvColumnsPerGroup), 1, params.rows);
}

uint64_t tensor_numel(const rill_backend_tensor* t) {
  uint64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= static_cast<uint64_t>(t->shape[i]);
  return n;
}

uint32_t dtype_size(rill_dtype dtype) { return dtype == RILL_DTYPE_F32 ? 4u : 2u; }

const char* dtype_suffix(rill_dtype dtype) {
  switch (dtype) {
    case RILL_DTYPE_F16: return "f16";
    case RILL_DTYPE_BF16: return "bf16";
    default: return "f32";
  }
}

rill_status check_dtype(rill_backend_context* ctx, const char* op, rill_dtype dtype) {
  if (dtype != RILL_DTYPE_F32 && dtype != RILL_DTYPE_F16 && dtype != RILL_DTYPE_BF16) {
    return fail(RILL_ERROR_DTYPE, std::string("Vulkan: ") + op + ": dtype must be f32, f16 or bf16, given " +
                                      std::to_string(static_cast<int32_t>(dtype)));
  }
  if (dtype != RILL_DTYPE_F32 && !ctx->caps.storage_16bit) {
    return fail(RILL_ERROR_UNSUPPORTED, std::string("Vulkan: ") + op + " in " + dtype_suffix(dtype) +
                                            " needs 16-bit storage buffers, which device \"" + ctx->caps.name +
                                            "\" does not support; use f32");
  }
  return RILL_OK;
}

rill_status check_gemm_n(uint64_t rows, uint64_t n) {
  /* Few rows take gemm_rows.comp, whose dispatches loop over any N. */
  const uint64_t max_n = uint64_t{kMaxGroupsPerDispatch} * kGemmTileNMin;
  if (rows > static_cast<uint64_t>(kGemmRowsMax) && n > max_n) {
    return fail(RILL_ERROR_UNSUPPORTED, "Vulkan: gemm: N (out features) must be at most " + std::to_string(max_n) +
                                            " with more than " + std::to_string(kGemmRowsMax) + " rows, given " +
                                            std::to_string(n));
  }
  return RILL_OK;
}

rill_status prepare_op(rill_backend_context* ctx, const char* op, rill_dtype dtype) {
  const rill_status status = check_usable(ctx);
  if (status != RILL_OK) return status;
  return check_dtype(ctx, op, dtype);
}

rill_status bind_tensor(rill_backend_context* ctx, const rill_backend_tensor* t, bool write, BoundRange* out) {
  if (t == nullptr) {
    *out = placeholder_range(ctx);
    return RILL_OK;
  }
  return bind_range(ctx, t->buffer, t->offset, tensor_numel(t), dtype_size(t->dtype), write, out);
}

uint32_t groups_for(const rill_backend_context* ctx, uint64_t work_items, uint64_t per_group) {
  return static_cast<uint32_t>(std::min<uint64_t>((work_items + per_group - 1) / per_group, ctx->max_groups));
}

std::string reduction_suffix(rill_backend_context* ctx) { return ctx->use_subgroups ? "_sg" : "_shared"; }

/* Entries run under guarded(), so that no C++ exception reaches the runtime. */
const rill_backend_ops g_ops = {
    /* .abi_version = */ RILL_BACKEND_ABI_VERSION,
    /* .struct_size = */ static_cast<uint32_t>(sizeof(rill_backend_ops)),
    /* .residual_add = */
    [](rill_backend_context* ctx, const rill_backend_tensor* residual, const rill_backend_tensor* update,
       const rill_backend_tensor* gain, float residual_scale, float update_scale) {
      return guarded("residual_add", vk_residual_add, ctx, residual, update, gain, residual_scale, update_scale);
    },
    /* .rms_norm = */
    [](rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight, float eps,
       const rill_backend_tensor* out) { return guarded("rms_norm", vk_rms_norm, ctx, x, weight, eps, out); },
    /* .layer_norm = */
    [](rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight,
       const rill_backend_tensor* bias, float eps, const rill_backend_tensor* out) {
      return guarded("layer_norm", vk_layer_norm, ctx, x, weight, bias, eps, out);
    },
    /* .fused_add_rms_norm = */
    [](rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* residual,
       const rill_backend_tensor* gain, const rill_backend_tensor* weight, float eps, float residual_scale,
       float update_scale) {
      return guarded("fused_add_rms_norm", vk_fused_add_rms_norm, ctx, x, residual, gain, weight, eps,
                     residual_scale, update_scale);
    },
    /* .fused_add_layer_norm = */
    [](rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* residual,
       const rill_backend_tensor* gain, const rill_backend_tensor* weight, const rill_backend_tensor* bias,
       float eps, float residual_scale, float update_scale) {
      return guarded("fused_add_layer_norm", vk_fused_add_layer_norm, ctx, x, residual, gain, weight, bias, eps,
                     residual_scale, update_scale);
    },
    /* .gemm = */
    [](rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
       const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out) {
      return guarded("gemm", vk_gemm, ctx, a, w, bias, alpha, beta, out);
    },
    /* .rope = */
    [](rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions, float theta,
       int32_t rotary_dim) { return guarded("rope", layer_rope, ctx, x, positions, theta, rotary_dim); },
    /* .attention = */
    [](rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
       const rill_backend_tensor* v, const int32_t* kv_lengths, float scale, const rill_backend_tensor* out) {
      return guarded("attention", layer_attention, ctx, q, k, v, kv_lengths, scale, out);
    },
    /* .activation = */
    [](rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x, const rill_backend_tensor* up,
       const rill_backend_tensor* out) { return guarded("activation", layer_activation, ctx, fn, x, up, out); },
    /* .supports = */
    [](rill_backend_context* ctx, const rill_backend_op_desc* desc) {
      return guarded("supports", rill_vk::supports, ctx, desc);
    },
    /* .attention_ex = */
    [](rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
       const rill_backend_tensor* v, const int32_t* kv_lengths, const rill_attention_params* params,
       const rill_backend_tensor* out) {
      return guarded("attention_ex", layer_attention_ex, ctx, q, k, v, kv_lengths, params, out);
    },
    /* .rope_freqs = */
    [](rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions, const float* inv_freq,
       float attention_factor, int32_t rotary_dim) {
      return guarded("rope_freqs", layer_rope_freqs, ctx, x, positions, inv_freq, attention_factor, rotary_dim);
    },
    /* .get_rows = */
    [](rill_backend_context* ctx, const rill_backend_tensor* table, const int32_t* ids, uint64_t count,
       const rill_backend_tensor* out) { return guarded("get_rows", rill_vk::get_rows, ctx, table, ids, count, out); },
    /* .clamp = */
    [](rill_backend_context* ctx, const rill_backend_tensor* x, float lo, float hi, const rill_backend_tensor* out) {
      return guarded("clamp", layer_clamp, ctx, x, lo, hi, out);
    },
    /* .wait_semaphore = */
    [](rill_backend_context* ctx, uint64_t semaphore, uint64_t value) {
      return guarded("wait_semaphore", wait_semaphore, ctx, semaphore, value);
    },
    /* .signal_semaphore = */
    [](rill_backend_context* ctx, uint64_t semaphore, uint64_t value) {
      return guarded("signal_semaphore", signal_semaphore, ctx, semaphore, value);
    },
    /* .shares_buffers = */
    [](rill_backend_context* ctx, rill_backend_context* other) {
      return guarded("shares_buffers", shares_buffers, ctx, other);
    },
    /* .buffer_wrap_host = */ nullptr,
};

}  // namespace rill_vk
