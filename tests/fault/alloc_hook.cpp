// The replacement operator new and delete behind alloc_hook.h. They allocate
// with malloc and aligned_alloc, so that LeakSanitizer still sees every block.
#include "alloc_hook.h"

#include <dlfcn.h>
#include <link.h>
#include <unwind.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>

namespace rill_fault {
namespace {

std::atomic<long> g_countdown{0};
std::atomic<bool> g_failed{false};

// True when pc lies in rill's code (this test, librill, the plugins and the
// fake plugins' dependency) or in the C and C++ runtimes (which allocate for
// their callers); false for anything else: Vulkan's loader, drivers and
// layers, the libraries they bring (LLVM), the dynamic linker, JIT code.
bool rill_or_runtime(uintptr_t pc) {
  dl_find_object found;  // lock-free, and it allocates nothing (glibc 2.35)
  if (_dl_find_object(reinterpret_cast<void*>(pc), &found) != 0 || found.dlfo_link_map == nullptr) return false;
  const char* path = found.dlfo_link_map->l_name;
  if (path[0] == '\0') return true;  // the main program
  const char* slash = std::strrchr(path, '/');
  const char* name = slash != nullptr ? slash + 1 : path;
  for (const char* prefix : {"librill", "libstdc++.so", "libc.so", "libgcc_s.so", "libm.so"}) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

_Unwind_Reason_Code check_frame(_Unwind_Context* context, void* third_party) {
  // The return address minus one lies in the calling instruction, inside
  // its function even when the call is a function's last instruction.
  const uintptr_t pc = _Unwind_GetIP(context);
  if (pc == 0 || rill_or_runtime(pc - 1)) return _URC_NO_REASON;
  *static_cast<bool*>(third_party) = true;
  return _URC_END_OF_STACK;
}

// Whether a failure injected here would unwind through rill's code alone:
// no third-party frame is on the stack. A driver or loader does not expect
// rill's operator new to throw through it: Vulkan's loader then keeps its
// lock, and the process's next vkCreateInstance waits for ever; a constructor
// run by dlopen leaves the dynamic linker's lock held. Checking the whole
// stack, not only the caller, also catches a driver's call into the C++
// runtime, or into a template instance this test exports (a std::string
// member), that allocates, and rill's code called back by a driver.
bool third_party_on_stack() {
  bool third_party = false;
  _Unwind_Backtrace(check_frame, &third_party);
  return third_party;
}

// Counts one allocation down; true when it is the armed one. Allocations
// that third-party code makes itself are not counted, so that N walks rill's
// own (a driver's count would also change with the driver). The stack is
// unwound only for the armed allocation, as that costs microseconds: when
// it finds third-party frames, the next counted allocation is armed instead.
bool fail_now(const void* caller) {
  if (g_countdown.load(std::memory_order_relaxed) <= 0) return false;
  if (!rill_or_runtime(reinterpret_cast<uintptr_t>(caller) - 1)) return false;
  if (g_countdown.fetch_sub(1) != 1) return false;
  if (third_party_on_stack()) {
    g_countdown.store(1);
    return false;
  }
  g_failed.store(true);
  return true;
}

void* allocate(std::size_t bytes, std::size_t alignment, const void* caller) noexcept {
  if (fail_now(caller)) return nullptr;
  if (bytes == 0) bytes = 1;
  if (alignment <= alignof(std::max_align_t)) return std::malloc(bytes);
  return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
}

void* allocate_or_throw(std::size_t bytes, std::size_t alignment, const void* caller) {
  void* p = allocate(bytes, alignment, caller);
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

// Each form passes its caller's address, which tells whose allocation it is.
void* operator new(std::size_t bytes) { return allocate_or_throw(bytes, 0, __builtin_return_address(0)); }
void* operator new[](std::size_t bytes) { return allocate_or_throw(bytes, 0, __builtin_return_address(0)); }
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  return allocate(bytes, 0, __builtin_return_address(0));
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
  return allocate(bytes, 0, __builtin_return_address(0));
}
void* operator new(std::size_t bytes, std::align_val_t a) {
  return allocate_or_throw(bytes, static_cast<std::size_t>(a), __builtin_return_address(0));
}
void* operator new[](std::size_t bytes, std::align_val_t a) {
  return allocate_or_throw(bytes, static_cast<std::size_t>(a), __builtin_return_address(0));
}
void* operator new(std::size_t bytes, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(bytes, static_cast<std::size_t>(a), __builtin_return_address(0));
}
void* operator new[](std::size_t bytes, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(bytes, static_cast<std::size_t>(a), __builtin_return_address(0));
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
