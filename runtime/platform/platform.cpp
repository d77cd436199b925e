#include "platform.h"

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <io.h>
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

namespace rill::platform {

#ifdef _WIN32

std::wstring to_wide(const std::string& utf8) {
  if (utf8.empty()) return {};
  const int length = static_cast<int>(utf8.size());
  const int count = MultiByteToWideChar(CP_UTF8, 0, utf8.data(), length, nullptr, 0);
  std::wstring wide(static_cast<size_t>(count), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, utf8.data(), length, wide.data(), count);
  return wide;
}

std::string to_utf8(const std::wstring& wide) {
  if (wide.empty()) return {};
  const int length = static_cast<int>(wide.size());
  const int count = WideCharToMultiByte(CP_UTF8, 0, wide.data(), length, nullptr, 0, nullptr, nullptr);
  std::string utf8(static_cast<size_t>(count), '\0');
  WideCharToMultiByte(CP_UTF8, 0, wide.data(), length, utf8.data(), count, nullptr, nullptr);
  return utf8;
}

namespace {

std::string last_error_text() {
  const DWORD code = GetLastError();
  wchar_t* text = nullptr;
  const DWORD length = FormatMessageW(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0,
      reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::string out = length > 0 ? to_utf8(std::wstring(text, length)) : "error " + std::to_string(code);
  LocalFree(text);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == '.')) out.pop_back();
  return out;
}

}  // namespace

std::FILE* open_file(const std::string& path, const char* mode) {
  return _wfopen(to_wide(path).c_str(), to_wide(mode).c_str());
}

std::FILE* open_regular_file(const std::string& path, uint64_t& out_bytes, std::string& error) {
  const DWORD attributes = GetFileAttributesW(to_wide(path).c_str());
  if (attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY) != 0) {
    error = "not a regular file";
    return nullptr;
  }
  std::FILE* file = open_file(path, "rb");
  if (file == nullptr) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return nullptr;
  }
  // A console, pipe or device opens as well; only a disk file is accepted.
  const HANDLE handle = reinterpret_cast<HANDLE>(_get_osfhandle(_fileno(file)));
  LARGE_INTEGER size{};
  if (GetFileType(handle) != FILE_TYPE_DISK || !GetFileSizeEx(handle, &size)) {
    std::fclose(file);
    error = "not a regular file";
    return nullptr;
  }
  out_bytes = static_cast<uint64_t>(size.QuadPart);
  return file;
}

bool is_directory(const std::string& path) {
  const DWORD attributes = GetFileAttributesW(to_wide(path).c_str());
  return attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
}

bool replace_file(const std::string& from, const std::string& to, std::string& error) {
  if (MoveFileExW(to_wide(from).c_str(), to_wide(to).c_str(), MOVEFILE_REPLACE_EXISTING) != 0) return true;
  error = last_error_text();
  return false;
}

void remove_file(const std::string& path) { DeleteFileW(to_wide(path).c_str()); }

MappedFile::~MappedFile() {
  if (data_ != nullptr) UnmapViewOfFile(data_);
}

bool MappedFile::open(const std::string& path, std::string& error) {
  const HANDLE file = CreateFileW(to_wide(path).c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                                  FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) {
    // Folders cannot be opened this way; say what they are.
    error = is_directory(path) ? "not a regular file" : "cannot open: " + last_error_text();
    return false;
  }
  LARGE_INTEGER size{};
  if (GetFileType(file) != FILE_TYPE_DISK) {
    CloseHandle(file);
    error = "not a regular file";
    return false;
  }
  if (!GetFileSizeEx(file, &size)) {
    error = "cannot stat: " + last_error_text();
    CloseHandle(file);
    return false;
  }
  if (static_cast<uint64_t>(size.QuadPart) > SIZE_MAX) {
    CloseHandle(file);
    error = "cannot map: the file is larger than the address space";
    return false;
  }
  size_ = static_cast<size_t>(size.QuadPart);
  if (size_ == 0) {
    CloseHandle(file);
    return true;
  }
  // The view keeps the mapping, and the mapping the file, alive.
  const HANDLE mapping = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
  CloseHandle(file);
  if (mapping == nullptr) {
    error = "cannot map: " + last_error_text();
    return false;
  }
  data_ = MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0);
  if (data_ == nullptr) error = "cannot map: " + last_error_text();
  CloseHandle(mapping);
  return data_ != nullptr;
}

bool stderr_is_terminal() { return _isatty(_fileno(stderr)) != 0; }

uint64_t physical_memory_bytes() {
  MEMORYSTATUSEX status{};
  status.dwLength = sizeof status;
  return GlobalMemoryStatusEx(&status) ? static_cast<uint64_t>(status.ullTotalPhys) : 0;
}


uint64_t process_id() { return static_cast<uint64_t>(GetCurrentProcessId()); }

#else

std::FILE* open_file(const std::string& path, const char* mode) { return std::fopen(path.c_str(), mode); }

std::FILE* open_regular_file(const std::string& path, uint64_t& out_bytes, std::string& error) {
  // O_NONBLOCK: a named pipe must be refused, not waited on until a writer comes.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return nullptr;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    error = "not a regular file";
    return nullptr;
  }
  std::FILE* file = ::fdopen(fd, "rb");
  if (file == nullptr) {
    error = std::string("cannot open: ") + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  out_bytes = static_cast<uint64_t>(info.st_size);
  return file;
}

bool is_directory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool replace_file(const std::string& from, const std::string& to, std::string& error) {
  if (::rename(from.c_str(), to.c_str()) == 0) return true;
  error = std::strerror(errno);
  return false;
}

void remove_file(const std::string& path) { ::unlink(path.c_str()); }

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

bool MappedFile::open(const std::string& path, std::string& error) {
  // O_NONBLOCK: opening a named pipe must not wait for a writer; the check
  // below refuses anything but a regular file, where the flag changes nothing.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    error = std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd);
    return false;
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    error = "not a regular file";
    return false;
  }
  size_ = static_cast<size_t>(info.st_size);
  if (size_ == 0) {
    ::close(fd);
    return true;
  }
  void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int reason = errno;
  ::close(fd);
  if (mapping == MAP_FAILED) {
    error = std::string("cannot map: ") + std::strerror(reason);
    return false;
  }
  data_ = mapping;
  return true;
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) != 0; }

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
}


uint64_t process_id() { return static_cast<uint64_t>(::getpid()); }

#endif

void prefault_pages(const void* data, size_t bytes) {
  if (bytes == 0) return;
#if defined(MADV_POPULATE_READ)
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0) return;
#endif
  // 4 KiB: no platform rill runs on has smaller pages.
  const auto* p = static_cast<const volatile unsigned char*>(data);
  unsigned char sink = p[bytes - 1];
  for (size_t i = 0; i < bytes; i += 4096) sink = static_cast<unsigned char>(sink ^ p[i]);
  (void)sink;
}

bool write_file_replacing(const std::string& path, const std::function<bool(std::FILE*)>& write,
                          std::string& error) {
  const std::string partial = path + ".partial-" + std::to_string(process_id());
  std::FILE* file = open_file(partial, "wb");
  if (file == nullptr) return error = path + ": cannot create: " + std::strerror(errno), false;
  error.clear();
  bool ok = write(file);
  ok = std::fclose(file) == 0 && ok;
  if (!ok && error.empty()) error = path + ": write failed: " + std::strerror(errno);
  if (std::string reason; ok && !replace_file(partial, path, reason)) {
    error = path + ": cannot create: " + reason;
    ok = false;
  }
  if (!ok) remove_file(partial);
  return ok;
}

// The aligned operator new, not aligned_alloc: every host allocation of rill
// then goes through operator new, which a test can replace to fail the Nth one.
void* aligned_alloc(size_t alignment, size_t bytes) {
  return ::operator new(bytes, std::align_val_t(alignment), std::nothrow);
}

void aligned_free(void* memory, size_t alignment) { ::operator delete(memory, std::align_val_t(alignment)); }

}  // namespace rill::platform
