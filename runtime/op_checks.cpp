#include "op_checks.h"

#include <cmath>

#include "errors.h"

namespace rill {

rill_status OpChecks::failure(rill_status status, const std::string& text) const {
  return fail(status, std::string(function_) + ": " + text);
}

rill_status OpChecks::context() const {
  if (ctx_ == nullptr) return failure(RILL_ERROR_INVALID_ARGUMENT, "ctx: expected a context, got NULL");
  return RILL_OK;
}

rill_status OpChecks::operand(const rill_tensor* tensor, const char* name) const {
  if (tensor == nullptr) return failure(RILL_ERROR_INVALID_ARGUMENT, std::string(name) + ": expected a tensor, got NULL");
  return optional_operand(tensor, name);
}

rill_status OpChecks::optional_operand(const rill_tensor* tensor, const char* name) const {
  if (tensor == nullptr) return RILL_OK;
  RILL_CHECK(weight_operand(tensor, name));
  if (rill_dtype_size(tensor->dtype) == 0) {
    return failure(RILL_ERROR_DTYPE, std::string(name) + ": expected an f32, f16 or bf16 tensor, got a " +
                                         rill_dtype_name(tensor->dtype) +
                                         " tensor (a block format holds weights only: gemm's w, get_rows' table)");
  }
  return RILL_OK;
}

rill_status OpChecks::weight_operand(const rill_tensor* tensor, const char* name) const {
  if (tensor == nullptr) return failure(RILL_ERROR_INVALID_ARGUMENT, std::string(name) + ": expected a tensor, got NULL");
  if (tensor->context != ctx_) {
    return failure(RILL_ERROR_INVALID_ARGUMENT,
                   std::string(name) + ": expected a tensor of ctx, got a tensor of another context");
  }
  return RILL_OK;
}

rill_status OpChecks::same_dtype(const rill_tensor* tensor, const char* name, const rill_tensor& reference,
                                 const char* reference_name) const {
  if (tensor == nullptr || tensor->dtype == reference.dtype) return RILL_OK;
  return failure(RILL_ERROR_DTYPE, std::string(name) + ": expected dtype " + rill_dtype_name(reference.dtype) +
                                       " (the dtype of " + reference_name + "), got " + rill_dtype_name(tensor->dtype));
}

rill_status OpChecks::same_dtype(std::initializer_list<Named> tensors, const rill_tensor& reference,
                                 const char* reference_name) const {
  for (const Named& operand : tensors) RILL_CHECK(same_dtype(operand.tensor, operand.name, reference, reference_name));
  return RILL_OK;
}

rill_status OpChecks::same_shape(const rill_tensor& tensor, const char* name, const rill_tensor& reference,
                                 const char* reference_name) const {
  bool same = tensor.ndim == reference.ndim;
  for (int32_t i = 0; same && i < tensor.ndim; ++i) same = tensor.shape[i] == reference.shape[i];
  if (same) return RILL_OK;
  return failure(RILL_ERROR_SHAPE, std::string(name) + ": expected shape " + shape_text(reference) + " (the shape of " +
                                       reference_name + "), got " + shape_text(tensor));
}

rill_status OpChecks::vector(const rill_tensor* tensor, const char* name, int64_t length, const char* why) const {
  if (tensor == nullptr || (tensor->ndim == 1 && tensor->shape[0] == length)) return RILL_OK;
  return failure(RILL_ERROR_SHAPE, std::string(name) + ": expected shape [" + std::to_string(length) + "] (" + why +
                                       "), got " + shape_text(*tensor));
}

rill_status OpChecks::distinct(const rill_tensor* a, const char* a_name, const rill_tensor* b,
                               const char* b_name) const {
  if (a == nullptr || a != b) return RILL_OK;
  return failure(RILL_ERROR_INVALID_ARGUMENT,
                 std::string(a_name) + ": expected a tensor other than " + b_name + ", got the same tensor");
}

rill_status OpChecks::finite(float value, const char* name) const {
  if (std::isfinite(value)) return RILL_OK;
  return failure(RILL_ERROR_INVALID_ARGUMENT, std::string(name) + ": expected a finite value, got " + std::to_string(value));
}

rill_status OpChecks::positive(float value, const char* name) const {
  if (std::isfinite(value) && value > 0.0f) return RILL_OK;
  return failure(RILL_ERROR_INVALID_ARGUMENT,
                 std::string(name) + ": expected a finite value > 0, got " + std::to_string(value));
}

rill_status OpChecks::array(const void* values, const char* name) const {
  if (values != nullptr) return RILL_OK;
  return failure(RILL_ERROR_INVALID_ARGUMENT, std::string(name) + ": expected an array, got NULL");
}

rill_status OpChecks::non_negative(const int32_t* values, size_t count, const char* name) const {
  for (size_t i = 0; i < count; ++i) {
    if (values[i] < 0) {
      return failure(RILL_ERROR_INVALID_ARGUMENT, std::string(name) + "[" + std::to_string(i) +
                                                      "]: expected >= 0, got " + std::to_string(values[i]));
    }
  }
  return RILL_OK;
}

rill_status OpChecks::epsilon(float eps) const {
  if (std::isfinite(eps) && eps >= 0.0f) return RILL_OK;
  return failure(RILL_ERROR_INVALID_ARGUMENT, "eps: expected a finite value >= 0, got " + std::to_string(eps));
}

// A version 3 backend would read the blocks as floats.
rill_status check_block_weights(const char* function, const OpChecks& check, const rill_context& ctx,
                                const rill_backend_op_desc& desc, const char* weight_name) {
  const Backend& backend = *ctx.backend;
  const std::string what = std::string(weight_name) + ": " + rill_dtype_name(desc.weight_dtype) + " weights: the " +
                           backend.name + " backend ";
  if (backend.abi_version < 4) {
    return check.failure(RILL_ERROR_UNSUPPORTED, what + "speaks interface version " +
                                                     std::to_string(backend.abi_version) +
                                                     ", and block formats need version 4");
  }
  const auto supports = RILL_BACKEND_OP(backend, supports);
  if (supports == nullptr) {
    return check.failure(RILL_ERROR_UNSUPPORTED, what + "has no capability query to accept them with");
  }
  clear_backend_message();
  const rill_status status = supports(ctx.impl, &desc);
  return status == RILL_OK ? RILL_OK : backend_failure(function, backend.name, status);
}

}  // namespace rill
