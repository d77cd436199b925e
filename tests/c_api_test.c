/* rill.h from plain C99 (built with -std=c99 -pedantic -Wall -Wextra -Werror):
   create a CPU context, run a fused add+RMSNorm and check it against a
   double-precision computation of the same formula. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rill.h"

#define ROWS 3
#define DIM 5

static int fail_with(const char* what, rill_status status) {
  fprintf(stderr, "%s: %s: %s\n", what, rill_status_string(status), rill_last_error());
  return 1;
}

int main(void) {
  rill_context* ctx = NULL;
  rill_tensor* x = NULL;
  rill_tensor* residual = NULL;
  rill_tensor* weight = NULL;
  const int64_t shape[2] = {ROWS, DIM};
  const int64_t weight_shape[1] = {DIM};
  float xv[ROWS * DIM], rv[ROWS * DIM], wv[DIM], out[ROWS * DIM], new_residual[ROWS * DIM];
  rill_status status;
  int i, row, errors = 0;

  for (i = 0; i < ROWS * DIM; ++i) {
    xv[i] = (float)(i % 7) - 3.0f;
    rv[i] = 0.25f * (float)i;
  }
  for (i = 0; i < DIM; ++i) wv[i] = 1.0f + 0.5f * (float)i;

  if (rill_context_create(NULL, NULL) != RILL_ERROR_INVALID_ARGUMENT) return fail_with("NULL out_ctx accepted", RILL_OK);
  status = rill_context_create("[runtime]\nbackend = \"cpu\"\n", &ctx);
  if (status != RILL_OK) return fail_with("rill_context_create", status);
  if ((status = rill_tensor_create(ctx, RILL_DTYPE_F32, 2, shape, &x)) != RILL_OK ||
      (status = rill_tensor_create(ctx, RILL_DTYPE_F32, 2, shape, &residual)) != RILL_OK ||
      (status = rill_tensor_create(ctx, RILL_DTYPE_F32, 1, weight_shape, &weight)) != RILL_OK) {
    return fail_with("rill_tensor_create", status);
  }
  if ((status = rill_tensor_write_f32(x, xv, ROWS * DIM)) != RILL_OK ||
      (status = rill_tensor_write_f32(residual, rv, ROWS * DIM)) != RILL_OK ||
      (status = rill_tensor_write_f32(weight, wv, DIM)) != RILL_OK) {
    return fail_with("rill_tensor_write_f32", status);
  }
  status = rill_fused_add_rms_norm(ctx, x, residual, NULL, weight, 1e-6f, 1.0f, 1.0f);
  if (status != RILL_OK) return fail_with("rill_fused_add_rms_norm", status);
  if ((status = rill_tensor_read_f32(x, out, ROWS * DIM)) != RILL_OK ||
      (status = rill_tensor_read_f32(residual, new_residual, ROWS * DIM)) != RILL_OK) {
    return fail_with("rill_tensor_read_f32", status);
  }

  for (row = 0; row < ROWS; ++row) {
    double sum_sq = 0.0, inv_rms;
    double sums[DIM];
    for (i = 0; i < DIM; ++i) {
      sums[i] = (double)rv[row * DIM + i] + (double)xv[row * DIM + i];
      sum_sq += sums[i] * sums[i];
    }
    inv_rms = 1.0 / sqrt(sum_sq / DIM + 1e-6);
    for (i = 0; i < DIM; ++i) {
      const double expected = sums[i] * inv_rms * (double)wv[i];
      if (fabs((double)new_residual[row * DIM + i] - sums[i]) > 1e-6 * fabs(sums[i]) ||
          fabs((double)out[row * DIM + i] - expected) > 1e-5 * (1.0 + fabs(expected))) {
        fprintf(stderr, "row %d col %d: got %g (residual %g), expected %g (residual %g)\n", row, i,
                (double)out[row * DIM + i], (double)new_residual[row * DIM + i], expected, sums[i]);
        ++errors;
      }
    }
  }
  rill_tensor_destroy(x);
  rill_tensor_destroy(residual);
  rill_tensor_destroy(weight);
  rill_context_destroy(ctx);
  if (errors != 0) return 1;
  printf("c_api_test: %s backend, %d values checked\n", "cpu", ROWS * DIM);
  return 0;
}
