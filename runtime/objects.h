// The objects behind the public handles rill_context and rill_tensor.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>

#include "backend_registry.h"

struct rill_context {
  const rill::Backend* backend = nullptr;
  rill_backend_context* impl = nullptr;
  std::string device_name;
  std::string selection_report;
  // Live objects made on the context. rill_context_destroy releases those the
  // host has not destroyed: caches, then models (which free their own
  // tensors), then the tensors left.
  std::unordered_set<rill_tensor*> tensors;
  std::unordered_set<rill_model*> models;
  std::unordered_set<rill_kv_cache*> caches;
};

namespace rill {

// A buffer held by tensors of several contexts that share buffers (weights
// shared by rill_lm_create_shared): the last tensor to let go frees it.
struct SharedBuffer {
  std::atomic<uint32_t> holders{1};
};

}  // namespace rill

// One tensor owns one backend buffer holding exactly its elements, alone or
// (shared set) with tensors of other contexts. A buffer may wrap host memory
// read in place (buffer_wrap_host): host_memory keeps that memory (a model
// file's map) alive for as long as a tensor holds the buffer.
struct rill_tensor {
  rill_context* context = nullptr;
  rill_dtype dtype = RILL_DTYPE_F32;
  int32_t ndim = 0;
  int64_t shape[RILL_MAX_DIMS] = {1, 1, 1, 1};
  size_t numel = 0;
  size_t nbytes = 0;
  rill_backend_buffer* buffer = nullptr;
  rill::SharedBuffer* shared = nullptr;  // NULL: this tensor alone owns buffer
  std::shared_ptr<const void> host_memory;  // set: buffer wraps memory this owns
};

namespace rill {

// The backend's view of a tensor: its whole buffer.
rill_backend_tensor backend_view(const rill_tensor& tensor);

// "[4096, 896]"
std::string shape_text(const rill_tensor& tensor);

}  // namespace rill
