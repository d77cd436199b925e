// What rill needs from the operating system beyond standard C++, for POSIX and
// Windows in one place (the plugin loader keeps its own dlopen/LoadLibrary
// code). Paths are UTF-8 everywhere; on Windows they are converted to UTF-16
// for the file APIs, so names outside the ANSI code page work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace rill::platform {

// fopen for a UTF-8 path; nullptr with errno set on failure.
std::FILE* open_file(const std::string& path, const char* mode);

// Opens path for reading in binary mode if it is a regular file, and gives its
// size. Never waits on a named pipe. On failure returns nullptr and sets error to
// "cannot open: <reason>" or "not a regular file".
std::FILE* open_regular_file(const std::string& path, uint64_t& out_bytes, std::string& error);

// Creates the file at path all-or-nothing: write(file) fills a file beside
// it, which is renamed over path only when write returned true and the file
// closed cleanly, so a failure never leaves a partial file that looks like a
// result. False with error naming path (and errno's reason, unless write set
// error itself).
bool write_file_replacing(const std::string& path, const std::function<bool(std::FILE*)>& write,
                          std::string& error);

// Whether path names an existing folder.
bool is_directory(const std::string& path);

// Renames from to to in one step, replacing a file already at to (std::rename
// does not replace on Windows). On failure returns false with error set to the
// system's reason.
bool replace_file(const std::string& from, const std::string& to, std::string& error);

// Deletes the file at path if there is one (a cleanup: failure is ignored).
void remove_file(const std::string& path);

// Reads every page of [data, data + bytes) once, so that a map's pages are
// paged in now rather than by whoever reads them first (a model's first
// forward pass). Linux populates the page tables in one call
// (MADV_POPULATE_READ); elsewhere, or where the kernel refuses it, one byte
// per 4 KiB is read.
void prefault_pages(const void* data, size_t bytes);

// A whole regular file mapped read-only into memory.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  // Maps path. On failure returns false with error set to "cannot open: ...",
  // "cannot stat: ...", "not a regular file" or "cannot map: ...". An empty
  // file maps to data() == nullptr, size() == 0.
  bool open(const std::string& path, std::string& error);
  const unsigned char* data() const { return static_cast<const unsigned char*>(data_); }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// Whether the process's standard error is an interactive terminal.
bool stderr_is_terminal();

// The machine's physical memory in bytes, or 0 when it cannot be told.
uint64_t physical_memory_bytes();

// The running process's id (to name temporary files uniquely).
uint64_t process_id();

// Memory aligned to alignment (a power of two); bytes must be a multiple of
// it. Freed with aligned_free and the same alignment. nullptr when out of
// memory. Allocated through operator new (see tests/fault).
void* aligned_alloc(size_t alignment, size_t bytes);
void aligned_free(void* memory, size_t alignment);

#ifdef _WIN32
// UTF-8 to UTF-16 for the Windows wide-character APIs; invalid UTF-8 bytes
// become U+FFFD.
std::wstring to_wide(const std::string& utf8);
// UTF-16 from the Windows APIs back to UTF-8.
std::string to_utf8(const std::wstring& wide);
#endif

}  // namespace rill::platform
