/* rill_cuda_bench: times rill's CUDA ops through the public API on the shapes
 * that matter for a decoder layer, beside cuBLASLt called directly on the same
 * GEMM shapes, and prints the figures with "SUMMARY key=value" lines that
 * scripts/gpu-check.sh collects.
 *
 * Timing: device time from CUDA events on the legacy default stream. rill's
 * context stream is a blocking stream, so those events are ordered with its
 * work. A spin kernel queued first holds the GPU while the host queues the
 * timed calls, so back-to-back launches measure the kernels, not the host's
 * call overhead.
 *
 * Exit codes: 0 done, 1 a call failed or rill and cuBLASLt disagree, 77 no
 * CUDA backend (no GPU or driver), 2 bad usage.
 */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rill.h"

namespace {

double g_peak_gbps = 4800.0;  // H200 HBM3e
int g_iters = 50;

[[noreturn]] void die(const char* what, const std::string& why) {
  std::fprintf(stderr, "rill_cuda_bench: %s: %s\n", what, why.c_str());
  std::exit(1);
}

void check_rill(rill_status status, const char* what) {
  if (status != RILL_OK) die(what, std::string(rill_status_string(status)) + ": " + rill_last_error());
}
void check_cuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess) die(what, cudaGetErrorString(error));
}
void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) die(what, cublasLtGetStatusString(status));
}

__global__ void spin_kernel(unsigned long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

/* Average device time of one call of fn, in microseconds. */
template <typename F>
double device_us(F&& fn) {
  fn();  // warm-up: plans, caches, clocks
  check_cuda(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  spin_kernel<<<1, 1>>>(static_cast<unsigned long long>(g_iters) * 20000ull + 200000ull);
  check_cuda(cudaEventRecord(start, 0), "cudaEventRecord");
  for (int i = 0; i < g_iters; ++i) fn();
  check_cuda(cudaEventRecord(stop, 0), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0.0f;
  check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return 1000.0 * ms / g_iters;
}

/* Deterministic values in [-1, 1). */
std::vector<float> random_values(std::size_t count, uint32_t seed) {
  std::vector<float> v(count);
  uint32_t state = seed * 2654435761u + 1u;
  for (auto& x : v) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

struct Tensor {
  rill_tensor* t = nullptr;
  Tensor(rill_context* ctx, std::vector<int64_t> shape, uint32_t seed) {
    check_rill(rill_tensor_create(ctx, RILL_DTYPE_BF16, static_cast<int32_t>(shape.size()), shape.data(), &t),
               "rill_tensor_create");
    const std::vector<float> values = random_values(rill_tensor_numel(t), seed);
    check_rill(rill_tensor_write_f32(t, values.data(), values.size()), "rill_tensor_write_f32");
  }
  ~Tensor() { rill_tensor_destroy(t); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
};

void summary(const char* key, double value) { std::printf("SUMMARY %s=%.2f\n", key, value); }

void bench_norms(rill_context* ctx) {
  {
    const int64_t rows = 4096, d = 8192;
    Tensor x(ctx, {rows, d}, 1), residual(ctx, {rows, d}, 2), weight(ctx, {d}, 3);
    const double us = device_us([&] {
      check_rill(rill_fused_add_rms_norm(ctx, x.t, residual.t, nullptr, weight.t, 1e-6f, 1.0f, 1.0f),
                 "rill_fused_add_rms_norm");
    });
    // residual read + write, x read + write, weight read.
    const double bytes = 4.0 * rows * d * 2 + d * 2.0;
    const double gbps = bytes / (us * 1e3);
    std::printf("fused add+RMSNorm bf16 %lldx%lld: %.1f us, %.0f GB/s, %.1f%% of %.0f GB/s\n",
                static_cast<long long>(rows), static_cast<long long>(d), us, gbps, 100.0 * gbps / g_peak_gbps,
                g_peak_gbps);
    summary("fused_add_rms_norm_bf16_4096x8192_pct_peak", 100.0 * gbps / g_peak_gbps);
    const double norm_us = device_us([&] {
      check_rill(rill_rms_norm(ctx, x.t, weight.t, 1e-6f, x.t), "rill_rms_norm");
    });
    const double norm_gbps = (2.0 * rows * d * 2 + d * 2.0) / (norm_us * 1e3);
    std::printf("RMSNorm bf16 %lldx%lld: %.1f us, %.0f GB/s, %.1f%% of peak\n", static_cast<long long>(rows),
                static_cast<long long>(d), norm_us, norm_gbps, 100.0 * norm_gbps / g_peak_gbps);
    summary("rms_norm_bf16_4096x8192_pct_peak", 100.0 * norm_gbps / g_peak_gbps);
  }
  {
    const int64_t d = 4096;
    Tensor x(ctx, {1, d}, 4), residual(ctx, {1, d}, 5), weight(ctx, {d}, 6), out(ctx, {1, d}, 7);
    const double norm_us = device_us([&] {
      check_rill(rill_rms_norm(ctx, x.t, weight.t, 1e-6f, out.t), "rill_rms_norm");
    });
    const double fused_us = device_us([&] {
      check_rill(rill_fused_add_rms_norm(ctx, x.t, residual.t, nullptr, weight.t, 1e-6f, 1.0f, 1.0f),
                 "rill_fused_add_rms_norm");
    });
    std::printf("RMSNorm bf16 1x4096: %.2f us; fused add+RMSNorm bf16 1x4096: %.2f us\n", norm_us, fused_us);
    summary("rms_norm_bf16_1x4096_us", norm_us);
    summary("fused_add_rms_norm_bf16_1x4096_us", fused_us);
  }
}

/* Bandwidth as a percentage of the peak, and the printed GB/s, for bytes moved in us. */
double pct_of_peak(double bytes, double us) { return 100.0 * bytes / (us * 1e3) / g_peak_gbps; }

/* Decode attention: one query per sequence against an 8k cache, 32 query and
   8 KV heads of 128, bf16. Four sequences, so that K and V (134 MB) exceed
   the H200's 50 MB L2 and the figure is one of HBM reads. */
void bench_decode_attention(rill_context* ctx) {
  const int64_t batch = 4, context = 8192, heads = 32, kv_heads = 8, head_dim = 128;
  Tensor q(ctx, {batch, 1, heads, head_dim}, 21), k(ctx, {batch, context, kv_heads, head_dim}, 22),
      v(ctx, {batch, context, kv_heads, head_dim}, 23), out(ctx, {batch, 1, heads, head_dim}, 24);
  const std::vector<int32_t> lengths(static_cast<std::size_t>(batch), static_cast<int32_t>(context));
  const double us = device_us([&] {
    check_rill(rill_attention(ctx, q.t, k.t, v.t, lengths.data(), lengths.size(), 0.088f, out.t), "rill_attention");
  });
  const double bytes = 2.0 * batch * context * kv_heads * head_dim * 2;
  std::printf("decode attention bf16, %lld x 8k context, 32/8 heads of 128: %.1f us, %.1f%% of peak in K/V reads\n",
              static_cast<long long>(batch), us, pct_of_peak(bytes, us));
  summary("decode_attention_8k_pct_peak_bw", pct_of_peak(bytes, us));
}

/* Prefill attention on tensor cores: one 4096-token causal prefill, 32 query
   and 8 KV heads of 128, bf16. The FLOPs count the visible half of Q K^T and
   of P V (2 x 2 x T^2 / 2 x head_dim x heads). */
void bench_prefill_attention(rill_context* ctx) {
  const int64_t tokens = 4096, heads = 32, kv_heads = 8, head_dim = 128;
  Tensor q(ctx, {1, tokens, heads, head_dim}, 25), k(ctx, {1, tokens, kv_heads, head_dim}, 26),
      v(ctx, {1, tokens, kv_heads, head_dim}, 27), out(ctx, {1, tokens, heads, head_dim}, 28);
  const int32_t length = static_cast<int32_t>(tokens);
  const double us = device_us([&] {
    check_rill(rill_attention(ctx, q.t, k.t, v.t, &length, 1, 0.088f, out.t), "rill_attention (prefill)");
  });
  const double tflops = 2.0 * static_cast<double>(tokens) * tokens * head_dim * heads / (us * 1e6);
  std::printf("prefill attention bf16, 4096 tokens, 32/8 heads of 128, causal: %.1f us, %.1f TFLOP/s\n", us, tflops);
  summary("prefill_attention_4k_tflops", tflops);
}

/* The dequantizing GEMV at M = 1 on 28672 x 4096 block weights (above the L2
   in every format), reading the weights as a share of the peak bandwidth.
   The blocks are random bytes below 0x3C, so every f16 scale is finite: a
   timing, not a result. */
void bench_block_gemv(rill_context* ctx, rill_dtype dtype, const char* key) {
  const int64_t n = 28672, k = 4096;
  const int64_t w_shape[2] = {n, k};
  rill_tensor* w = nullptr;
  check_rill(rill_tensor_create(ctx, dtype, 2, w_shape, &w), "rill_tensor_create (block weights)");
  std::vector<uint8_t> blocks(rill_tensor_nbytes(w));
  uint32_t state = 7u;
  for (uint8_t& b : blocks) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<uint8_t>((state >> 24) % 0x3C);
  }
  check_rill(rill_tensor_write(w, blocks.data(), blocks.size()), "rill_tensor_write (block weights)");
  Tensor a(ctx, {1, k}, 25), out(ctx, {1, n}, 26);
  const double us = device_us([&] { check_rill(rill_gemm(ctx, a.t, w, nullptr, 1.0f, 0.0f, out.t), "rill_gemm"); });
  const double bytes = static_cast<double>(blocks.size()) + 2.0 * (k + n);
  std::printf("GEMV %s M=1 N=%lld K=%lld (bf16 activations): %.1f us, %.1f%% of peak bandwidth\n",
              rill_dtype_name(dtype), static_cast<long long>(n), static_cast<long long>(k), us,
              pct_of_peak(bytes, us));
  summary(key, pct_of_peak(bytes, us));
  rill_tensor_destroy(w);
}

/* cuBLASLt called directly: bf16 in, f32 compute, the same TN layout and
   heuristic choice as rill's GEMM, on the legacy default stream. */
struct DirectGemm {
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 32u << 20;
  DirectGemm() {
    check_lt(cublasLtCreate(&lt), "cublasLtCreate");
    check_cuda(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc workspace");
  }
  ~DirectGemm() {
    (void)cudaFree(workspace);
    (void)cublasLtDestroy(lt);
  }
  /* out[M,N] = a[M,K] · w[N,K]^T, all row-major bf16 device arrays. Returns
     the average device time in microseconds. */
  double time(int64_t m, int64_t n, int64_t k, const void* a, const void* w, void* out) {
    cublasLtMatmulDesc_t desc;
    check_lt(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
    check_lt(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
    cublasLtMatrixLayout_t la, lb, lc;
    check_lt(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, n, k), "layout w");
    check_lt(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, m, k), "layout a");
    check_lt(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, m, n), "layout out");
    cublasLtMatmulPreference_t pref;
    check_lt(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    const uint64_t ws = workspace_bytes;
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
             "MAX_WORKSPACE_BYTES");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    check_lt(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &result, &found), "AlgoGetHeuristic");
    if (found == 0) die("cuBLASLt", "no algorithm for the shape");
    const float alpha = 1.0f, beta = 0.0f;
    const double us = device_us([&] {
      check_lt(cublasLtMatmul(lt, desc, &alpha, w, la, a, lb, &beta, out, lc, out, lc, &result.algo, workspace,
                              workspace_bytes, 0),
               "cublasLtMatmul");
    });
    (void)cublasLtMatmulPreferenceDestroy(pref);
    (void)cublasLtMatrixLayoutDestroy(lc);
    (void)cublasLtMatrixLayoutDestroy(lb);
    (void)cublasLtMatrixLayoutDestroy(la);
    (void)cublasLtMatmulDescDestroy(desc);
    return us;
  }
};

std::vector<__nv_bfloat16> to_bf16(const std::vector<float>& v) {
  std::vector<__nv_bfloat16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16(v[i]);
  return out;
}

void* device_copy(const std::vector<__nv_bfloat16>& host) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, host.size() * sizeof(__nv_bfloat16)), "cudaMalloc");
  check_cuda(cudaMemcpy(p, host.data(), host.size() * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice), "cudaMemcpy");
  return p;
}

/* Times rill_gemm and direct cuBLASLt on one shape with the same inputs,
   checks that they agree, and prints both. Returns false on disagreement. */
bool bench_gemm(rill_context* ctx, DirectGemm& direct, int64_t m, int64_t n, int64_t k, const char* key) {
  const std::vector<float> a_host = random_values(static_cast<std::size_t>(m * k), 11);
  const std::vector<float> w_host = random_values(static_cast<std::size_t>(n * k), 12);
  const int64_t a_shape[2] = {m, k}, w_shape[2] = {n, k}, out_shape[2] = {m, n};
  rill_tensor *a = nullptr, *w = nullptr, *out = nullptr;
  check_rill(rill_tensor_create(ctx, RILL_DTYPE_BF16, 2, a_shape, &a), "rill_tensor_create");
  check_rill(rill_tensor_create(ctx, RILL_DTYPE_BF16, 2, w_shape, &w), "rill_tensor_create");
  check_rill(rill_tensor_create(ctx, RILL_DTYPE_BF16, 2, out_shape, &out), "rill_tensor_create");
  check_rill(rill_tensor_write_f32(a, a_host.data(), a_host.size()), "write a");
  check_rill(rill_tensor_write_f32(w, w_host.data(), w_host.size()), "write w");
  const double rill_us = device_us([&] {
    check_rill(rill_gemm(ctx, a, w, nullptr, 1.0f, 0.0f, out), "rill_gemm");
  });
  std::vector<float> rill_out(static_cast<std::size_t>(m * n));
  check_rill(rill_tensor_read_f32(out, rill_out.data(), rill_out.size()), "read out");
  rill_tensor_destroy(out);
  rill_tensor_destroy(w);
  rill_tensor_destroy(a);

  void* da = device_copy(to_bf16(a_host));
  void* dw = device_copy(to_bf16(w_host));
  void* dout = nullptr;
  check_cuda(cudaMalloc(&dout, static_cast<std::size_t>(m * n) * sizeof(__nv_bfloat16)), "cudaMalloc");
  const double direct_us = direct.time(m, n, k, da, dw, dout);
  std::vector<__nv_bfloat16> direct_out(static_cast<std::size_t>(m * n));
  check_cuda(cudaMemcpy(direct_out.data(), dout, direct_out.size() * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost),
             "cudaMemcpy");
  (void)cudaFree(dout);
  (void)cudaFree(dw);
  (void)cudaFree(da);

  double max_diff = 0.0, max_ref = 0.0;
  for (std::size_t i = 0; i < rill_out.size(); ++i) {
    const double ref = __bfloat162float(direct_out[i]);
    max_diff = std::fmax(max_diff, std::fabs(rill_out[i] - ref));
    max_ref = std::fmax(max_ref, std::fabs(ref));
  }
  const double rel = max_ref > 0 ? max_diff / max_ref : max_diff;
  const double flops = 2.0 * m * n * k;
  const double bytes = 2.0 * (m * k + n * k + m * n);
  std::printf("GEMM bf16 M=%lld N=%lld K=%lld: rill %.1f us (%.1f TFLOP/s, %.0f GB/s, %.1f%% of peak); "
              "cuBLASLt direct %.1f us; rill/direct time %.3f; max |diff|/max|ref| %.2e\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), rill_us,
              flops / (rill_us * 1e6), bytes / (rill_us * 1e3), 100.0 * bytes / (rill_us * 1e3) / g_peak_gbps,
              direct_us, rill_us / direct_us, rel);
  const std::string base = key;
  summary((base + "_tflops").c_str(), flops / (rill_us * 1e6));
  summary((base + "_pct_peak_bw").c_str(), 100.0 * bytes / (rill_us * 1e3) / g_peak_gbps);
  summary((base + "_rill_over_direct").c_str(), rill_us / direct_us);
  // Same algorithm on the same data: anything beyond a rounding or two of
  // bf16 means the two computed different things.
  if (rel > 1e-2) {
    std::fprintf(stderr, "rill_cuda_bench: rill_gemm and cuBLASLt disagree on M=%lld N=%lld K=%lld\n",
                 static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--peak-gbps") == 0 && i + 1 < argc) {
      g_peak_gbps = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      g_iters = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: rill_cuda_bench [--peak-gbps GB/s] [--iters N]\n");
      return 2;
    }
  }
  if (g_peak_gbps <= 0 || g_iters < 1 || g_iters > 500) {
    std::fprintf(stderr, "rill_cuda_bench: --peak-gbps must be > 0 and --iters in [1, 500]\n");
    return 2;
  }
  rill_context* ctx = nullptr;
  const rill_status status = rill_context_create("[runtime]\nbackend = \"cuda\"\n", &ctx);
  if (status == RILL_ERROR_BACKEND_UNAVAILABLE) {
    std::printf("rill_cuda_bench: skipped: CUDA backend unavailable: %s\n", rill_last_error());
    return 77;
  }
  check_rill(status, "rill_context_create");
  std::printf("device: %s; %d iterations per figure; peak bandwidth taken as %.0f GB/s\n",
              rill_context_device_name(ctx), g_iters, g_peak_gbps);
  bench_norms(ctx);
  bench_decode_attention(ctx);
  bench_prefill_attention(ctx);
  bench_block_gemv(ctx, RILL_DTYPE_Q4_K, "gemv_q4_k_m1_28672x4096_pct_peak_bw");
  bench_block_gemv(ctx, RILL_DTYPE_Q8_0, "gemv_q8_0_m1_28672x4096_pct_peak_bw");
  bool agree = true;
  {
    DirectGemm direct;
    agree &= bench_gemm(ctx, direct, 8192, 8192, 8192, "gemm_bf16_8192cubed");
    agree &= bench_gemm(ctx, direct, 1, 14336, 4096, "gemm_bf16_m1_14336x4096");
    agree &= bench_gemm(ctx, direct, 16, 4096, 4096, "gemm_bf16_m16_4096x4096");
  }
  rill_context_destroy(ctx);
  return agree ? 0 : 1;
}
