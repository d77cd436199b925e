// `rill bench`: times every op on one backend through the public API and puts
// each figure beside a reference measured in the same run: a STREAM-style
// triad on as many threads as the backend uses (memory-bound ops), and
// OpenBLAS sgemm on the same shapes (GEMM).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "rill.hpp"

#if defined(RILL_HAVE_OPENBLAS)
#  include <cblas.h>
#endif

namespace rill_cli {
namespace {

using Clock = std::chrono::steady_clock;

void print_help(std::FILE* to) {
  std::fprintf(to,
               "usage: rill bench [--backend NAME] [--dtype f32|f16|bf16|all] [--json] [--repeat N] [--config FILE]\n\n"
               "Times each op (median of N samples) over rows {1, 64, 4096} x D {896, 4096} and GEMM with\n"
               "M {1, 16, 512} against 4096x4096 weights, printing GB/s, GFLOP/s, the fraction of a\n"
               "STREAM-style triad measured in the same run, and GEMM beside OpenBLAS sgemm; then GEMV\n"
               "(M = 1, f32 activations) on 4096x4096 weights of each block format (q8_0 ... q6_k), whose\n"
               "GB/s counts the weights' bytes; each sample cycles through 256 MiB of copies of them, so that\n"
               "they stream from memory as in a decode step.\n"
               "  --backend NAME  auto, cpu, cuda or vulkan (default: the config's, else auto)\n"
               "  --dtype D       storage dtype to time (default f32)\n"
               "  --json          print machine-readable results instead of tables\n"
               "  --repeat N      samples per measurement, 1 to 1000 (default 10)\n"
               "  --config FILE   TOML config (see rill.h); not together with --backend\n");
}

// s as the inside of a JSON string.
std::string json_escape(const char* s) {
  std::string out;
  for (; *s; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median seconds of one call of fn. Each sample repeats fn enough times to
// last about a millisecond, so that microsecond ops are not lost in timer noise.
double time_median(int repeat, const std::function<void()>& fn, const std::function<void()>& sync) {
  fn();
  sync();  // warm-up
  const Clock::time_point probe = Clock::now();
  fn();
  sync();
  const double once = std::max(seconds_since(probe), 1e-7);
  const int inner = static_cast<int>(std::clamp(1e-3 / once, 1.0, 1000.0));
  std::vector<double> samples;
  for (int r = 0; r < repeat; ++r) {
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < inner; ++i) fn();
    sync();
    samples.push_back(seconds_since(start) / inner);
  }
  return median(samples);
}

// STREAM triad a = b + s*c over arrays far larger than the caches, on
// `threads` threads that each own a contiguous slice (first-touched by the
// thread that later uses it). Returns GB/s counting 3 arrays of traffic.
double triad_gbps(unsigned threads, int repeat) {
  const size_t n = size_t(1) << 25;  // 128 MiB per array
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  auto parallel = [&](const std::function<void(size_t, size_t)>& body) {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] { body(n * t / threads, n * (t + 1) / threads); });
    }
    for (std::thread& th : pool) th.join();
  };
  parallel([&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      a[i] = 0.0f;
      b[i] = 1.0f;
      c[i] = 2.0f;
    }
  });
  const float s = 3.0f;
  std::vector<double> samples;
  for (int r = 0; r < repeat; ++r) {
    const Clock::time_point start = Clock::now();
    parallel([&](size_t begin, size_t end) {
      float* __restrict pa = a.get();
      const float* __restrict pb = b.get();
      const float* __restrict pc = c.get();
      for (size_t i = begin; i < end; ++i) pa[i] = pb[i] + s * pc[i];
    });
    samples.push_back(seconds_since(start));
  }
  return 3.0 * sizeof(float) * double(n) / median(samples) / 1e9;
}

// The CPU backend names its thread count in its device name
// ("x86-64 CPU, 2 threads, ..."); other backends are driven by one host thread
// but get the whole machine's bandwidth as their reference.
unsigned backend_threads(const rill::Context& ctx) {
  const unsigned all = std::max(1u, std::thread::hardware_concurrency());
  if (std::strcmp(ctx.backend_name(), "cpu") != 0) return all;
  const char* comma = std::strchr(ctx.device_name(), ',');
  const long n = comma ? std::strtol(comma + 1, nullptr, 10) : 0;
  return n > 0 ? static_cast<unsigned>(n) : all;
}

std::vector<float> random_values(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

struct OpResult {
  std::string op;
  rill_dtype dtype;
  int64_t rows, d;
  double seconds, bytes, flops;
};

struct GemmResult {
  rill_dtype dtype;
  int64_t m, n, k;
  double seconds, bytes, flops, blas_seconds;  // blas_seconds 0: not measured
};

// Elementwise and norm ops: bytes moved and flops per element (reads and writes
// of the operands once; the [D] weights are negligible).
struct OpSpec {
  const char* name;
  int tensors_moved;
  int flops_per_element;
};
const OpSpec kOps[] = {
    {"residual_add", 3, 3},       {"rms_norm", 2, 4},           {"layer_norm", 2, 7},
    {"fused_add_rms_norm", 4, 7}, {"fused_add_layer_norm", 4, 10},
};

std::vector<OpResult> bench_ops(rill::Context& ctx, rill_dtype dtype, int repeat) {
  std::vector<OpResult> results;
  const auto sync = [&] { ctx.synchronize(); };
  for (int64_t rows : {1, 64, 4096}) {
    for (int64_t d : {896, 4096}) {
      rill::Tensor x(ctx, dtype, {rows, d}), residual(ctx, dtype, {rows, d}), out(ctx, dtype, {rows, d}),
          weight(ctx, dtype, {d}), bias(ctx, dtype, {d}), unit_weight(ctx, dtype, {d});
      x.write_f32(random_values(size_t(rows * d), 1));
      residual.write_f32(random_values(size_t(rows * d), 2));
      weight.write_f32(random_values(size_t(d), 3));
      bias.write_f32(random_values(size_t(d), 4));
      unit_weight.write_f32(std::vector<float>(size_t(d), 1.0f));
      for (const OpSpec& spec : kOps) {
        std::function<void()> fn;
        const std::string name = spec.name;
        // The scales keep in-place ops bounded however often they repeat.
        if (name == "residual_add") {
          fn = [&] { rill::residual_add(ctx, residual, x, nullptr, 0.5f, 0.5f); };
        } else if (name == "rms_norm") {
          fn = [&] { rill::rms_norm(ctx, x, &weight, 1e-6f, out); };
        } else if (name == "layer_norm") {
          fn = [&] { rill::layer_norm(ctx, x, &weight, &bias, 1e-5f, out); };
        } else if (name == "fused_add_rms_norm") {
          // Unit weights: repeated in place with uneven ones, each element
          // shrinks by its weight's ratio to the largest every call, into
          // subnormal numbers within a few hundred calls, which run many
          // times slower and would be timed instead of the op.
          fn = [&] { rill::fused_add_rms_norm(ctx, x, residual, nullptr, &unit_weight, 1e-6f, 0.5f, 0.5f); };
        } else {
          fn = [&] { rill::fused_add_layer_norm(ctx, x, residual, nullptr, &weight, &bias, 1e-5f, 0.5f, 0.5f); };
        }
        const double elements = double(rows * d);
        results.push_back({name, dtype, rows, d, time_median(repeat, fn, sync),
                           elements * spec.tensors_moved * double(rill_dtype_size(dtype)),
                           elements * spec.flops_per_element});
      }
    }
  }
  return results;
}

std::vector<GemmResult> bench_gemm(rill::Context& ctx, rill_dtype dtype, int repeat, unsigned threads) {
  constexpr int64_t n = 4096, k = 4096;
  std::vector<GemmResult> results;
  const std::vector<float> w_values = random_values(size_t(n * k), 5);
  rill::Tensor w(ctx, dtype, {n, k});
  w.write_f32(w_values);
  const double es = double(rill_dtype_size(dtype));
  for (int64_t m : {1, 16, 512}) {
    const std::vector<float> a_values = random_values(size_t(m * k), 6);
    rill::Tensor a(ctx, dtype, {m, k}), out(ctx, dtype, {m, n});
    a.write_f32(a_values);
    const double seconds = time_median(
        repeat, [&] { rill::gemm(ctx, a, w, nullptr, 1.0f, 0.0f, out); }, [&] { ctx.synchronize(); });
    double blas_seconds = 0.0;
#if defined(RILL_HAVE_OPENBLAS)
    // Right after rill's run, so that both see the same machine load.
    // OpenBLAS's threads keep spinning a while after a call: let them settle
    // before the next rill measurement.
    openblas_set_num_threads(static_cast<int>(threads));
    std::vector<float> c(size_t(m * n));
    blas_seconds = time_median(
        repeat,
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0f, a_values.data(), int(k),
                      w_values.data(), int(k), 0.0f, c.data(), int(n));
        },
        [] {});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
#else
    (void)threads;
#endif
    results.push_back(
        {dtype, m, n, k, seconds, es * double(n * k + m * k + m * n), 2.0 * double(m * n * k), blas_seconds});
  }
  return results;
}

// GEMV (M = 1) with f32 activations on weights of each block format, 4096 x
// 4096: decode's weight-streaming case, whose GB/s (the weights' bytes, read
// once per call) sits beside the triad. Each sample runs over copies of the
// weights that together exceed kStreamBytes, so that they come from memory
// as a decode step's do: one 4096 x 4096 matrix (9.4 MB in Q4_K) would stay
// in a last-level cache between calls and outrun the triad.
std::vector<GemmResult> bench_quantized_gemv(rill::Context& ctx, int repeat) {
  constexpr int64_t n = 4096, k = 4096;
  constexpr size_t kStreamBytes = size_t(256) << 20;  // twice the triad's array
  std::vector<GemmResult> results;
  const std::vector<float> w_values = random_values(size_t(n * k), 5), a_values = random_values(size_t(k), 6);
  rill::Tensor a(ctx, RILL_DTYPE_F32, {1, k}), out(ctx, RILL_DTYPE_F32, {1, n});
  a.write_f32(a_values);
  for (rill_dtype format : {RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0, RILL_DTYPE_Q5_0, RILL_DTYPE_Q5_1, RILL_DTYPE_Q4_K,
                            RILL_DTYPE_Q5_K, RILL_DTYPE_Q6_K}) {
    std::vector<rill::Tensor> weights;
    weights.emplace_back(ctx, format, std::vector<int64_t>{n, k});
    weights[0].write_f32(w_values);
    const size_t bytes = weights[0].nbytes();
    std::vector<unsigned char> quantized(bytes);
    weights[0].read(quantized.data(), bytes);
    while (weights.size() * bytes < kStreamBytes) {
      weights.emplace_back(ctx, format, std::vector<int64_t>{n, k});
      weights.back().write(quantized.data(), bytes);
    }
    const double seconds = time_median(
        repeat, [&] { for (const rill::Tensor& w : weights) rill::gemm(ctx, a, w, nullptr, 1.0f, 0.0f, out); },
        [&] { ctx.synchronize(); });
    results.push_back({format, 1, n, k, seconds / double(weights.size()), double(bytes) + 4.0 * double(k + n),
                       2.0 * double(n * k), 0.0});
  }
  return results;
}

}  // namespace

int bench_main(int argc, char** argv) {
  RuntimeOptions runtime;
  std::vector<rill_dtype> dtypes = {RILL_DTYPE_F32};
  bool json = false;
  int repeat = 10;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (is_help_option(argv[i])) {
      print_help(stdout);
      return 0;
    } else if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (runtime.take(argc, argv, i)) {
      continue;
    } else if (std::strcmp(argv[i], "--dtype") == 0 && has_value) {
      const char* name = argv[++i];
      rill_dtype dtype = RILL_DTYPE_F32;
      if (std::strcmp(name, "all") == 0) {
        dtypes = {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16};
      } else if (parse_dtype_name(name, dtype)) {
        dtypes = {dtype};
      } else {
        std::fprintf(stderr, "rill bench: --dtype: expected f32, f16, bf16 or all, got '%s'\n", name);
        return 2;
      }
    } else if (std::strcmp(argv[i], "--repeat") == 0 && has_value) {
      if (!parse_int_option("bench", "--repeat", argv[++i], 1, 1000, repeat)) return 2;
    } else {
      std::fprintf(stderr, "rill bench: unexpected argument '%s'\n", argv[i]);
      print_help(stderr);
      return 2;
    }
  }
  std::string config;
  if (const int code = runtime.config_text("bench", config)) return code;

  try {
    rill::Context ctx(config);
    const unsigned threads = backend_threads(ctx);
    if (!json) {
      std::printf("backend: %s (%s)\nmeasuring the triad on %u threads...\n", ctx.backend_name(), ctx.device_name(),
                  threads);
      std::fflush(stdout);
    }
    // The triad before and after the ops: the higher is the reference, so that
    // a quiet moment in one of them does not flatter the ops' fractions.
    const double triad_before = triad_gbps(threads, std::max(repeat, 5));
    std::vector<OpResult> ops;
    std::vector<GemmResult> gemms;
    for (rill_dtype dtype : dtypes) {
      std::vector<OpResult> o = bench_ops(ctx, dtype, repeat);
      ops.insert(ops.end(), o.begin(), o.end());
      std::vector<GemmResult> g = bench_gemm(ctx, dtype, repeat, threads);
      gemms.insert(gemms.end(), g.begin(), g.end());
    }
    const std::vector<GemmResult> quantized = bench_quantized_gemv(ctx, repeat);
    gemms.insert(gemms.end(), quantized.begin(), quantized.end());
    const double triad_after = triad_gbps(threads, std::max(repeat, 5));
    const double triad = std::max(triad_before, triad_after);

    if (json) {
      std::printf("{\"backend\": \"%s\", \"device\": \"%s\", \"threads\": %u, \"repeat\": %d, \"triad_gbps\": %.3f, "
                  "\"triad_before_gbps\": %.3f, \"triad_after_gbps\": %.3f,\n",
                  json_escape(ctx.backend_name()).c_str(), json_escape(ctx.device_name()).c_str(), threads, repeat, triad,
                  triad_before, triad_after);
      std::printf(" \"ops\": [\n");
      for (size_t i = 0; i < ops.size(); ++i) {
        const OpResult& r = ops[i];
        const double gbps = r.bytes / r.seconds / 1e9;
        std::printf("  {\"op\": \"%s\", \"dtype\": \"%s\", \"rows\": %lld, \"d\": %lld, \"median_us\": %.3f, "
                    "\"gbps\": %.3f, \"gflops\": %.3f, \"triad_fraction\": %.4f}%s\n",
                    r.op.c_str(), rill_dtype_name(r.dtype), static_cast<long long>(r.rows),
                    static_cast<long long>(r.d), r.seconds * 1e6, gbps, r.flops / r.seconds / 1e9, gbps / triad,
                    i + 1 < ops.size() ? "," : "");
      }
      std::printf(" ],\n \"gemm\": [\n");
      for (size_t i = 0; i < gemms.size(); ++i) {
        const GemmResult& r = gemms[i];
        const double gbps = r.bytes / r.seconds / 1e9;
        std::printf("  {\"dtype\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"median_us\": %.3f, \"gbps\": %.3f, "
                    "\"gflops\": %.3f, \"triad_fraction\": %.4f",
                    rill_dtype_name(r.dtype), static_cast<long long>(r.m), static_cast<long long>(r.n),
                    static_cast<long long>(r.k), r.seconds * 1e6, gbps, r.flops / r.seconds / 1e9, gbps / triad);
        if (r.blas_seconds > 0) {
          std::printf(", \"openblas_sgemm_median_us\": %.3f, \"vs_openblas\": %.4f", r.blas_seconds * 1e6,
                      r.blas_seconds / r.seconds);
        }
        std::printf("}%s\n", i + 1 < gemms.size() ? "," : "");
      }
      std::printf(" ]}\n");
      return 0;
    }

    std::printf("triad: %.2f GB/s on %u threads (median of %d; %.2f before the ops, %.2f after)\n\n", triad, threads,
                std::max(repeat, 5), triad_before, triad_after);
    std::printf("%-22s %-5s %6s %6s %12s %9s %9s %7s\n", "op", "dtype", "rows", "D", "median us", "GB/s", "GFLOP/s",
                "triad");
    for (const OpResult& r : ops) {
      const double gbps = r.bytes / r.seconds / 1e9;
      std::printf("%-22s %-5s %6lld %6lld %12.2f %9.2f %9.2f %6.0f%%\n", r.op.c_str(), rill_dtype_name(r.dtype),
                  static_cast<long long>(r.rows), static_cast<long long>(r.d), r.seconds * 1e6, gbps,
                  r.flops / r.seconds / 1e9, 100.0 * gbps / triad);
    }
    std::printf("\n%-5s %5s %5s %5s %12s %9s %9s %7s %16s %12s\n", "gemm", "M", "N", "K", "median us", "GB/s",
                "GFLOP/s", "triad", "OpenBLAS sgemm us", "rill/OpenBLAS");
    for (const GemmResult& r : gemms) {
      const double gbps = r.bytes / r.seconds / 1e9;
      std::printf("%-5s %5lld %5lld %5lld %12.1f %9.2f %9.2f %6.0f%%", rill_dtype_name(r.dtype),
                  static_cast<long long>(r.m), static_cast<long long>(r.n), static_cast<long long>(r.k),
                  r.seconds * 1e6, gbps, r.flops / r.seconds / 1e9, 100.0 * gbps / triad);
      if (r.blas_seconds > 0) {
        std::printf(" %16.1f %11.2fx\n", r.blas_seconds * 1e6, r.blas_seconds / r.seconds);
      } else {
        std::printf(" %16s %12s\n", "-", "-");
      }
    }
    std::printf("\nGB/s counts each operand read or written once; rill/OpenBLAS > 1 means rill is faster.\n");
    return 0;
  } catch (const rill::Error& e) {
    std::fprintf(stderr, "rill bench: %s\n", e.what());
    return 1;
  }
}

}  // namespace rill_cli
