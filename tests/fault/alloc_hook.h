// A host-allocation failure a test can arm, as SQLite's OOM tests do: this
// folder's test executable replaces the global operator new and delete (every
// form), and on ELF systems its definitions also serve librill's calls, so
// every host allocation rill makes (its big buffers included: they come from
// the aligned operator new) goes through here. So do those of the third-party
// code rill loads (Vulkan's loader and drivers, and LLVM under lavapipe):
// those are neither counted nor failed (alloc_hook.cpp says how they are told
// apart), as a failure thrown through a driver is nothing rill can recover
// from.
#pragma once

namespace rill_fault {

// Makes the nth of rill's host allocations from now fail (1: the next one;
// when a driver's frames are on the nth's stack, the next one without): the throwing
// forms throw std::bad_alloc, the nothrow forms return nullptr. Later ones
// succeed again. 0 disarms.
void fail_allocation(long n);

// True when the allocation armed by the last fail_allocation has failed.
bool allocation_failed();

}  // namespace rill_fault
