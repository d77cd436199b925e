// Destroying a parsed JSON document without allocating. nlohmann::json's
// destructor moves the children of a non-empty array or object into a
// std::vector it allocates, inside a noexcept destructor: running out of
// memory there terminates the process. A document emptied from its leaves up
// is destroyed without allocating.
#pragma once

#include <nlohmann/json.hpp>

namespace rill::io {

// Empties j's arrays and objects bottom-up, to a depth of 64 (a deeper
// document, which no file rill reads has, is left to nlohmann's destructor).
// True when j is now destroyed without allocating.
inline bool release_json(nlohmann::json& j, int depth = 0) noexcept {
  if (!j.is_structured()) return true;
  if (depth >= 64) return false;
  bool all_released = true;
  for (nlohmann::json& child : j) all_released = release_json(child, depth + 1) && all_released;
  if (all_released) j.clear();
  return all_released;
}

// Releases a document (release_json) when it goes out of scope.
class JsonRelease {
 public:
  explicit JsonRelease(nlohmann::json& j) : json_(j) {}
  ~JsonRelease() { release_json(json_); }
  JsonRelease(const JsonRelease&) = delete;
  JsonRelease& operator=(const JsonRelease&) = delete;

 private:
  nlohmann::json& json_;
};

}  // namespace rill::io
