// The capability query. The CPU backend runs every op at every size memory
// allows, and gemm and get_rows with weights of every block format, so it
// refuses only dtypes and ops it does not know.
#include "cpu_internal.h"

namespace rill::cpu {

rill_status supports(rill_backend_context* ctx, const rill_backend_op_desc* desc) {
  (void)ctx;
  if (desc == nullptr || !RILL_STRUCT_HAS(rill_backend_op_desc, desc, dtype)) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, "cpu: supports: desc must hold at least op and dtype");
  }
  const int32_t op_value = static_cast<int32_t>(desc->op);
  if (op_value < RILL_BACKEND_OP_RESIDUAL_ADD || op_value > RILL_BACKEND_OP_CLAMP) {
    return fail(RILL_ERROR_UNSUPPORTED, "cpu: supports: op " + std::to_string(op_value) + " is not one this backend knows");
  }
  if (desc->dtype != RILL_DTYPE_F32 && desc->dtype != RILL_DTYPE_F16 && desc->dtype != RILL_DTYPE_BF16) {
    return fail(RILL_ERROR_DTYPE, std::string("cpu: ") + rill_backend_op_name(desc->op) +
                                      ": dtype must be f32, f16 or bf16, given " +
                                      std::to_string(static_cast<int32_t>(desc->dtype)));
  }
  if (RILL_STRUCT_HAS(rill_backend_op_desc, desc, weight_dtype) &&
      (desc->op == RILL_BACKEND_OP_GEMM || desc->op == RILL_BACKEND_OP_GET_ROWS) &&
      rill_backend_block_elements(desc->weight_dtype) == 0) {
    return fail(RILL_ERROR_DTYPE, std::string("cpu: ") + rill_backend_op_name(desc->op) +
                                      ": weight_dtype must be an element or block dtype, given " +
                                      std::to_string(static_cast<int32_t>(desc->weight_dtype)));
  }
  return RILL_OK;
}

}  // namespace rill::cpu
