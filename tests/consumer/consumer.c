/* The host program of the consumer tests: built against an installed rill
   (find_package, pkg-config) or a source tree (add_subdirectory), it runs
   RMSNorm on the CPU backend and checks it against a double-precision
   computation. Exit 0 on a match. */
#include <math.h>
#include <stdio.h>

#include "rill.h"

#define ROWS 2
#define D 5

int main(void) {
  const float x[ROWS * D] = {1, -2, 3, -4, 5, 0.5f, 0.25f, -0.125f, 8, -16};
  const float w[D] = {1, 0.5f, 2, -1, 0.25f};
  const int64_t shape[2] = {ROWS, D}, w_shape[1] = {D};
  float y[ROWS * D];
  rill_context* ctx = NULL;
  rill_tensor *xt = NULL, *wt = NULL, *yt = NULL;
  double worst = 0.0;
  int i, k, ok = 0;

  if (rill_version_number() != RILL_VERSION_NUMBER) {
    fprintf(stderr, "consumer: header says %d, library says %u\n", RILL_VERSION_NUMBER, rill_version_number());
    return 1;
  }
  if (rill_context_create("[runtime]\nbackend = \"cpu\"\n", &ctx) != RILL_OK ||
      rill_tensor_create(ctx, RILL_DTYPE_F32, 2, shape, &xt) != RILL_OK ||
      rill_tensor_create(ctx, RILL_DTYPE_F32, 1, w_shape, &wt) != RILL_OK ||
      rill_tensor_create(ctx, RILL_DTYPE_F32, 2, shape, &yt) != RILL_OK ||
      rill_tensor_write_f32(xt, x, ROWS * D) != RILL_OK || rill_tensor_write_f32(wt, w, D) != RILL_OK ||
      rill_rms_norm(ctx, xt, wt, 1e-6f, yt) != RILL_OK || rill_tensor_read_f32(yt, y, ROWS * D) != RILL_OK) {
    fprintf(stderr, "consumer: %s\n", rill_last_error());
  } else {
    for (i = 0; i < ROWS; ++i) {
      double sum_sq = 0.0;
      for (k = 0; k < D; ++k) sum_sq += (double)x[i * D + k] * x[i * D + k];
      for (k = 0; k < D; ++k) {
        double expected = x[i * D + k] / sqrt(sum_sq / D + 1e-6) * w[k];
        double err = fabs(expected - y[i * D + k]);
        if (!(err <= worst)) worst = err;
      }
    }
    ok = worst < 1e-5;
    printf("consumer: rill %u, rms_norm max |error| %.2e: %s\n", rill_version_number(), worst, ok ? "ok" : "WRONG");
  }
  rill_tensor_destroy(yt);
  rill_tensor_destroy(wt);
  rill_tensor_destroy(xt);
  rill_context_destroy(ctx);
  return ok ? 0 : 1;
}
