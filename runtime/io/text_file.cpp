#include "io/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rill::io {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

}  // namespace

ReadResult read_text_file(const std::string& path, std::string& out, std::string& error) {
  // O_NONBLOCK: opening a named pipe must not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return ReadResult::missing;
    error = std::string("cannot open: ") + std::strerror(errno);
    return ReadResult::failed;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    error = std::string("not a regular file (") + kind_of(info.st_mode) + ")";
    ::close(fd);
    return ReadResult::failed;
  }
  std::string text;
  char chunk[65536];
  for (;;) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      error = std::string("cannot read: ") + std::strerror(errno);
      ::close(fd);
      return ReadResult::failed;
    }
    text.append(chunk, static_cast<size_t>(got));
  }
  ::close(fd);
  out = std::move(text);
  return ReadResult::ok;
}

}  // namespace rill::io
