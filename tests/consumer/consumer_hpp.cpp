// The C++ consumer: the installed rill.hpp wrapper, LayerNorm checked against
// a double-precision computation. Exit 0 on a match.
#include <cmath>
#include <cstdio>
#include <vector>

#include "rill.hpp"

int main() {
  try {
    rill::Context ctx("[runtime]\nbackend = \"cpu\"\n");
    const std::vector<float> values = {1, 2, 3, 4, 10, -10, 0.5f, 0.25f};
    rill::Tensor x(ctx, RILL_DTYPE_F32, {2, 4});
    x.write_f32(values);
    rill::layer_norm(ctx, x, nullptr, nullptr, 0.0f, x);
    const std::vector<float> y = x.read_f32();
    double worst = 0.0;
    for (int r = 0; r < 2; ++r) {
      double mean = 0.0, var = 0.0;
      for (int k = 0; k < 4; ++k) mean += values[r * 4 + k] / 4.0;
      for (int k = 0; k < 4; ++k) var += (values[r * 4 + k] - mean) * (values[r * 4 + k] - mean) / 4.0;
      for (int k = 0; k < 4; ++k) {
        const double err = std::fabs((values[r * 4 + k] - mean) / std::sqrt(var) - y[r * 4 + k]);
        if (!(err <= worst)) worst = err;
      }
    }
    std::printf("consumer_hpp: layer_norm max |error| %.2e: %s\n", worst, worst < 1e-5 ? "ok" : "WRONG");
    return worst < 1e-5 ? 0 : 1;
  } catch (const rill::Error& e) {
    std::fprintf(stderr, "consumer_hpp: %s\n", e.what());
    return 1;
  }
}
