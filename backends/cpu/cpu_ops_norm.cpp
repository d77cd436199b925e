// Residual add, RMSNorm, LayerNorm and their fused forms: rows split across
// the context's threads, each row handled by the ISA's kernels.
#include "cpu_internal.h"
#include "cpu_kernels.h"

namespace rill::cpu {

namespace {

// Rows per chunk so that a chunk moves at least this many elements: below it
// the cost of handing work to another thread exceeds the work.
constexpr int64_t kElementsPerChunk = 16384;

int64_t row_grain(int64_t cols) { return cols >= kElementsPerChunk ? 1 : kElementsPerChunk / cols; }

// Outputs at least this large bypass the caches: they exceed the last-level
// cache (tens of MiB), so nothing reads them from there, and streaming stores
// save the read of each line that a normal store to it costs.
constexpr uint64_t kStreamOutBytes = 32ull << 20;

bool stream_out(const rill_backend_tensor* x, const rill_backend_tensor* out) {
  const uint64_t bytes = static_cast<uint64_t>(tensor_rows(out) * tensor_cols(out)) * dtype_bytes(out->dtype);
  return tensor_data(out) != tensor_data(x) && bytes >= kStreamOutBytes;
}

template <class Args, class Kernel>
void run_rows(rill_backend_context* ctx, const Args& args, int64_t rows, Kernel kernel) {
  ctx->pool.parallel_for(rows, row_grain(args.cols),
                         [&](int64_t begin, int64_t end, unsigned) { kernel(args, begin, end); });
}

}  // namespace

rill_status op_residual_add(rill_backend_context* ctx, const rill_backend_tensor* residual,
                            const rill_backend_tensor* update, const rill_backend_tensor* gain, float residual_scale,
                            float update_scale) {
  const ResidualAddArgs args = {residual->dtype,   tensor_cols(residual), tensor_data(residual), tensor_data(update),
                                tensor_data(gain), residual_scale,        update_scale};
  run_rows(ctx, args, tensor_rows(residual), kernels().residual_add);
  return RILL_OK;
}

rill_status op_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight,
                        float eps, const rill_backend_tensor* out) {
  const NormArgs args = {x->dtype,           tensor_cols(x), tensor_data(x),       tensor_data(out),
                         tensor_data(weight), nullptr,        eps,                  stream_out(x, out)};
  run_rows(ctx, args, tensor_rows(x), kernels().rms_norm);
  return RILL_OK;
}

rill_status op_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x, const rill_backend_tensor* weight,
                          const rill_backend_tensor* bias, float eps, const rill_backend_tensor* out) {
  const NormArgs args = {x->dtype,           tensor_cols(x),    tensor_data(x), tensor_data(out),
                         tensor_data(weight), tensor_data(bias), eps,            stream_out(x, out)};
  run_rows(ctx, args, tensor_rows(x), kernels().layer_norm);
  return RILL_OK;
}

rill_status op_fused_add_rms_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                  const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                  const rill_backend_tensor* weight, float eps, float residual_scale,
                                  float update_scale) {
  const FusedAddNormArgs args = {x->dtype,          tensor_cols(x),      tensor_data(x), tensor_data(residual),
                                 tensor_data(gain), tensor_data(weight), nullptr,        eps,
                                 residual_scale,    update_scale};
  run_rows(ctx, args, tensor_rows(x), kernels().fused_add_rms_norm);
  return RILL_OK;
}

rill_status op_fused_add_layer_norm(rill_backend_context* ctx, const rill_backend_tensor* x,
                                    const rill_backend_tensor* residual, const rill_backend_tensor* gain,
                                    const rill_backend_tensor* weight, const rill_backend_tensor* bias, float eps,
                                    float residual_scale, float update_scale) {
  const FusedAddNormArgs args = {x->dtype,          tensor_cols(x),      tensor_data(x),    tensor_data(residual),
                                 tensor_data(gain), tensor_data(weight), tensor_data(bias), eps,
                                 residual_scale,    update_scale};
  run_rows(ctx, args, tensor_rows(x), kernels().fused_add_layer_norm);
  return RILL_OK;
}

}  // namespace rill::cpu
