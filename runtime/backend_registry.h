// Where backends come from: the built-in CPU backend, or a plugin
// librill-<name>.so found, loaded and checked by the plugin loader.
#pragma once

#include <cstddef>
#include <string>

#include "rill_backend.h"

namespace rill {

// A backend ready for use. Lives for the rest of the process: plugins are never
// unloaded, so no context can outlive the code it runs on.
struct Backend {
  std::string name;
  std::string origin;            // "built in", or the plugin's path
  uint32_t abi_version = 0;      // the interface version agreed with it
  const rill_backend* table = nullptr;
};

// Finds the backend called name: "cpu" is built in; any other name is loaded
// from librill-<name>.so (see plugin_loader.h). On failure returns nullptr and
// puts the reason in reason.
const Backend* acquire_backend(const std::string& name, const std::string& plugin_dir, std::string& reason);

// The op table member at byte offset member_offset of the backend's ops, or
// nullptr when the backend's ops table is too small to hold it or leaves it NULL.
template <class Fn>
Fn backend_op(const Backend& backend, size_t member_offset, Fn rill_backend_ops::*member) {
  const rill_backend_ops* ops = backend.table->ops;
  if (member_offset + sizeof(Fn) > ops->struct_size) return nullptr;
  return ops->*member;
}

}  // namespace rill

// Looks up op `member` of backend b (nullptr when absent).
#define RILL_BACKEND_OP(b, member) ::rill::backend_op((b), offsetof(rill_backend_ops, member), &rill_backend_ops::member)
