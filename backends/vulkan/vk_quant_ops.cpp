/* The operators on weights of any dtype: get_rows (embedding lookups from
   tables of every dtype, block tables dequantized) and gemm with block-format
   weights (interface version 4). Decode (few rows) runs gemm_q.comp, which
   dequantizes while it streams each weight row; prefill dequantizes w into
   a transient buffer of a's dtype with get_rows.comp and runs the element
   GEMM on it. Both shaders read weights through common/weights.glsl. */
#include "vk_internal.h"

namespace rill_vk {

namespace {

/* Push-constant blocks; each mirrors the Params block of its shader. */
struct GetRowsParams {
  uint32_t table_offset, out_offset, ids_offset, has_ids, count, cols, table_row_bytes;
};
struct BlockGemmParams {
  GemmParams gemm;
  uint32_t w_row_bytes;
};
static_assert(sizeof(BlockGemmParams) <= kPushConstantBytes, "push constants exceed the pipeline layout");

constexpr uint32_t kGetRowsGroupSize = 256; /* local_size_x of get_rows.comp */
/* WEIGHT_RUN of common/weights.glsl: the elements one invocation of
   get_rows.comp dequantizes together (block tables) or copies (others). */
uint64_t weight_run(rill_dtype dtype) { return rill_backend_dtype_is_block(dtype) ? 8 : 1; }

uint64_t row_bytes(rill_dtype dtype, uint64_t cols) {
  return cols / rill_backend_block_elements(dtype) * rill_backend_block_bytes(dtype);
}

/* Records get_rows.comp: rows ids[0..count) of table (every row when ids is
   NULL) into out, converted to out's dtype. */
rill_status record_get_rows(rill_backend_context* ctx, const rill_backend_tensor* table, const int32_t* ids,
                            uint64_t count, const rill_backend_tensor* out) {
  const uint64_t cols = static_cast<uint64_t>(table->shape[1]);
  BoundRange ranges[kBindingCount];
  ranges[0] = ranges[2] = ranges[4] = placeholder_range(ctx);
  rill_status status = bind_weights(ctx, table, static_cast<uint64_t>(table->shape[0]), &ranges[1]);
  if (status != RILL_OK) return status;
  if ((status = bind_tensor(ctx, out, true, &ranges[3])) != RILL_OK) return status;
  if (ids != nullptr && (status = upload_to_staging(ctx, ids, count * sizeof(int32_t), &ranges[0])) != RILL_OK) {
    return status;
  }
  GetRowsParams params{ranges[1].element_offset,
                       ranges[3].element_offset,
                       ranges[0].element_offset,
                       ids != nullptr ? 1u : 0u,
                       static_cast<uint32_t>(count),
                       static_cast<uint32_t>(cols),
                       static_cast<uint32_t>(row_bytes(table->dtype, cols))};
  const std::string shader =
      std::string("get_rows_") + rill_backend_dtype_name(table->dtype) + "_" + dtype_suffix(out->dtype);
  return record_dispatch(ctx, shader, ranges, &params, sizeof params,
                         groups_for(ctx, count * cols / weight_run(table->dtype), kGetRowsGroupSize), 1);
}

}  // namespace

/* The range starts and ends on a 4-byte boundary (device buffers are whole
   words long), and element_offset is the table's first byte inside it. */
rill_status bind_weights(rill_backend_context* ctx, const rill_backend_tensor* t, uint64_t rows, BoundRange* out) {
  const uint64_t begin = t->offset / 4 * 4;
  const uint64_t end = (t->offset + rows * row_bytes(t->dtype, static_cast<uint64_t>(t->shape[1])) + 3) / 4 * 4;
  const rill_status status = bind_range(ctx, t->buffer, begin, end - begin, 1, false, out);
  if (status != RILL_OK) return status;
  const uint64_t below_word = out->bind_offset % 4; /* only where the offset alignment is under 4 */
  out->bind_offset -= below_word;
  out->bind_range += below_word;
  out->element_offset += static_cast<uint32_t>(t->offset - begin + below_word);
  return RILL_OK;
}

rill_status gemm_block_weights(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                               const rill_backend_tensor* bias, float alpha, float beta,
                               const rill_backend_tensor* out) {
  const uint64_t k = static_cast<uint64_t>(a->shape[a->ndim - 1]);
  const uint64_t rows = tensor_numel(a) / k;
  const uint64_t n = static_cast<uint64_t>(w->shape[0]);
  rill_status status = RILL_OK;
  if (rows > static_cast<uint64_t>(kGemmRowsMax)) {
    /* Prefill: w dequantized once, then the element GEMM. The transient
       buffer is freed behind the frame that uses it (buffer_free defers). */
    if ((status = check_gemm_n(rows, n)) != RILL_OK) return status;
    rill_backend_tensor dense{};
    dense.dtype = a->dtype;
    dense.ndim = 2;
    dense.shape[0] = static_cast<int64_t>(n);
    dense.shape[1] = static_cast<int64_t>(k);
    if ((status = buffer_alloc(ctx, n * k * dtype_size(a->dtype), &dense.buffer)) != RILL_OK) return status;
    status = record_get_rows(ctx, w, nullptr, n, &dense);
    if (status == RILL_OK) status = gemm_elements(ctx, a, &dense, bias, alpha, beta, out);
    buffer_free(ctx, dense.buffer);
    return status;
  }
  BoundRange ranges[kBindingCount];
  BlockGemmParams params{};
  if ((status = bind_gemm_operands(ctx, a, w, bias, alpha, beta, out, ranges, &params.gemm)) != RILL_OK) {
    return status;
  }
  params.w_row_bytes = static_cast<uint32_t>(row_bytes(w->dtype, k));
  return record_gemv(ctx, std::string("gemm_q_") + rill_backend_dtype_name(w->dtype) + "_" + dtype_suffix(a->dtype),
                     ranges, &params, sizeof params, params.gemm);
}

rill_status get_rows(rill_backend_context* ctx, const rill_backend_tensor* table, const int32_t* ids, uint64_t count,
                     const rill_backend_tensor* out) {
  const rill_status status = prepare_op(ctx, "get_rows", out->dtype);
  if (status != RILL_OK || count == 0) return status;
  return record_get_rows(ctx, table, ids, count, out);
}

}  // namespace rill_vk
