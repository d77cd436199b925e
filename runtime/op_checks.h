// Argument checks shared by the operator entry points. Each check returns
// RILL_OK or records a message "<function>: <argument>: expected ..., got ..."
// and returns the status that fits the fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "errors.h"
#include "host_services.h"
#include "objects.h"

namespace rill {

class OpChecks {
 public:
  OpChecks(const char* function, const rill_context* ctx) : function_(function), ctx_(ctx) {}

  // The context is not NULL.
  rill_status context() const;
  // A required operand: not NULL, a tensor of the context, and of an element
  // dtype (f32, f16, bf16): block dtypes hold weights only.
  rill_status operand(const rill_tensor* tensor, const char* name) const;
  // An optional operand: NULL, or a tensor of the context of an element dtype.
  rill_status optional_operand(const rill_tensor* tensor, const char* name) const;
  // A weight operand (gemm's w, get_rows' table): not NULL, a tensor of the
  // context, of any dtype, block dtypes included.
  rill_status weight_operand(const rill_tensor* tensor, const char* name) const;
  // tensor (NULL is fine) has the dtype of reference.
  rill_status same_dtype(const rill_tensor* tensor, const char* name, const rill_tensor& reference,
                         const char* reference_name) const;
  // An operand and its name, for the checks over several at once.
  struct Named {
    const rill_tensor* tensor;
    const char* name;
  };
  // Each of tensors (NULL is fine) has the dtype of reference; the first that
  // does not is the one reported.
  rill_status same_dtype(std::initializer_list<Named> tensors, const rill_tensor& reference,
                         const char* reference_name) const;
  // tensor has exactly the shape of reference.
  rill_status same_shape(const rill_tensor& tensor, const char* name, const rill_tensor& reference,
                         const char* reference_name) const;
  // tensor (NULL is fine) is 1-dim of length length; why explains where that length comes from.
  rill_status vector(const rill_tensor* tensor, const char* name, int64_t length, const char* why) const;
  // a and b are different tensors (NULL is fine).
  rill_status distinct(const rill_tensor* a, const char* a_name, const rill_tensor* b, const char* b_name) const;
  rill_status finite(float value, const char* name) const;
  // value is finite and > 0.
  rill_status positive(float value, const char* name) const;
  // values (an array of any element type) is not NULL.
  rill_status array(const void* values, const char* name) const;
  // Each of the count values is >= 0.
  rill_status non_negative(const int32_t* values, size_t count, const char* name) const;
  // eps is finite and >= 0.
  rill_status epsilon(float eps) const;

  // Records a failure of this function.
  rill_status failure(rill_status status, const std::string& text) const;

 private:
  const char* function_;
  const rill_context* ctx_;
};

// A gemm or get_rows whose weights (desc.weight_dtype) are of a block dtype
// runs only on a version 4 backend whose capability query accepts it; the
// refusal names weight_name, the dtype and the backend.
rill_status check_block_weights(const char* function, const OpChecks& check, const rill_context& ctx,
                                const rill_backend_op_desc& desc, const char* weight_name);

// Calls a backend op that may be absent: RILL_ERROR_UNSUPPORTED when it is,
// the backend's failure with its message when the call fails.
template <class Fn, class... Args>
rill_status dispatch(const char* function, const rill_context& ctx, Fn op, const char* op_name, Args... args) {
  if (op == nullptr) {
    return OpChecks(function, &ctx)
        .failure(RILL_ERROR_UNSUPPORTED, "the " + ctx.backend->name + " backend does not implement " + op_name);
  }
  clear_backend_message();
  const rill_status status = op(ctx.impl, args...);
  return status == RILL_OK ? RILL_OK : backend_failure(function, ctx.backend->name, status);
}

}  // namespace rill
