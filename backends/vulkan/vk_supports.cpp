/* The capability query: what this device can run, from the same limit checks
   the ops make when they run. */
#include <algorithm>

#include "vk_internal.h"

namespace rill_vk {

namespace {

bool takes_weights(const rill_backend_op_desc* desc) {
  return desc->op == RILL_BACKEND_OP_GEMM || desc->op == RILL_BACKEND_OP_GET_ROWS;
}

/* gemm's w dtype or get_rows' table dtype (dtype for a desc from before
   version 4); dtype for every other op. */
rill_dtype weight_dtype(const rill_backend_op_desc* desc) {
  return takes_weights(desc) && RILL_STRUCT_HAS(rill_backend_op_desc, desc, weight_dtype) ? desc->weight_dtype
                                                                                          : desc->dtype;
}

/* The elements of desc's largest operand, by the dimensions its op reads. */
uint64_t largest_operand(const rill_backend_op_desc* desc) {
  const auto dim = [](int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0u; };
  const uint64_t rows = dim(desc->rows), cols = dim(desc->cols);
  switch (desc->op) {
    case RILL_BACKEND_OP_GEMM: {
      const uint64_t n = RILL_STRUCT_HAS(rill_backend_op_desc, desc, n) ? dim(desc->n) : 0;
      return std::max({rows * cols, n * cols, rows * n});
    }
    case RILL_BACKEND_OP_ROPE:
    case RILL_BACKEND_OP_ROPE_FREQS:
      if (!RILL_STRUCT_HAS(rill_backend_op_desc, desc, head_dim)) return 0;
      return rows * dim(desc->heads) * dim(desc->head_dim);
    case RILL_BACKEND_OP_ATTENTION: {
      if (!RILL_STRUCT_HAS(rill_backend_op_desc, desc, head_dim)) return 0;
      const uint64_t batch = dim(desc->batch), head_dim = dim(desc->head_dim);
      return std::max(batch * rows * dim(desc->heads) * head_dim,
                      batch * dim(desc->kv_length) * dim(desc->kv_heads) * head_dim);
    }
    default:
      return rows * cols;
  }
}

/* The bytes of desc's largest operand, by the dimensions its op reads. A
   gemm on block weights with more rows than kGemmRowsMax dequantizes them
   into a's dtype first, so w counts as N x K elements of it either way. */
uint64_t largest_operand_bytes(const rill_backend_op_desc* desc) {
  const auto dim = [](int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0u; };
  const uint64_t rows = dim(desc->rows), cols = dim(desc->cols);
  if (desc->op == RILL_BACKEND_OP_GET_ROWS) {
    const rill_dtype table = weight_dtype(desc);
    const uint64_t table_bytes =
        dim(desc->n) * (cols / rill_backend_block_elements(table)) * rill_backend_block_bytes(table);
    return std::max(rows * cols * dtype_size(desc->dtype), table_bytes);
  }
  return largest_operand(desc) * dtype_size(desc->dtype);
}

}  // namespace

rill_status supports(rill_backend_context* ctx, const rill_backend_op_desc* desc) {
  if (desc == nullptr || !RILL_STRUCT_HAS(rill_backend_op_desc, desc, dtype)) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, "Vulkan: supports: desc must hold at least op and dtype");
  }
  const char* op = rill_backend_op_name(desc->op);
  const int32_t op_value = static_cast<int32_t>(desc->op);
  if (op_value < RILL_BACKEND_OP_RESIDUAL_ADD || op_value > RILL_BACKEND_OP_CLAMP) {
    return fail(RILL_ERROR_UNSUPPORTED, "Vulkan: supports: op " + std::to_string(op_value) +
                                            " is not one this backend knows");
  }
  rill_status status = check_dtype(ctx, op, desc->dtype);
  if (status != RILL_OK) return status;
  /* Block-format weights: gemm's w and get_rows' table, any of the seven
     formats (vk_quant_ops.cpp); element weights are in the activations' dtype. */
  const rill_dtype weights = weight_dtype(desc);
  if (weights != desc->dtype && !rill_backend_dtype_is_block(weights)) {
    return fail(RILL_ERROR_UNSUPPORTED, std::string("Vulkan: ") + op + ": weights of dtype " +
                                            rill_backend_dtype_name(weights) + " with " +
                                            dtype_suffix(desc->dtype) +
                                            " activations are not supported: they must be of the activations' "
                                            "dtype or a block format (q8_0, q4_0, q5_0, q5_1, q4_k, q5_k, q6_k)");
  }
  /* Each operand is bound as one storage buffer range (bind_range). */
  const uint64_t bytes = largest_operand_bytes(desc);
  if (bytes > ctx->caps.limits.maxStorageBufferRange) {
    return fail(RILL_ERROR_UNSUPPORTED, std::string("Vulkan: ") + op + ": the largest operand must be at most " +
                                            "maxStorageBufferRange = " +
                                            std::to_string(ctx->caps.limits.maxStorageBufferRange) +
                                            " bytes on this device, given " + std::to_string(bytes) + " bytes");
  }
  if (desc->op == RILL_BACKEND_OP_GEMM && RILL_STRUCT_HAS(rill_backend_op_desc, desc, n)) {
    status = check_gemm_n(static_cast<uint64_t>(desc->rows), static_cast<uint64_t>(desc->n));
  }
  if (desc->op == RILL_BACKEND_OP_ATTENTION && RILL_STRUCT_HAS(rill_backend_op_desc, desc, head_dim)) {
    status = check_attention_head_dim(desc->head_dim);
  }
  return status;
}

}  // namespace rill_vk
