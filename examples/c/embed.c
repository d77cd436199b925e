/*
 * embed.c — the smallest complete host of rill, in plain C99.
 *
 *   config -> context -> tensors -> ops -> a decoder layer -> results
 *
 * Every call's status is checked; a failure prints the status name and
 * rill_last_error() and releases what was created. The results are checked
 * against a double-precision computation done here, so the program doubles as
 * a test: exit 0 when they match, 1 when not, 77 when the requested backend is
 * not available on this machine.
 *
 * usage: embed [backend]      backend: auto (default), cpu, vulkan, cuda
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rill.h"

#define ROWS 4
#define D 64
#define N 32

/* Bails out to the cleanup label with the failing call and librill's message. */
#define CHECK(call)                                                                        \
  do {                                                                                     \
    rill_status status_ = (call);                                                          \
    if (status_ != RILL_OK) {                                                              \
      fprintf(stderr, "embed: %s failed: %s: %s\n", #call, rill_status_string(status_), \
              rill_last_error());                                                          \
      goto cleanup;                                                                        \
    }                                                                                      \
  } while (0)

/* Deterministic values in [-scale, scale] (a small LCG: no dependence on rand()). */
static void fill(float* values, size_t count, unsigned seed, float scale) {
  unsigned state = seed * 2654435761u + 1u;
  size_t i;
  for (i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = scale * ((float)(state >> 8) / 8388608.0f - 1.0f);
  }
}

static double max_abs_diff(const float* a, const double* b, size_t count) {
  double worst = 0.0;
  size_t i;
  for (i = 0; i < count; ++i) {
    double d = fabs((double)a[i] - b[i]);
    if (!(d <= worst)) worst = d; /* also catches NaN */
  }
  return worst;
}

/* Sets every weight of a pre-norm SwiGLU layer stack to small deterministic values. */
static rill_status set_model_weights(rill_model* model, const rill_model_desc* desc) {
  static float data[4 * D * D]; /* big enough for the largest weight below */
  /* head_dim and num_kv_heads 0 mean "derived" (see rill_model_desc). */
  const int64_t hq = desc->num_heads, hkv = desc->num_kv_heads ? desc->num_kv_heads : desc->num_heads;
  const int64_t hd = desc->head_dim ? desc->head_dim : desc->hidden_size / desc->num_heads;
  const int64_t inter = desc->intermediate_size, dim = desc->hidden_size;
  struct { const char* suffix; int64_t rows, cols; } weights[] = {
      {"self_attn.q_proj.weight", hq * hd, dim}, {"self_attn.k_proj.weight", hkv * hd, dim},
      {"self_attn.v_proj.weight", hkv * hd, dim}, {"self_attn.o_proj.weight", dim, hq * hd},
      {"mlp.gate_proj.weight", inter, dim},       {"mlp.up_proj.weight", inter, dim},
      {"mlp.down_proj.weight", dim, inter},       {"input_layernorm.weight", dim, 0},
      {"post_attention_layernorm.weight", dim, 0}};
  char name[128];
  int layer;
  size_t w;
  rill_status status;
  for (layer = 0; layer < desc->num_layers; ++layer) {
    for (w = 0; w < sizeof weights / sizeof weights[0]; ++w) {
      const int is_norm = weights[w].cols == 0;
      const int64_t shape[2] = {weights[w].rows, weights[w].cols};
      const size_t count = (size_t)(is_norm ? shape[0] : shape[0] * shape[1]);
      snprintf(name, sizeof name, "model.layers.%d.%s", layer, weights[w].suffix);
      fill(data, count, (unsigned)(100 * layer + w), is_norm ? 0.1f : 0.15f);
      if (is_norm) {
        size_t i;
        for (i = 0; i < count; ++i) data[i] += 1.0f; /* norm gains near one */
      }
      status = rill_model_set_weight(model, name, RILL_DTYPE_F32, is_norm ? 1 : 2, shape, data,
                                     count * sizeof(float));
      if (status != RILL_OK) return status;
    }
  }
  {
    const int64_t shape[1] = {dim};
    size_t i;
    fill(data, (size_t)dim, 999u, 0.1f);
    for (i = 0; i < (size_t)dim; ++i) data[i] += 1.0f;
    return rill_model_set_weight(model, "model.norm.weight", RILL_DTYPE_F32, 1, shape, data,
                                 (size_t)dim * sizeof(float));
  }
}

int main(int argc, char** argv) {
  const char* backend = argc > 1 ? argv[1] : "auto";
  char config[256];
  int exit_code = 1;
  rill_context* ctx = NULL;
  rill_tensor *residual = NULL, *x = NULL, *weight = NULL, *w = NULL, *out = NULL;
  rill_tensor *hidden_full = NULL, *hidden_step = NULL;
  rill_model* model = NULL;
  rill_kv_cache* cache = NULL;
  static float r_host[ROWS * D], x_host[ROWS * D], w_host[D], gw_host[N * D], y_host[ROWS * N];
  static double r_ref[ROWS * D], x_ref[ROWS * D], y_ref[ROWS * N];
  const float eps = 1e-6f;
  const int64_t stream_shape[2] = {ROWS, D}, weight_shape[1] = {D}, gemm_w_shape[2] = {N, D},
                out_shape[2] = {ROWS, N};
  double err_norm, err_gemm;
  int i, j, k;

  /* 1. Config and context. A named backend that this machine lacks is a skip. */
  snprintf(config, sizeof config, "[runtime]\nbackend = \"%s\"\n", backend);
  {
    rill_status status = rill_context_create(config, &ctx);
    if (status == RILL_ERROR_BACKEND_UNAVAILABLE && strcmp(backend, "auto") != 0) {
      printf("embed: backend %s not available here, skipped: %s\n", backend, rill_last_error());
      return 77;
    }
    CHECK(status);
  }
  printf("rill %u on %s (%s)\n", rill_version_number(), rill_context_backend_name(ctx), rill_context_device_name(ctx));

  /* 2. Tensors in the context's device memory, filled from host arrays. */
  fill(r_host, ROWS * D, 1u, 1.0f);
  fill(x_host, ROWS * D, 2u, 1.0f);
  fill(w_host, D, 3u, 0.5f);
  fill(gw_host, N * D, 4u, 0.2f);
  CHECK(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, stream_shape, &residual));
  CHECK(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, stream_shape, &x));
  CHECK(rill_tensor_create(ctx, RILL_DTYPE_F32, 1, weight_shape, &weight));
  CHECK(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, gemm_w_shape, &w));
  CHECK(rill_tensor_create(ctx, RILL_DTYPE_F32, 2, out_shape, &out));
  CHECK(rill_tensor_write_f32(residual, r_host, ROWS * D));
  CHECK(rill_tensor_write_f32(x, x_host, ROWS * D));
  CHECK(rill_tensor_write_f32(weight, w_host, D));
  CHECK(rill_tensor_write_f32(w, gw_host, N * D));

  /* 3. Ops, queued on the context: residual += x; x = rms_norm(residual) * weight;
        out = x . w^T. Reads wait for the work they depend on. */
  CHECK(rill_fused_add_rms_norm(ctx, x, residual, NULL, weight, eps, 1.0f, 1.0f));
  CHECK(rill_gemm(ctx, x, w, NULL, 1.0f, 0.0f, out));
  CHECK(rill_tensor_read_f32(residual, r_host, ROWS * D));
  CHECK(rill_tensor_read_f32(out, y_host, ROWS * N));

  /* The same computation in double precision, from the original inputs
     (r_host now holds the result, so the original residual is regenerated). */
  {
    static float r0[ROWS * D];
    fill(r0, ROWS * D, 1u, 1.0f);
    for (i = 0; i < ROWS; ++i) {
      double sum_sq = 0.0, inv;
      for (k = 0; k < D; ++k) {
        r_ref[i * D + k] = (double)r0[i * D + k] + (double)x_host[i * D + k];
        sum_sq += r_ref[i * D + k] * r_ref[i * D + k];
      }
      inv = 1.0 / sqrt(sum_sq / D + eps);
      for (k = 0; k < D; ++k) x_ref[i * D + k] = r_ref[i * D + k] * inv * w_host[k];
      for (j = 0; j < N; ++j) {
        double acc = 0.0;
        for (k = 0; k < D; ++k) acc += x_ref[i * D + k] * gw_host[j * D + k];
        y_ref[i * N + j] = acc;
      }
    }
  }
  err_norm = max_abs_diff(r_host, r_ref, ROWS * D);
  err_gemm = max_abs_diff(y_host, y_ref, ROWS * N);
  printf("fused add+rms_norm: residual max |error| %.2e\ngemm [%d,%d]x[%d,%d]^T: max |error| %.2e\n", err_norm, ROWS,
         D, N, D, err_gemm);
  if (!(err_norm < 1e-5 && err_gemm < 1e-4)) {
    fprintf(stderr, "embed: results differ from the double-precision reference\n");
    goto cleanup;
  }

  /* 4. A decoder layer: prefill 5 tokens at once, and the same 5 as 4 + 1 decode
        step through a KV cache; the last token's output must agree. */
  {
    enum { T = 5 };
    rill_model_desc desc;
    const int64_t full_shape[3] = {1, T, D}, step_shape[3] = {1, T - 1, D}, one_shape[3] = {1, 1, D};
    static float tokens[T * D], full_out[T * D], step_out[D];
    rill_status status;
    rill_model_desc_init(&desc);
    desc.num_layers = 2;
    desc.hidden_size = D;
    desc.num_heads = 4;
    desc.num_kv_heads = 2;
    desc.intermediate_size = 2 * D;
    CHECK(rill_model_create(ctx, &desc, &model));
    CHECK(set_model_weights(model, &desc));
    CHECK(rill_model_check_weights(model));
    fill(tokens, T * D, 5u, 1.0f);

    CHECK(rill_tensor_create(ctx, RILL_DTYPE_F32, 3, full_shape, &hidden_full));
    CHECK(rill_tensor_write_f32(hidden_full, tokens, T * D));
    status = rill_model_forward(model, NULL, hidden_full, NULL, 0);
    if (status == RILL_ERROR_UNSUPPORTED) {
      printf("decoder layer: not supported on %s: %s\n", rill_context_backend_name(ctx), rill_last_error());
      exit_code = 0;
      goto cleanup;
    }
    CHECK(status);
    CHECK(rill_tensor_read_f32(hidden_full, full_out, T * D));

    CHECK(rill_kv_cache_create(model, 1, 8, &cache));
    CHECK(rill_tensor_create(ctx, RILL_DTYPE_F32, 3, step_shape, &hidden_step));
    CHECK(rill_tensor_write_f32(hidden_step, tokens, (T - 1) * D));
    CHECK(rill_model_forward(model, cache, hidden_step, NULL, 0));
    rill_tensor_destroy(hidden_step);
    hidden_step = NULL;
    CHECK(rill_tensor_create(ctx, RILL_DTYPE_F32, 3, one_shape, &hidden_step));
    CHECK(rill_tensor_write_f32(hidden_step, tokens + (T - 1) * D, D));
    CHECK(rill_model_forward(model, cache, hidden_step, NULL, 0));
    CHECK(rill_tensor_read_f32(hidden_step, step_out, D));
    {
      double ref[D], err;
      int32_t cached = 0;
      for (k = 0; k < D; ++k) ref[k] = full_out[(T - 1) * D + k];
      err = max_abs_diff(step_out, ref, D);
      CHECK(rill_kv_cache_get_length(cache, 0, &cached));
      printf("decoder stack (2 layers): prefill vs cached decode, last token max |difference| %.2e, cache holds %d\n",
             err, (int)cached);
      if (!(err < 1e-4) || cached != T) {
        fprintf(stderr, "embed: the cached decode step disagrees with the prefill\n");
        goto cleanup;
      }
    }
  }
  exit_code = 0;

cleanup:
  /* Children before their parents; destroy(NULL) is a no-op. */
  rill_kv_cache_destroy(cache);
  rill_model_destroy(model);
  rill_tensor_destroy(hidden_step);
  rill_tensor_destroy(hidden_full);
  rill_tensor_destroy(out);
  rill_tensor_destroy(w);
  rill_tensor_destroy(weight);
  rill_tensor_destroy(x);
  rill_tensor_destroy(residual);
  rill_context_destroy(ctx);
  return exit_code;
}
