#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace rill::generate {
namespace {

constexpr double kRemoved = -std::numeric_limits<double>::infinity();

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

// Softmax of scores into out; removed (-inf) scores get 0.
void softmax(const std::vector<double>& scores, std::vector<double>& out) {
  const double top = *std::max_element(scores.begin(), scores.end());
  out.resize(scores.size());
  double sum = 0.0;
  for (size_t i = 0; i < scores.size(); ++i) {
    out[i] = scores[i] == kRemoved ? 0.0 : std::exp(scores[i] - top);
    sum += out[i];
  }
  for (double& p : out) p /= sum;
}

// Whether any of the penalties below is on.
bool has_penalties(const rill_sampler_params& params) {
  return params.repetition_penalty != 1.0f || params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f;
}

// transformers' RepetitionPenaltyLogitsProcessor: each token seen at least once
// has its logit divided by the penalty when positive, multiplied when negative.
// OpenAI's presence and frequency penalties follow on the same counts:
// logit -= count * frequency + (count > 0) * presence.
void apply_penalties(const rill_sampler_params& params, const int32_t* history, size_t history_count,
                     std::vector<double>& scores) {
  if (!has_penalties(params)) return;
  std::unordered_map<int32_t, int64_t> counts;
  for (size_t i = 0; i < history_count; ++i) ++counts[history[i]];
  const double repetition = params.repetition_penalty;
  for (const auto& [token, count] : counts) {
    double& s = scores[static_cast<size_t>(token)];
    if (s == kRemoved) continue;
    s = s < 0.0 ? s * repetition : s / repetition;
    s -= static_cast<double>(count) * params.frequency_penalty + params.presence_penalty;
  }
}

// transformers' TopKLogitsWarper: removes every score below the k-th largest
// (ties with it stay).
void top_k(int32_t k, std::vector<double>& scores) {
  if (k <= 0 || static_cast<size_t>(k) >= scores.size()) return;
  std::vector<double> sorted(scores);
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<double>());
  const double kth = sorted[static_cast<size_t>(k - 1)];
  for (double& s : scores)
    if (s < kth) s = kRemoved;
}

// transformers' TopPLogitsWarper: sorts ascending, removes the tokens whose
// running probability stays <= 1 - top_p, and always keeps the most likely one.
// Among equal scores the lower id ranks higher (as greedy's first largest), so
// it is removed last; transformers leaves that order to torch's unstable sort.
void top_p(double p, std::vector<double>& scores) {
  if (p >= 1.0) return;
  std::vector<double> probs;
  softmax(scores, probs);
  // Removed tokens have probability 0: leaving them out of the sort changes
  // no running sum, and after top-k only k tokens are left to sort.
  std::vector<size_t> order;
  for (size_t i = 0; i < scores.size(); ++i)
    if (scores[i] != kRemoved) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return scores[a] != scores[b] ? scores[a] < scores[b] : a > b; });
  double cumulative = 0.0;
  for (size_t r = 0; r + 1 < order.size(); ++r) {
    cumulative += probs[order[r]];
    if (cumulative <= 1.0 - p) scores[order[r]] = kRemoved;
  }
}

// transformers' MinPLogitsWarper: removes the tokens less likely than min_p
// times the most likely one.
void min_p(double p, std::vector<double>& scores) {
  if (p <= 0.0) return;
  std::vector<double> probs;
  softmax(scores, probs);
  const double floor = p * *std::max_element(probs.begin(), probs.end());
  for (size_t i = 0; i < scores.size(); ++i)
    if (probs[i] < floor) scores[i] = kRemoved;
}

// The index of the first largest of n values without NaN, as std::max_element
// finds it, in two passes: the largest value, kept in eight independent
// running maxima (a single one is a chain of dependent comparisons), then the
// first index holding it.
size_t first_largest(const float* x, size_t n) {
  constexpr size_t kLanes = 8;
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
  }
  float largest = *std::max_element(lanes, lanes + kLanes);
  for (; i < n; ++i) largest = x[i] > largest ? x[i] : largest;
  return static_cast<size_t>(std::find(x, x + n, largest) - x);
}

}  // namespace

std::string read_params(const rill_sampler_params& given, rill_sampler_params& out) {
  if (given.struct_size < sizeof(uint32_t)) {
    return "struct_size: expected at least " + std::to_string(sizeof(uint32_t)) + " (sizeof(rill_sampler_params) is " +
           std::to_string(sizeof(rill_sampler_params)) + "), got " + std::to_string(given.struct_size);
  }
  rill_sampler_params params;
  rill_sampler_params_init(&params);
  const size_t size = std::min<size_t>(given.struct_size, sizeof(params));
  std::memcpy(static_cast<void*>(&params), &given, size);
  params.struct_size = sizeof(params);
  if (!std::isfinite(params.temperature) || params.temperature < 0.0f)
    return "temperature: expected a finite value >= 0 (0 = greedy), got " + number(params.temperature);
  if (params.top_k < 0) return "top_k: expected >= 0 (0 = off), got " + std::to_string(params.top_k);
  if (!(params.top_p > 0.0f && params.top_p <= 1.0f))
    return "top_p: expected a value in (0, 1] (1 = off), got " + number(params.top_p);
  if (!(params.min_p >= 0.0f && params.min_p <= 1.0f))
    return "min_p: expected a value in [0, 1] (0 = off), got " + number(params.min_p);
  if (!std::isfinite(params.repetition_penalty) || params.repetition_penalty <= 0.0f)
    return "repetition_penalty: expected a finite value > 0 (1 = off), got " + number(params.repetition_penalty);
  if (!std::isfinite(params.presence_penalty))
    return "presence_penalty: expected a finite value (0 = off), got " + number(params.presence_penalty);
  if (!std::isfinite(params.frequency_penalty))
    return "frequency_penalty: expected a finite value (0 = off), got " + number(params.frequency_penalty);
  out = params;
  return "";
}

std::string check_inputs(const float* logits, size_t vocab, const int32_t* history, size_t history_count) {
  // One pass over the bits, which the compiler vectorizes (float comparisons
  // it does not, as they may trap): a row is read for every token. Only a bad
  // row is searched again, for the message.
  constexpr uint32_t kExponent = 0x7f800000u, kMinusInf = 0xff800000u;
  uint32_t bad = 0, any_finite = 0;
  for (size_t i = 0; i < vocab; ++i) {
    uint32_t bits;
    std::memcpy(&bits, logits + i, sizeof bits);
    const uint32_t not_finite = (bits & kExponent) == kExponent ? 1u : 0u;
    bad |= not_finite & (bits != kMinusInf ? 1u : 0u);  // NaN or +inf
    any_finite |= not_finite ^ 1u;
  }
  for (size_t i = 0; bad && i < vocab; ++i) {
    if (std::isnan(logits[i]) || logits[i] == std::numeric_limits<float>::infinity())
      return "logits: expected finite values or -inf, got " + number(logits[i]) + " at " + std::to_string(i);
  }
  if (!any_finite) return "logits: expected at least one finite value, got " + std::to_string(vocab) + " times -inf";
  for (size_t i = 0; i < history_count; ++i) {
    if (history[i] < 0 || static_cast<size_t>(history[i]) >= vocab) {
      return "history: expected token ids in [0, " + std::to_string(vocab - 1) + "], got " +
             std::to_string(history[i]) + " at " + std::to_string(i);
    }
  }
  return "";
}

void distribution(const rill_sampler_params& params, const float* logits, size_t vocab, const int32_t* history,
                  size_t history_count, std::vector<double>& probabilities) {
  std::vector<double> scores(logits, logits + vocab);
  apply_penalties(params, history, history_count, scores);
  if (params.temperature == 0.0f) {
    const size_t best = static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
    probabilities.assign(vocab, 0.0);
    probabilities[best] = 1.0;
    return;
  }
  for (double& s : scores) s /= params.temperature;
  top_k(params.top_k, scores);
  top_p(params.top_p, scores);
  min_p(params.min_p, scores);
  softmax(scores, probabilities);
}

int32_t draw(const std::vector<double>& probabilities, Random& random) {
  const double u = random.uniform();
  double cumulative = 0.0;
  size_t last = 0;
  for (size_t i = 0; i < probabilities.size(); ++i) {
    if (probabilities[i] == 0.0) continue;
    cumulative += probabilities[i];
    last = i;
    if (u < cumulative) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last);  // the running sum rounded below u
}

int32_t sample(const rill_sampler_params& params, const float* logits, size_t vocab, const int32_t* history,
               size_t history_count, std::vector<double>& probabilities, Random& random) {
  if (params.temperature == 0.0f && !has_penalties(params)) {
    random.uniform();
    return static_cast<int32_t>(first_largest(logits, vocab));
  }
  distribution(params, logits, vocab, history, history_count, probabilities);
  return draw(probabilities, random);
}

}  // namespace rill::generate
