// Stop strings over streamed text: text comes in piece by piece (each piece
// whole UTF-8 characters) and goes out as soon as no stop string can still
// begin in it, so a host never sees part of a stop string that later
// completes, nor the stop string itself.
#pragma once

#include <string>
#include <vector>

namespace rill::generate {

class StopText {
 public:
  void add(std::string stop) { stops_.push_back(std::move(stop)); }
  void clear_stops() { stops_.clear(); }

  // Takes piece; returns the text that can go out now. matched: set when a
  // stop string completed: the text before it is returned, and the stop string
  // and anything after it are dropped. last: the generation ends here, so
  // what is still held back comes out too. Throws std::bad_alloc, leaving
  // the held-back text as it was.
  std::string push(const std::string& piece, bool last, bool& matched);

  // Drops what is held back, for a new stream of text.
  void drop() noexcept { held_.clear(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // text that may be the start of a stop string
};

}  // namespace rill::generate
