/* GEMM through cuBLASLt: out = alpha * a · w^T + beta * out + bias.
 *
 * rill's tensors are row-major; cuBLASLt's matrices are column-major. A
 * row-major [R, C] array is the same memory as a column-major [C, R] matrix,
 * so the row-major product out[M,N] = a[M,K] · w[N,K]^T is computed as its
 * column-major transpose out^T[N,M] = w · a^T, where (all column-major):
 *   - "A" is w's memory, seen as a [K, N] matrix with ld K, used transposed
 *     (op T) to give [N, K];
 *   - "B" is a's memory, seen as [K, M] with ld K, used as is (op N);
 *   - "C" and "D" are out's memory, seen as [N, M] with ld N.
 * So m = N, n = M, k = K, the "TN" case that cuBLASLt's fastest kernels take.
 * The bias epilogue adds a vector of length m (the rows of D) to every column:
 * here bias[N], one value per output feature, as the op requires.
 *
 * Descriptors, layouts and the heuristic's algorithms (up to kMaxAlgos, best
 * first: a call that cuBLASLt refuses with one goes on to the next, and the
 * one that ran is tried first next time; the environment variable
 * RILL_CUDA_TEST_REFUSE_GEMM_ALGOS=n makes the first n count as refused, so
 * tests reach the fallback) are cached per shape,
 * dtype, bias presence, TF32 choice and operand alignment; the bias pointer is
 * set on the cached descriptor before each call (one thread per context).
 * cuBLASLt states no alignment for the bias epilogue's vector and has no
 * preference to ask for one; other users of the epilogue (Marian NMT) found
 * that it needs 16 bytes. So a bias view that is not 16-byte aligned is first
 * copied to an aligned area of the context, in stream order.
 * With beta == 0 cuBLASLt does not read C, so out's old contents (NaN or not)
 * do not matter.
 */
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <unordered_map>

#include "cuda_backend.h"

namespace {

struct GemmKey {
  int64_t m, n, k; /* rows of a, output features, inner dim */
  rill_dtype dtype;
  bool has_bias;
  bool tf32;
  uint32_t align_a, align_w, align_out;
  bool operator==(const GemmKey& o) const {
    return m == o.m && n == o.n && k == o.k && dtype == o.dtype && has_bias == o.has_bias && tf32 == o.tf32 &&
           align_a == o.align_a && align_w == o.align_w && align_out == o.align_out;
  }
};

struct GemmKeyHash {
  std::size_t operator()(const GemmKey& key) const {
    std::size_t h = std::hash<int64_t>()(key.m);
    const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix(std::hash<int64_t>()(key.n));
    mix(std::hash<int64_t>()(key.k));
    mix(static_cast<std::size_t>(key.dtype));
    mix((key.has_bias ? 1u : 0u) | (key.tf32 ? 2u : 0u));
    mix(key.align_a | (static_cast<std::size_t>(key.align_w) << 16));
    mix(key.align_out);
    return h;
  }
};

constexpr int kMaxAlgos = 8;

struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w_layout = nullptr;   /* "A" */
  cublasLtMatrixLayout_t a_layout = nullptr;   /* "B" */
  cublasLtMatrixLayout_t out_layout = nullptr; /* "C" and "D" */
  cublasLtMatmulAlgo_t algos[kMaxAlgos]{};
  int algo_count = 0;
  int chosen = 0; /* the algorithm tried first: the last one that ran */
};

void release_plan(GemmPlan& plan) {
  if (plan.out_layout) (void)cublasLtMatrixLayoutDestroy(plan.out_layout);
  if (plan.a_layout) (void)cublasLtMatrixLayoutDestroy(plan.a_layout);
  if (plan.w_layout) (void)cublasLtMatrixLayoutDestroy(plan.w_layout);
  if (plan.desc) (void)cublasLtMatmulDescDestroy(plan.desc);
  plan = GemmPlan{};
}

/* Plans kept per context; past this many (many distinct prefill lengths) the
   cache starts over rather than grow without bound. */
constexpr std::size_t kMaxPlans = 512;

/* The largest power of two, up to 256, that divides the address. */
uint32_t alignment_of(const void* p) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

template <typename V>
cublasStatus_t set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const V& value) {
  return cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value);
}
template <typename V>
cublasStatus_t set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attribute,
                        const V& value) {
  return cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value, sizeof value);
}

cudaDataType_t cuda_type(rill_dtype dtype) {
  switch (dtype) {
    case RILL_DTYPE_F16:
      return CUDA_R_16F;
    case RILL_DTYPE_BF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

/* The alignment cuBLASLt's bias epilogue needs. */
constexpr uint32_t kBiasAlignment = 16;

/* bias's device address, or that of a copy at a kBiasAlignment-aligned
   address when bias itself is not aligned so. */
rill_status epilogue_bias(rill_backend_context* ctx, const rill_backend_tensor* bias, const void** out_bias) {
  const void* data = rill_cuda_data(bias);
  if (alignment_of(data) >= kBiasAlignment) {
    *out_bias = data;
    return RILL_OK;
  }
  const std::size_t bytes = static_cast<std::size_t>(rill_cuda_cols(bias)) * rill_backend_block_bytes(bias->dtype);
  // cudaMalloc returns 256-byte aligned memory.
  rill_status status = rill_cuda_reserve(ctx, &ctx->aligned_bias, bytes, "cudaMalloc (aligned GEMM bias)");
  if (status != RILL_OK) return status;
  status = rill_cuda_check(cudaMemcpyAsync(ctx->aligned_bias.data, data, bytes, cudaMemcpyDeviceToDevice, ctx->stream),
                           "cudaMemcpyAsync (aligned GEMM bias)");
  if (status != RILL_OK) return status;
  *out_bias = ctx->aligned_bias.data;
  return RILL_OK;
}

/* Builds the descriptors for key and asks the heuristic for the best algorithm. */
rill_status build_plan(rill_backend_context* ctx, const GemmKey& key, GemmPlan* plan) {
  const cudaDataType_t type = cuda_type(key.dtype);
  // bf16/f16 inputs accumulate in f32; f32 inputs may use TF32 tensor cores
  // only when the config allows it.
  const cublasComputeType_t compute =
      key.dtype == RILL_DTYPE_F32 && key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const uint64_t m = static_cast<uint64_t>(key.n), n = static_cast<uint64_t>(key.m), k = static_cast<uint64_t>(key.k);

  rill_status status = rill_cuda_check_lt(cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F),
                                          "cublasLtMatmulDescCreate");
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T), "set TRANSA");
  }
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N), "set TRANSB");
  }
  if (status == RILL_OK && key.has_bias) {
    status = rill_cuda_check_lt(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS),
                                "set EPILOGUE_BIAS");
    if (status == RILL_OK) {
      status = rill_cuda_check_lt(set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, type),
                                  "set BIAS_DATA_TYPE");
    }
  }
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(cublasLtMatrixLayoutCreate(&plan->w_layout, type, k, m, static_cast<int64_t>(k)),
                                "cublasLtMatrixLayoutCreate (w)");
  }
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(cublasLtMatrixLayoutCreate(&plan->a_layout, type, k, n, static_cast<int64_t>(k)),
                                "cublasLtMatrixLayoutCreate (a)");
  }
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(cublasLtMatrixLayoutCreate(&plan->out_layout, type, m, n, static_cast<int64_t>(m)),
                                "cublasLtMatrixLayoutCreate (out)");
  }
  if (status != RILL_OK) return status;

  cublasLtMatmulPreference_t pref = nullptr;
  status = rill_cuda_check_lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  if (status != RILL_OK) return status;
  const uint64_t workspace = ctx->gemm_workspace_bytes;
  status = rill_cuda_check_lt(set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace),
                              "set MAX_WORKSPACE_BYTES");
  // cuBLASLt would otherwise assume 256-byte aligned operands; views may sit
  // at any dtype-aligned offset.
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_w), "set align A");
  }
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a), "set align B");
  }
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_out),
                                "set align C");
  }
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_out),
                                "set align D");
  }
  cublasLtMatmulHeuristicResult_t results[kMaxAlgos]{};
  int found = 0;
  if (status == RILL_OK) {
    status = rill_cuda_check_lt(cublasLtMatmulAlgoGetHeuristic(ctx->lt, plan->desc, plan->w_layout, plan->a_layout,
                                                               plan->out_layout, plan->out_layout, pref, kMaxAlgos,
                                                               results, &found),
                                "cublasLtMatmulAlgoGetHeuristic");
  }
  for (int i = 0; i < found; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) plan->algos[plan->algo_count++] = results[i].algo;
  }
  (void)cublasLtMatmulPreferenceDestroy(pref);
  if (status != RILL_OK) return status;
  if (plan->algo_count == 0) {
    return rill_cuda_fail(RILL_ERROR_UNSUPPORTED,
                          "cuda: gemm: cuBLASLt has no algorithm for rows=" + std::to_string(key.m) +
                              " N=" + std::to_string(key.n) + " K=" + std::to_string(key.k) +
                              " with operand alignments a=" + std::to_string(key.align_a) + " w=" +
                              std::to_string(key.align_w) + " out=" + std::to_string(key.align_out) + " bytes");
  }
  return RILL_OK;
}

}  // namespace

struct rill_cuda_gemm_cache {
  std::unordered_map<GemmKey, GemmPlan, GemmKeyHash> plans;
  /* For tests only: the first this many algorithms of every plan count as
     refused, without calling cuBLASLt with them, so that the fallback to the
     next one runs on any GPU (RILL_CUDA_TEST_REFUSE_GEMM_ALGOS, read when the
     context is created). */
  int refused_for_test = 0;
  ~rill_cuda_gemm_cache() { clear(); }
  void clear() {
    for (auto& entry : plans) release_plan(entry.second);
    plans.clear();
  }
};

rill_cuda_gemm_cache* rill_cuda_gemm_cache_create() {
  rill_cuda_gemm_cache* cache = new (std::nothrow) rill_cuda_gemm_cache();
  const char* refused = std::getenv("RILL_CUDA_TEST_REFUSE_GEMM_ALGOS");
  if (cache && refused) cache->refused_for_test = std::atoi(refused);
  return cache;
}

void rill_cuda_gemm_cache_destroy(rill_cuda_gemm_cache* cache) { delete cache; }

rill_status rill_cuda_gemm(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                           const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out) {
  if (rill_backend_dtype_is_block(w->dtype)) return rill_cuda_gemm_block(ctx, a, w, bias, alpha, beta, out);
  rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  const void* a_data = rill_cuda_data(a);
  const void* w_data = rill_cuda_data(w);
  const void* bias_data = nullptr;
  if (bias) {
    status = epilogue_bias(ctx, bias, &bias_data);
    if (status != RILL_OK) return status;
  }
  void* out_data = rill_cuda_data(out);

  GemmKey key{};
  key.m = rill_cuda_rows(a);
  key.n = w->shape[0];
  key.k = rill_cuda_cols(a);
  key.dtype = a->dtype;
  key.has_bias = bias != nullptr;
  key.tf32 = ctx->allow_tf32;
  key.align_a = alignment_of(a_data);
  key.align_w = alignment_of(w_data);
  key.align_out = alignment_of(out_data);

  auto& plans = ctx->gemm_cache->plans;
  auto found = plans.find(key);
  if (found == plans.end()) {
    if (plans.size() >= kMaxPlans) ctx->gemm_cache->clear();
    GemmPlan plan;
    status = build_plan(ctx, key, &plan);
    if (status != RILL_OK) {
      release_plan(plan);
      return status;
    }
    found = plans.emplace(key, plan).first;
  }
  GemmPlan& plan = found->second;
  if (bias) {
    status = rill_cuda_check_lt(set_desc(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_data), "set BIAS_POINTER");
    if (status != RILL_OK) return status;
  }
  // The last algorithm that ran first, then the others best first.
  cublasStatus_t lt_status = CUBLAS_STATUS_NOT_SUPPORTED;
  for (int tried = 0; tried < plan.algo_count; ++tried) {
    const int i = (plan.chosen + tried) % plan.algo_count;
    lt_status = i < ctx->gemm_cache->refused_for_test
                    ? CUBLAS_STATUS_NOT_SUPPORTED
                    : cublasLtMatmul(ctx->lt, plan.desc, &alpha, w_data, plan.w_layout, a_data, plan.a_layout, &beta,
                                     out_data, plan.out_layout, out_data, plan.out_layout, &plan.algos[i],
                                     ctx->gemm_workspace, ctx->gemm_workspace_bytes, ctx->stream);
    if (lt_status == CUBLAS_STATUS_SUCCESS) {
      if (tried > 0 && rill_cuda_host && rill_cuda_host->log) {
        const std::string message = "gemm: cuBLASLt refused " + std::to_string(tried) + " of " +
                                    std::to_string(plan.algo_count) + " heuristic algorithms; algorithm " +
                                    std::to_string(i + 1) + " ran";
        rill_cuda_host->log(RILL_LOG_DEBUG, "cuda", message.c_str());
      }
      plan.chosen = i;
      return RILL_OK;
    }
  }
  return rill_cuda_check_lt(lt_status, ("cublasLtMatmul (each of " + std::to_string(plan.algo_count) +
                                        " algorithms the heuristic offered)").c_str());
}
