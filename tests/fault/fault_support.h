// What the fault-injection tests share (docs/RELIABILITY.md): the walk that
// fails a call's host allocations one at a time, and a tiny model to walk.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "rill.h"
#include "test_helpers.h"

namespace rill_fault {

// What one walk saw: the calls that failed, and the N at which the call first succeeded.
struct WalkResult {
  long failed_calls = 0;
  long succeeded_at = 0;
};

// Calls call() with the Nth host allocation failing, N = 1, 2, ..., until no
// armed allocation fails in it. A call hit by the failure must return
// RILL_ERROR_OUT_OF_MEMORY (or succeed, where rill can do without the
// allocation); then after_failure() checks the state. A call that succeeded
// while an allocation failed is undone with undo() before the next N.
// before() runs ahead of each call, unarmed (to reset its inputs).
WalkResult walk_host(const char* what, const std::function<rill_status()>& call,
                     const std::function<void()>& after_failure, const std::function<void()>& undo,
                     const std::function<void()>& before = [] {});

// A one-layer model: hidden 4, one head of 4, ReLU MLP of 4, RMSNorms.
rill_model_desc tiny_desc();

// A path for this test's files in TMPDIR (or /tmp).
std::string scratch_path(const std::string& name);

// Writes a safetensors file of the tiny model's weights, F32, value i of
// tensor t being seed + 0.01 * (t * 16 + i) (so two seeds give two models).
std::string write_tiny_checkpoint(const char* file, float seed);

// The input of two tokens TinyModel::run and walk_forward pass through.
inline const std::vector<float> kTinyInput = {0.5f, -1.0f, 0.25f, 2.0f, 1.5f, 0.75f, -0.5f, 1.0f};

// A tiny model (tiny_desc) on a context of config.
struct TinyModel {
  rill_test::ScopedContext context;
  rill_model* model = nullptr;
  explicit TinyModel(const std::string& config = rill_test::kCpuConfig);
  ~TinyModel() { rill_model_destroy(model); }
  TinyModel(const TinyModel&) = delete;
  TinyModel& operator=(const TinyModel&) = delete;

  // The stack's output for a fixed input of two tokens.
  std::vector<float> run();

  // rill_model_check_weights' message, or "" when every weight is set.
  std::string missing() const;
};

// Walks rill_model_forward of tiny (its weights loaded) into a KV cache: a
// failed pass leaves the cache's length at 0, and the pass that then
// succeeds computes what a pass without the cache computes.
void walk_forward(const char* what, TinyModel& tiny);

}  // namespace rill_fault
