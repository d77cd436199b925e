// The sampler: turns one row of logits and the tokens seen so far into the
// probability distribution a token is drawn from, and draws it. Pure host code
// on f32 logits; the arithmetic is double.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "random.h"
#include "rill.h"

namespace rill::generate {

// The caller's params, fields past its struct_size taken from
// rill_sampler_params_init. Returns "" when they are valid, else a message
// naming the field, what was expected and what was given.
std::string read_params(const rill_sampler_params& given, rill_sampler_params& out);

// read_params for a public entry point f: NULL and invalid fields fail with
// RILL_ERROR_INVALID_ARGUMENT naming "<field_prefix>.<field>".
rill_status check_params(const std::string& f, const std::string& field_prefix, const rill_sampler_params* given,
                         rill_sampler_params& out);

// "" when every logit is finite or -inf, at least one is finite, and every
// history id is in [0, vocab); else what is wrong.
std::string check_inputs(const float* logits, size_t vocab, const int32_t* history, size_t history_count);

// The distribution over the vocabulary, in transformers' order: repetition
// penalty, presence and frequency penalties, temperature, top-k, top-p, min-p,
// softmax. Temperature 0 is greedy: all mass on the first largest penalized
// logit. Inputs must have passed check_inputs.
void distribution(const rill_sampler_params& params, const float* logits, size_t vocab, const int32_t* history,
                  size_t history_count, std::vector<double>& probabilities);

// One token from probabilities (summing to 1): the first index whose running
// sum exceeds a uniform draw in [0, 1).
int32_t draw(const std::vector<double>& probabilities, Random& random);

// distribution, then draw: the token a sampler picks. Greedy sampling without
// penalties takes the first largest logit straight from the row, without the
// distribution's passes over the vocabulary (two vectors of doubles its size,
// a few per cent of a small model's decode step); it takes the draw's random
// number all the same, so that the seeded sequence goes on as it would.
// probabilities is scratch space. Inputs must have passed check_inputs.
int32_t sample(const rill_sampler_params& params, const float* logits, size_t vocab, const int32_t* history,
               size_t history_count, std::vector<double>& probabilities, Random& random);

}  // namespace rill::generate
