// The C API of the sampler (rill.h, "Sampling").
#include <memory>
#include <string>
#include <vector>

#include "errors.h"
#include "sampler.h"

struct rill_sampler {
  rill_sampler_params params;
  rill::generate::Random random;
};

namespace {

// Checks the arguments shared by rill_sampler_probabilities and rill_sampler_sample.
rill_status check_row(const std::string& f, const float* logits, size_t vocab_size, const int32_t* history,
                      size_t history_count) {
  if (logits == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": logits: expected a pointer, got NULL");
  if (vocab_size == 0) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": vocab_size: expected >= 1, got 0");
  if (history == nullptr && history_count != 0) {
    return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                      f + ": history: expected a pointer for history_count " + std::to_string(history_count) + ", got NULL");
  }
  const std::string problem = rill::generate::check_inputs(logits, vocab_size, history, history_count);
  if (!problem.empty()) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": " + problem);
  return RILL_OK;
}

}  // namespace

namespace rill::generate {

rill_status check_params(const std::string& f, const std::string& field_prefix, const rill_sampler_params* given,
                         rill_sampler_params& out) {
  if (given == nullptr) {
    return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": " + field_prefix + ": expected a pointer, got NULL");
  }
  const std::string problem = read_params(*given, out);
  if (!problem.empty()) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": " + field_prefix + "." + problem);
  return RILL_OK;
}

}  // namespace rill::generate

extern "C" {

RILL_API void rill_sampler_params_init(rill_sampler_params* params) {
  if (params == nullptr) return;
  *params = rill_sampler_params{};
  params->struct_size = sizeof(rill_sampler_params);
  params->temperature = 1.0f;
  params->top_k = 0;
  params->top_p = 1.0f;
  params->min_p = 0.0f;
  params->repetition_penalty = 1.0f;
  params->presence_penalty = 0.0f;
  params->frequency_penalty = 0.0f;
  params->seed = 0;
}

RILL_API rill_status rill_sampler_probabilities(const rill_sampler_params* params, const float* logits,
                                                size_t vocab_size, const int32_t* history, size_t history_count,
                                                float* out_probabilities, size_t probability_count) {
  constexpr const char* fn = "rill_sampler_probabilities";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    rill_sampler_params p;
    RILL_CHECK(rill::generate::check_params(f, "params", params, p));
    RILL_CHECK(check_row(f, logits, vocab_size, history, history_count));
    if (out_probabilities == nullptr)
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out_probabilities: expected a pointer, got NULL");
    if (probability_count != vocab_size) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": probability_count: expected vocab_size " +
                                                         std::to_string(vocab_size) + ", got " +
                                                         std::to_string(probability_count));
    }
    std::vector<double> probabilities;
    rill::generate::distribution(p, logits, vocab_size, history, history_count, probabilities);
    for (size_t i = 0; i < vocab_size; ++i) out_probabilities[i] = static_cast<float>(probabilities[i]);
    return RILL_OK;
  });
}

RILL_API rill_status rill_sampler_create(const rill_sampler_params* params, rill_sampler** out_sampler) {
  constexpr const char* fn = "rill_sampler_create";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    rill_sampler_params p;
    RILL_CHECK(rill::generate::check_params(f, "params", params, p));
    if (out_sampler == nullptr)
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out_sampler: expected a pointer, got NULL");
    *out_sampler = new rill_sampler{p, rill::generate::Random(p.seed)};
    return RILL_OK;
  });
}

RILL_API void rill_sampler_destroy(rill_sampler* sampler) { delete sampler; }

RILL_API rill_status rill_sampler_sample(rill_sampler* sampler, const float* logits, size_t vocab_size,
                                         const int32_t* history, size_t history_count, int32_t* out_token) {
  constexpr const char* fn = "rill_sampler_sample";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (sampler == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": sampler: expected a sampler, got NULL");
    RILL_CHECK(check_row(f, logits, vocab_size, history, history_count));
    if (out_token == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out_token: expected a pointer, got NULL");
    std::vector<double> probabilities;
    *out_token = rill::generate::sample(sampler->params, logits, vocab_size, history, history_count, probabilities,
                                        sampler->random);
    return RILL_OK;
  });
}

}  // extern "C"
