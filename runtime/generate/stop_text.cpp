#include "stop_text.h"

#include <algorithm>

namespace rill::generate {

std::string StopText::push(const std::string& piece, bool last, bool& matched) {
  // Worked on a copy of the held-back text, kept at the end: nothing before
  // that changes this object, so a failed allocation leaves it as it was.
  std::string held = held_ + piece;
  matched = false;
  // The earliest complete stop string ends the text there.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) first = std::min(first, held.find(stop));
  if (first != std::string::npos) {
    matched = true;
    held.resize(first);
    held_.clear();
    return held;
  }
  // Hold back the longest tail of held that a stop string begins with (none
  // once the generation ends).
  size_t keep = 0;
  if (!last) {
    for (const std::string& stop : stops_) {
      for (size_t n = std::min(stop.size() - 1, held.size()); n > keep; --n) {
        if (held.compare(held.size() - n, n, stop, 0, n) == 0) {
          keep = n;
          break;
        }
      }
    }
  }
  std::string tail = held.substr(held.size() - keep);
  held.resize(held.size() - keep);
  held_.swap(tail);
  return held;
}

}  // namespace rill::generate
