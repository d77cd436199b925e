/* The capability query: what this device can run, from the same limit checks
   the ops make when they run. */
#include "vk_internal.h"

namespace rill_vk {

rill_status supports(rill_backend_context* ctx, const rill_backend_op_desc* desc) {
  if (desc == nullptr || !RILL_STRUCT_HAS(rill_backend_op_desc, desc, dtype)) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, "Vulkan: supports: desc must hold at least op and dtype");
  }
  const char* op = rill_backend_op_name(desc->op);
  const int32_t op_value = static_cast<int32_t>(desc->op);
  if (op_value < RILL_BACKEND_OP_RESIDUAL_ADD || op_value > RILL_BACKEND_OP_ACTIVATION) {
    return fail(RILL_ERROR_UNSUPPORTED, "Vulkan: supports: op " + std::to_string(op_value) +
                                            " is not one this backend knows");
  }
  rill_status status = check_dtype(ctx, op, desc->dtype);
  if (status != RILL_OK) return status;
  if (desc->op == RILL_BACKEND_OP_GEMM && RILL_STRUCT_HAS(rill_backend_op_desc, desc, n)) {
    status = check_gemm_n(static_cast<uint64_t>(desc->rows), static_cast<uint64_t>(desc->n));
  }
  if (desc->op == RILL_BACKEND_OP_ATTENTION && RILL_STRUCT_HAS(rill_backend_op_desc, desc, head_dim)) {
    status = check_attention_head_dim(desc->head_dim);
  }
  return status;
}

}  // namespace rill_vk
