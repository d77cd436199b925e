// embed.cpp — the embed example with rill.hpp: RAII handles and exceptions over
// the C API. Runs LayerNorm and a GEMM, checks them against a double-precision
// computation done here, and shows how a failed call surfaces as rill::Error.
//
// usage: embed_cpp [backend]   backend: auto (default), cpu, vulkan, cuda
// exit: 0 results match, 1 mismatch or error, 77 backend not available here.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "rill.hpp"

namespace {

constexpr int64_t kRows = 3, kDim = 48, kOut = 16;

std::vector<float> deterministic_values(size_t count, unsigned seed, float scale) {
  std::vector<float> values(count);
  unsigned state = seed * 2654435761u + 1u;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    v = scale * (static_cast<float>(state >> 8) / 8388608.0f - 1.0f);
  }
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string backend = argc > 1 ? argv[1] : "auto";
  try {
    rill::Context ctx("[runtime]\nbackend = \"" + backend + "\"\n");
    std::printf("rill on %s (%s)\n", ctx.backend_name(), ctx.device_name());

    // Tensors are declared after the context, so they are destroyed before it.
    rill::Tensor x(ctx, RILL_DTYPE_F32, {kRows, kDim});
    rill::Tensor gamma(ctx, RILL_DTYPE_F32, {kDim});
    rill::Tensor beta(ctx, RILL_DTYPE_F32, {kDim});
    rill::Tensor w(ctx, RILL_DTYPE_F32, {kOut, kDim});
    rill::Tensor bias(ctx, RILL_DTYPE_F32, {kOut});
    rill::Tensor y(ctx, RILL_DTYPE_F32, {kRows, kOut});
    const auto x_host = deterministic_values(kRows * kDim, 1, 2.0f);
    const auto gamma_host = deterministic_values(kDim, 2, 1.0f);
    const auto beta_host = deterministic_values(kDim, 3, 0.5f);
    const auto w_host = deterministic_values(kOut * kDim, 4, 0.3f);
    const auto bias_host = deterministic_values(kOut, 5, 0.1f);
    x.write_f32(x_host);
    gamma.write_f32(gamma_host);
    beta.write_f32(beta_host);
    w.write_f32(w_host);
    bias.write_f32(bias_host);

    // x = layer_norm(x) in place, then y = x . w^T + bias.
    const float eps = 1e-5f;
    rill::layer_norm(ctx, x, &gamma, &beta, eps, x);
    rill::gemm(ctx, x, w, &bias, 1.0f, 0.0f, y);
    const std::vector<float> y_host = y.read_f32();

    double worst = 0.0;
    for (int64_t r = 0; r < kRows; ++r) {
      double mean = 0.0, var = 0.0;
      for (int64_t k = 0; k < kDim; ++k) mean += x_host[r * kDim + k];
      mean /= kDim;
      for (int64_t k = 0; k < kDim; ++k) var += (x_host[r * kDim + k] - mean) * (x_host[r * kDim + k] - mean);
      const double inv = 1.0 / std::sqrt(var / kDim + eps);
      for (int64_t n = 0; n < kOut; ++n) {
        double acc = bias_host[n];
        for (int64_t k = 0; k < kDim; ++k)
          acc += ((x_host[r * kDim + k] - mean) * inv * gamma_host[k] + beta_host[k]) * w_host[n * kDim + k];
        const double err = std::fabs(acc - y_host[r * kOut + n]);
        if (!(err <= worst)) worst = err;
      }
    }
    std::printf("layer_norm + gemm: max |error| %.2e against double precision\n", worst);
    if (!(worst < 1e-4)) {
      std::fprintf(stderr, "embed_cpp: results differ from the reference\n");
      return 1;
    }

    // A wrong shape is reported, not crashed on: x . w^T is [kRows, kOut], not [kRows, kOut + 1].
    rill::Tensor wrong(ctx, RILL_DTYPE_F32, {kRows, kOut + 1});
    try {
      rill::gemm(ctx, x, w, nullptr, 1.0f, 0.0f, wrong);
      std::fprintf(stderr, "embed_cpp: a GEMM into a wrongly shaped output was accepted\n");
      return 1;
    } catch (const rill::Error& e) {
      std::printf("expected error: %s\n", e.what());
      if (e.status() != RILL_ERROR_SHAPE) return 1;
    }
    return 0;
  } catch (const rill::Error& e) {
    std::fprintf(stderr, "embed_cpp: %s\n", e.what());
    if (e.status() == RILL_ERROR_BACKEND_UNAVAILABLE && backend != "auto") return 77;
    return 1;
  }
}
