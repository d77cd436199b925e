// game_loop.cpp — a host that generates text with a small language model
// beside its own per-frame work, the way a game would let a character talk:
// generation is spread over frames and never takes more than its share of one.
//
// Each 16 ms frame:
//   1. run the game's own update,
//   2. call rill_session_step (one forward pass: a prompt chunk or one new
//      token) while rill's budget for the frame lasts, printing the text as
//      it streams,
//   3. sleep to the next tick.
// When a fortune ends (end-of-sequence, a stop string or the token budget) the
// session rewinds to the prompt, whose keys and values stay cached, and the
// next one starts with another seed.
// The run is bounded (--frames), so it doubles as a quick test: exit 0 when
// text came out, 1 on an error, 77 when the requested backend is not
// available here.
//
// usage: game_loop --model PATH [--backend NAME] [--frames N] [--prompt TEXT]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rill.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::duration<double, std::milli>;

constexpr double kFrameMs = 16.0;      // the frame budget (60 Hz)
constexpr double kRillBudgetMs = 6.0;  // rill's share of it
constexpr int32_t kMaxNewTokens = 48;  // per fortune

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

const char* stop_name(rill_stop_reason reason) {
  switch (reason) {
    case RILL_STOP_EOS: return "end of sequence";
    case RILL_STOP_STRING: return "stop string";
    case RILL_STOP_MAX_NEW_TOKENS: return "token budget";
    case RILL_STOP_CAPACITY: return "capacity";
    case RILL_STOP_CANCELLED: return "cancelled";
    case RILL_STOP_CALLBACK: return "callback";
    default: return "none";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "auto", model_path, prompt = "You will";
  int frames = 120;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      backend = argv[++i];
    } else if (std::strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
      frames = parse_int(argv[++i], "--frames");
    } else if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      model_path = argv[++i];
    } else if (std::strcmp(argv[i], "--prompt") == 0 && i + 1 < argc) {
      prompt = argv[++i];
    } else {
      model_path.clear();
      break;
    }
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "usage: game_loop --model PATH [--backend NAME] [--frames N] [--prompt TEXT]\n"
                         "  PATH: a Hugging Face model folder with its tokenizer.json (models/fortune)\n");
    return 2;
  }

  try {
    rill::Context ctx("[runtime]\nbackend = \"" + backend + "\"\n");
    rill::LanguageModel lm(ctx, model_path);
    rill::Tokenizer tokenizer(model_path);
    rill_session_options options;
    rill_session_options_init(&options, lm.get());  // sampling from generation_config.json
    options.max_new_tokens = kMaxNewTokens;
    rill::Session session(lm.get(), &options);
    session.set_tokenizer(tokenizer);
    session.append_text(prompt, true);
    const int32_t prompt_length = static_cast<int32_t>(session.ids().size());
    std::printf("game_loop on %s (%s): %d frames of %.0f ms, rill budget %.0f ms per frame\n%s",
                ctx.backend_name(), ctx.device_name(), frames, kFrameMs, kRillBudgetMs, prompt.c_str());
    std::fflush(stdout);

    std::vector<float> pos(50000), vel(pos.size(), 0.0f);
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
    std::vector<double> rill_ms;
    int tokens = 0, fortunes = 0, over_budget = 0;
    uint64_t seed = options.sampler.seed;
    auto next_tick = Clock::now();
    const auto print = [&](int32_t, std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      ++tokens;
      return false;
    };

    for (int frame = 0; frame < frames; ++frame) {
      update_particles(pos, vel);  // the game's own work
      const auto start = Clock::now();
      // One forward pass per step; another while the budget has room for the
      // slowest step seen.
      double slowest = 0.0;
      while (Ms(Clock::now() - start).count() + slowest <= kRillBudgetMs) {
        const auto step_start = Clock::now();
        const rill_stop_reason reason = session.step(1, print);
        slowest = std::max(slowest, Ms(Clock::now() - step_start).count());
        if (reason != RILL_STOP_NONE) {  // a fortune ended: the next one, from the cached prompt
          std::printf("  [%s]\n%s", stop_name(reason), prompt.c_str());
          ++fortunes;
          options.sampler.seed = ++seed;
          session.set_sampler(options.sampler);
          session.rewind(prompt_length);
        }
      }
      std::fflush(stdout);
      const double ms = Ms(Clock::now() - start).count();
      rill_ms.push_back(ms);
      if (ms > kRillBudgetMs) ++over_budget;
      next_tick += std::chrono::duration_cast<Clock::duration>(Ms(kFrameMs));
      if (next_tick > Clock::now())
        std::this_thread::sleep_until(next_tick);
      else
        next_tick = Clock::now();  // a late frame does not make the next ones rush
    }

    std::sort(rill_ms.begin(), rill_ms.end());
    std::printf("\n%d frames: rill per frame median %.2f ms, max %.2f ms (%d over its %.0f ms); %d tokens, %d "
                "fortunes finished\n",
                frames, rill_ms[rill_ms.size() / 2], rill_ms.back(), over_budget, kRillBudgetMs, tokens, fortunes);
    if (tokens == 0) {
      std::fprintf(stderr, "game_loop: no token came out in %d frames\n", frames);
      return 1;
    }
    return 0;
  } catch (const rill::Error& e) {
    std::fprintf(stderr, "game_loop: %s\n", e.what());
    if (e.status() == RILL_ERROR_BACKEND_UNAVAILABLE && backend != "auto") return 77;
    return 1;
  }
}
