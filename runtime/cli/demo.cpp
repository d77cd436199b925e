// `rill demo [--config FILE] [--backend NAME] [--layers N]`: the main job until
// whole decoder layers run end to end. A residual stream of [64, 896] goes
// through a few layers' worth of fused add+RMSNorm and GEMMs (896x896, then
// 896 -> 4864 -> 896, Qwen2-0.5B's sizes) with random weights from a fixed
// seed, on the configured backend. The same run on the CPU backend gives the
// reference checksum; a difference beyond the tolerance fails the demo.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli_options.h"
#include "commands.h"
#include "rill.hpp"

namespace rill_cli {
namespace {

constexpr int64_t kTokens = 64;
constexpr int64_t kHidden = 896;
constexpr int64_t kIntermediate = 4864;
constexpr float kEps = 1e-6f;
constexpr uint32_t kSeed = 20240611;
// NMSE between the chosen backend's final stream and the CPU backend's. Both
// compute in f32 (TF32 is off unless the config allows it); the differences
// come from summation order over K <= 4864, orders of magnitude below this.
constexpr double kTolerance = 1e-6;

void print_help(std::FILE* to) {
  std::fprintf(to,
               "usage: rill demo [--config FILE] [--backend NAME] [--layers N]\n\n"
               "Runs a residual stream of [%lld, %lld] through N layers (default 4) of fused\n"
               "add+RMSNorm and GEMMs (%lldx%lld, %lld->%lld->%lld) with random weights, on the\n"
               "configured backend (default \"auto\"), prints the backend chosen and per-step timings,\n"
               "and checks the result against the same run on the CPU backend.\n"
               "  --config FILE   TOML config (see rill.h); not together with --backend\n"
               "  --backend NAME  auto, cpu, cuda or vulkan\n"
               "  --layers N      1 to 64\n",
               static_cast<long long>(kTokens), static_cast<long long>(kHidden), static_cast<long long>(kHidden),
               static_cast<long long>(kHidden), static_cast<long long>(kHidden),
               static_cast<long long>(kIntermediate), static_cast<long long>(kHidden));
}

std::vector<float> random_values(std::mt19937& rng, size_t count, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

struct Layer {
  rill::Tensor norm1, w_mix, norm2, w_up, w_down;
};

struct StepTimes {
  double add_norm1 = 0, mix = 0, add_norm2 = 0, up = 0, down = 0;
};

// The whole run on one context; returns the final normalized stream.
std::vector<float> run(rill::Context& ctx, int layers, std::vector<StepTimes>* times) {
  std::mt19937 rng(kSeed);
  const rill_dtype f32 = RILL_DTYPE_F32;
  rill::Tensor residual(ctx, f32, {kTokens, kHidden}), x(ctx, f32, {kTokens, kHidden}),
      h(ctx, f32, {kTokens, kHidden}), u(ctx, f32, {kTokens, kIntermediate}), out(ctx, f32, {kTokens, kHidden});
  residual.write_f32(random_values(rng, kTokens * kHidden, 1.0f));
  x.write_f32(random_values(rng, kTokens * kHidden, 1.0f));
  std::vector<Layer> weights;
  for (int l = 0; l < layers; ++l) {
    Layer layer{rill::Tensor(ctx, f32, {kHidden}), rill::Tensor(ctx, f32, {kHidden, kHidden}),
                rill::Tensor(ctx, f32, {kHidden}), rill::Tensor(ctx, f32, {kIntermediate, kHidden}),
                rill::Tensor(ctx, f32, {kHidden, kIntermediate})};
    // Gains near 1 and weights scaled by 1/sqrt(K) keep the stream's scale steady.
    std::vector<float> gain = random_values(rng, kHidden, 0.1f);
    for (float& g : gain) g += 1.0f;
    layer.norm1.write_f32(gain);
    layer.norm2.write_f32(gain);
    layer.w_mix.write_f32(random_values(rng, kHidden * kHidden, 1.0f / std::sqrt(float(kHidden))));
    layer.w_up.write_f32(random_values(rng, kIntermediate * kHidden, 1.0f / std::sqrt(float(kHidden))));
    layer.w_down.write_f32(random_values(rng, kHidden * kIntermediate, 1.0f / std::sqrt(float(kIntermediate))));
    weights.push_back(std::move(layer));
  }
  ctx.synchronize();

  using clock = std::chrono::steady_clock;
  auto timed = [&](double& slot, auto&& step) {
    const auto start = clock::now();
    step();
    ctx.synchronize();
    slot = std::chrono::duration<double, std::milli>(clock::now() - start).count();
  };
  for (int l = 0; l < layers; ++l) {
    Layer& w = weights[static_cast<size_t>(l)];
    StepTimes t;
    // x holds the previous sublayer's output: add it into the stream, normalize.
    timed(t.add_norm1, [&] { rill::fused_add_rms_norm(ctx, x, residual, nullptr, &w.norm1, kEps); });
    timed(t.mix, [&] { rill::gemm(ctx, x, w.w_mix, nullptr, 1.0f, 0.0f, h); });
    timed(t.add_norm2, [&] { rill::fused_add_rms_norm(ctx, h, residual, nullptr, &w.norm2, kEps); });
    timed(t.up, [&] { rill::gemm(ctx, h, w.w_up, nullptr, 1.0f, 0.0f, u); });
    timed(t.down, [&] { rill::gemm(ctx, u, w.w_down, nullptr, 1.0f, 0.0f, x); });
    if (times) times->push_back(t);
  }
  rill::residual_add(ctx, residual, x);
  rill::rms_norm(ctx, residual, nullptr, kEps, out);
  return out.read_f32();
}

double nmse(const std::vector<float>& a, const std::vector<float>& reference) {
  double error = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(reference[i]);
    error += d * d;
    norm += double(reference[i]) * double(reference[i]);
  }
  return norm > 0 ? error / norm : error;
}

double checksum(const std::vector<float>& values) {
  double sum = 0;
  for (size_t i = 0; i < values.size(); ++i) sum += values[i] * double(i % 7 + 1);
  return sum;
}

}  // namespace

int demo_main(int argc, char** argv) {
  RuntimeOptions runtime;
  int layers = 4;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (is_help_option(argv[i])) {
      print_help(stdout);
      return 0;
    } else if (runtime.take(argc, argv, i)) {
      continue;
    } else if (std::strcmp(argv[i], "--layers") == 0 && has_value) {
      if (!parse_int_option("demo", "--layers", argv[++i], 1, 64, layers)) return 2;
    } else {
      std::fprintf(stderr, "rill demo: unexpected argument '%s'\n", argv[i]);
      print_help(stderr);
      return 2;
    }
  }
  std::string config;
  if (const int code = runtime.config_text("demo", config)) return code;

  try {
    rill::Context ctx(config);
    std::printf("backend: %s (%s)\nselection:\n%s\n", ctx.backend_name(), ctx.device_name(), ctx.selection_report());
    std::printf("residual stream [%lld, %lld], %d layers of: add+RMSNorm, GEMM %lldx%lld, add+RMSNorm, "
                "GEMM %lld->%lld, GEMM %lld->%lld (f32)\n\n",
                static_cast<long long>(kTokens), static_cast<long long>(kHidden), layers,
                static_cast<long long>(kHidden), static_cast<long long>(kHidden), static_cast<long long>(kHidden),
                static_cast<long long>(kIntermediate), static_cast<long long>(kIntermediate),
                static_cast<long long>(kHidden));
    run(ctx, 1, nullptr);  // warm-up: first-touch allocation, plugin and kernel start-up
    std::vector<StepTimes> times;
    const std::vector<float> result = run(ctx, layers, &times);

    std::printf("layer  add+norm   gemm mix  add+norm    gemm up  gemm down     (ms)\n");
    double total = 0;
    for (size_t l = 0; l < times.size(); ++l) {
      const StepTimes& t = times[l];
      std::printf("%5zu %9.3f %10.3f %9.3f %10.3f %10.3f\n", l, t.add_norm1, t.mix, t.add_norm2, t.up, t.down);
      total += t.add_norm1 + t.mix + t.add_norm2 + t.up + t.down;
    }
    std::printf("total %.3f ms\n\n", total);

    rill::Context cpu("[runtime]\nbackend = \"cpu\"\n");
    const std::vector<float> reference = run(cpu, layers, nullptr);
    const double error = nmse(result, reference);
    std::printf("checksum %s: %.6f\nchecksum cpu: %.6f\nNMSE against the CPU backend: %.3g (tolerance %.0e)\n",
                ctx.backend_name(), checksum(result), checksum(reference), error, kTolerance);
    if (!(error <= kTolerance)) {
      std::fprintf(stderr, "rill demo: FAILED: the %s result differs from the CPU backend's (NMSE %.3g > %.0e)\n",
                   ctx.backend_name(), error, kTolerance);
      return 1;
    }
    std::printf("OK\n");
    return 0;
  } catch (const rill::Error& e) {
    std::fprintf(stderr, "rill demo: %s\n", e.what());
    return 1;
  }
}

}  // namespace rill_cli
