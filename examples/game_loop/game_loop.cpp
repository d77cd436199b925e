// game_loop.cpp — a host that spends a bounded share of each 16 ms frame on
// decode work, the way a game would run a small language model beside its
// own update.
//
// Each frame:
//   1. queue this frame's decode steps (model forward, T = 1, through a KV
//      cache; each step's output is the next step's input, so nothing returns
//      to the host in between),
//   2. run the game's own update while the backend works (on GPU backends the
//      ops run asynchronously; on the CPU backend they run inside the calls),
//   3. synchronize, read the one value the game needs,
//   4. adapt the number of steps to keep rill's share under its budget, and
//      sleep to the next 16 ms tick.
// The run is bounded (--frames), so it doubles as a quick test: exit 0 when
// every frame's result is finite, 1 on an error, 77 when the requested
// backend is not available here.
//
// usage: game_loop [--backend NAME] [--frames N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rill.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::duration<double, std::milli>;

constexpr double kFrameMs = 16.0;       // the frame budget (60 Hz)
constexpr double kRillBudgetMs = 6.0;   // rill's share of it
constexpr int kMaxStepsPerFrame = 16;
constexpr int32_t kCacheTokens = 512;   // a rolling context: reset when full

std::vector<float> deterministic_values(size_t count, unsigned seed, float scale, float offset = 0.0f) {
  std::vector<float> values(count);
  unsigned state = seed * 2654435761u + 1u;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    v = offset + scale * (static_cast<float>(state >> 8) / 8388608.0f - 1.0f);
  }
  return values;
}

// Small random weights for a pre-norm SwiGLU stack without biases.
void set_weights(rill::Model& model, const rill_model_desc& d) {
  // head_dim and num_kv_heads 0 mean "derived" (see rill_model_desc).
  const int64_t dim = d.hidden_size, inter = d.intermediate_size;
  const int64_t hd = d.head_dim ? d.head_dim : dim / d.num_heads;
  const int64_t q = d.num_heads * hd, kv = (d.num_kv_heads ? d.num_kv_heads : d.num_heads) * hd;
  struct Weight {
    const char* suffix;
    std::vector<int64_t> shape;
  };
  const Weight weights[] = {{"self_attn.q_proj.weight", {q, dim}},   {"self_attn.k_proj.weight", {kv, dim}},
                            {"self_attn.v_proj.weight", {kv, dim}},  {"self_attn.o_proj.weight", {dim, q}},
                            {"mlp.gate_proj.weight", {inter, dim}},  {"mlp.up_proj.weight", {inter, dim}},
                            {"mlp.down_proj.weight", {dim, inter}},  {"input_layernorm.weight", {dim}},
                            {"post_attention_layernorm.weight", {dim}}};
  unsigned seed = 1;
  for (int layer = 0; layer < d.num_layers; ++layer) {
    for (const Weight& w : weights) {
      size_t count = 1;
      for (int64_t s : w.shape) count *= static_cast<size_t>(s);
      const bool norm = w.shape.size() == 1;
      const float scale = norm ? 0.1f : 1.0f / std::sqrt(static_cast<float>(w.shape.back()));
      model.set_weight("model.layers." + std::to_string(layer) + "." + w.suffix, w.shape,
                       deterministic_values(count, seed++, scale, norm ? 1.0f : 0.0f));
    }
  }
  model.set_weight("model.norm.weight", {dim}, deterministic_values(static_cast<size_t>(dim), seed, 0.1f, 1.0f));
}

// The game's own per-frame work: a fixed amount of particle integration.
double update_particles(std::vector<float>& pos, std::vector<float>& vel) {
  double energy = 0.0;
  for (int sub = 0; sub < 8; ++sub) {
    for (size_t i = 0; i < pos.size(); ++i) {
      vel[i] += -0.01f * pos[i];
      pos[i] += 0.01f * vel[i];
      energy += 0.5 * static_cast<double>(vel[i]) * vel[i];
    }
  }
  return energy;
}

int parse_int(const char* text, const char* option) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > 100000) {
    std::fprintf(stderr, "game_loop: %s expects an integer in [1, 100000], got '%s'\n", option, text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "auto";
  int frames = 60;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      backend = argv[++i];
    } else if (std::strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
      frames = parse_int(argv[++i], "--frames");
    } else {
      std::fprintf(stderr, "usage: game_loop [--backend NAME] [--frames N]\n");
      return 2;
    }
  }

  try {
    rill::Context ctx("[runtime]\nbackend = \"" + backend + "\"\n");
    std::printf("game_loop on %s (%s): %d frames of %.0f ms, rill budget %.0f ms per frame\n", ctx.backend_name(),
                ctx.device_name(), frames, kFrameMs, kRillBudgetMs);

    rill_model_desc desc;
    rill_model_desc_init(&desc);
    desc.num_layers = 4;
    desc.hidden_size = 256;
    desc.num_heads = 8;
    desc.num_kv_heads = 4;
    desc.intermediate_size = 512;
    rill::Model model(ctx, desc);
    set_weights(model, desc);
    model.check_weights();
    rill::KvCache cache(model, 1, kCacheTokens);
    rill::Tensor hidden(ctx, RILL_DTYPE_F32, {1, 1, desc.hidden_size});
    hidden.write_f32(deterministic_values(static_cast<size_t>(desc.hidden_size), 7, 1.0f));

    std::vector<float> pos = deterministic_values(50000, 11, 1.0f), vel(pos.size(), 0.0f);
    std::vector<float> out(static_cast<size_t>(desc.hidden_size));
    std::vector<double> frame_ms;
    int steps = 1, total_steps = 0, over_budget = 0;
    auto next_tick = Clock::now();

    for (int frame = 0; frame < frames; ++frame) {
      const auto start = Clock::now();
      if (cache.length(0) + steps > kCacheTokens) cache.set_length(0, 0);
      for (int s = 0; s < steps; ++s) rill::forward(model, &cache, hidden);  // queued
      const auto submitted = Clock::now();

      const double energy = update_particles(pos, vel);  // the game's own work, overlapping rill's
      const auto hosted = Clock::now();

      ctx.synchronize();
      out = hidden.read_f32();
      const auto done = Clock::now();
      for (float v : out) {
        if (!std::isfinite(v)) {
          std::fprintf(stderr, "game_loop: frame %d produced a non-finite hidden state\n", frame);
          return 1;
        }
      }

      const double submit_ms = Ms(submitted - start).count(), host_ms = Ms(hosted - submitted).count();
      const double wait_ms = Ms(done - hosted).count(), busy_ms = Ms(done - start).count();
      const double rill_ms = submit_ms + wait_ms;
      total_steps += steps;
      frame_ms.push_back(busy_ms);
      if (busy_ms > kFrameMs) ++over_budget;
      std::printf("frame %3d: %2d steps, submit %6.2f ms, game %6.2f ms, wait %6.2f ms, frame %6.2f ms%s"
                  " (energy %.3g, h[0] %+.4f)\n",
                  frame, steps, submit_ms, host_ms, wait_ms, busy_ms, busy_ms > kFrameMs ? " OVER" : "", energy,
                  static_cast<double>(out[0]));

      // Keep rill's share under its budget: one step more while there is
      // room for it, fewer as soon as the budget is exceeded.
      const double per_step = rill_ms / steps;
      if (rill_ms > kRillBudgetMs)
        steps = std::max(1, static_cast<int>(kRillBudgetMs / per_step));
      else if (rill_ms + per_step <= kRillBudgetMs)
        steps = std::min(kMaxStepsPerFrame, steps + 1);

      next_tick += std::chrono::duration_cast<Clock::duration>(Ms(kFrameMs));
      if (next_tick > Clock::now())
        std::this_thread::sleep_until(next_tick);
      else
        next_tick = Clock::now();  // a late frame does not make the next ones rush
    }

    std::vector<double> sorted = frame_ms;
    std::sort(sorted.begin(), sorted.end());
    std::printf("%d frames: work per frame median %.2f ms, max %.2f ms, %d over %.0f ms; %d decode steps\n", frames,
                sorted[sorted.size() / 2], sorted.back(), over_budget, kFrameMs, total_steps);
    return 0;
  } catch (const rill::Error& e) {
    std::fprintf(stderr, "game_loop: %s\n", e.what());
    if (e.status() == RILL_ERROR_BACKEND_UNAVAILABLE && backend != "auto") return 77;
    return 1;
  }
}
