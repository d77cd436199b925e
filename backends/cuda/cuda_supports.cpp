/* The capability query: what this backend can run, from the same limit checks
   the ops make when they run. */
#include "cuda_backend.h"

rill_status rill_cuda_supports(rill_backend_context* ctx, const rill_backend_op_desc* desc) {
  (void)ctx;  // the limits are the same on every device this build runs on
  if (!desc || !RILL_STRUCT_HAS(rill_backend_op_desc, desc, dtype)) {
    return rill_cuda_fail(RILL_ERROR_INVALID_ARGUMENT, "cuda: supports: desc must hold at least op and dtype");
  }
  const int32_t op_value = static_cast<int32_t>(desc->op);
  if (op_value < RILL_BACKEND_OP_RESIDUAL_ADD || op_value > RILL_BACKEND_OP_CLAMP) {
    return rill_cuda_fail(RILL_ERROR_UNSUPPORTED,
                          "cuda: supports: op " + std::to_string(op_value) + " is not one this backend knows");
  }
  const char* op = rill_backend_op_name(desc->op);
  if (desc->dtype != RILL_DTYPE_F32 && desc->dtype != RILL_DTYPE_F16 && desc->dtype != RILL_DTYPE_BF16) {
    return rill_cuda_fail(RILL_ERROR_DTYPE, std::string("cuda: ") + op + ": dtype must be f32, f16 or bf16, given " +
                                                std::to_string(static_cast<int32_t>(desc->dtype)));
  }
  // gemm's w and get_rows' table may have every block dtype (cuda_quant.cu);
  // no other op has a weight of its own dtype.
  if (RILL_STRUCT_HAS(rill_backend_op_desc, desc, weight_dtype) && rill_backend_dtype_is_block(desc->weight_dtype) &&
      desc->op != RILL_BACKEND_OP_GEMM && desc->op != RILL_BACKEND_OP_GET_ROWS) {
    return rill_cuda_fail(RILL_ERROR_UNSUPPORTED, std::string("cuda: ") + op + ": weights of dtype " +
                                                      rill_backend_dtype_name(desc->weight_dtype) +
                                                      " (a block format) are taken only by gemm and get_rows");
  }
  switch (desc->op) {
    case RILL_BACKEND_OP_RESIDUAL_ADD:
    case RILL_BACKEND_OP_RMS_NORM:
    case RILL_BACKEND_OP_LAYER_NORM:
    case RILL_BACKEND_OP_FUSED_ADD_RMS_NORM:
    case RILL_BACKEND_OP_FUSED_ADD_LAYER_NORM:
      return RILL_STRUCT_HAS(rill_backend_op_desc, desc, cols) ? rill_cuda_check_norm_cols(op, desc->cols) : RILL_OK;
    case RILL_BACKEND_OP_ATTENTION:
      if (!RILL_STRUCT_HAS(rill_backend_op_desc, desc, head_dim)) return RILL_OK;
      return rill_cuda_check_attention(desc->head_dim, desc->batch * desc->rows * desc->heads);
    default:
      return RILL_OK;
  }
}
