#include "io/text_file.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "platform/platform.h"

namespace rill::io {

ReadResult read_text_file(const std::string& path, std::string& out, std::string& error) {
  uint64_t bytes = 0;
  std::string open_error;
  // The platform layer refuses anything but a regular file without waiting on
  // a named pipe.
  std::FILE* file = platform::open_regular_file(path, bytes, open_error);
  if (file == nullptr) {
    if (errno == ENOENT && open_error.rfind("cannot open", 0) == 0) return ReadResult::missing;
    error = open_error;
    return ReadResult::failed;
  }
  std::string text;
  char chunk[65536];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof chunk, file)) > 0) text.append(chunk, got);
  const bool failed = std::ferror(file) != 0;
  const int read_errno = errno;
  std::fclose(file);
  if (failed) {
    error = std::string("cannot read: ") + std::strerror(read_errno);
    return ReadResult::failed;
  }
  out = std::move(text);
  return ReadResult::ok;
}

}  // namespace rill::io
