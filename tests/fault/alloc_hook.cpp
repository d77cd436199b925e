// The replacement operator new and delete behind alloc_hook.h. They allocate
// with malloc and aligned_alloc, so that LeakSanitizer still sees every block.
#include "alloc_hook.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace rill_fault {
namespace {

std::atomic<long> g_countdown{0};
std::atomic<bool> g_failed{false};

// Counts one allocation down; true when it is the armed one.
bool fail_now() {
  if (g_countdown.load(std::memory_order_relaxed) <= 0) return false;
  if (g_countdown.fetch_sub(1) != 1) return false;
  g_failed.store(true);
  return true;
}

void* allocate(std::size_t bytes, std::size_t alignment) noexcept {
  if (fail_now()) return nullptr;
  if (bytes == 0) bytes = 1;
  if (alignment <= alignof(std::max_align_t)) return std::malloc(bytes);
  return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
}

void* allocate_or_throw(std::size_t bytes, std::size_t alignment) {
  void* p = allocate(bytes, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void fail_allocation(long n) {
  g_failed.store(false);
  g_countdown.store(n);
}

bool allocation_failed() { return g_failed.load(); }

}  // namespace rill_fault

using rill_fault::allocate;
using rill_fault::allocate_or_throw;

void* operator new(std::size_t bytes) { return allocate_or_throw(bytes, 0); }
void* operator new[](std::size_t bytes) { return allocate_or_throw(bytes, 0); }
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept { return allocate(bytes, 0); }
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept { return allocate(bytes, 0); }
void* operator new(std::size_t bytes, std::align_val_t a) {
  return allocate_or_throw(bytes, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t bytes, std::align_val_t a) {
  return allocate_or_throw(bytes, static_cast<std::size_t>(a));
}
void* operator new(std::size_t bytes, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(bytes, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t bytes, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(bytes, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
