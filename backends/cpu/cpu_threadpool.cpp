#include "cpu_threadpool.h"

#include <algorithm>
#include <new>

#if defined(__x86_64__) || defined(__i386__)
#  include <immintrin.h>
#  define RILL_CPU_RELAX() _mm_pause()
#else
#  define RILL_CPU_RELAX() ((void)0)
#endif

namespace rill::cpu {

namespace {
// Pause iterations a worker polls for the next job before it sleeps: a few
// tens of microseconds, so back-to-back small ops do not pay a futex wake-up
// each, while an idle context gives its cores back quickly.
constexpr int kSpinBeforeSleep = 20000;
// At most this many chunks per thread: enough to even out a thread that is
// descheduled for a while, few enough that chunks stay long and contiguous.
constexpr int64_t kChunksPerThread = 4;
// Set while this thread runs a chunk of a job: a parallel_for issued from
// inside a chunk runs inline, under the same thread index, instead of
// starting a nested job.
thread_local bool t_in_job = false;
thread_local unsigned t_thread = 0;
// The pool whose chunk this thread runs, while t_in_job.
thread_local ThreadPool* t_pool = nullptr;

struct InJob {
  InJob(ThreadPool* pool, unsigned thread) {
    t_in_job = true;
    t_thread = thread;
    t_pool = pool;
  }
  ~InJob() {
    t_in_job = false;
    t_pool = nullptr;
  }
};
}  // namespace

ThreadPool::ThreadPool(unsigned threads) {
  const unsigned n = threads == 0 ? 1 : threads;
  try {
    workers_.reserve(n - 1);
    for (unsigned t = 1; t < n; ++t) workers_.emplace_back([this, t] { worker_main(t); });
  } catch (...) {
    // A constructor that throws runs no destructor, and destroying a
    // joinable std::thread ends the process: the workers already started
    // are stopped here.
    stop_workers();
    throw;
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::parallel_for(int64_t count, int64_t grain, TaskFn fn, void* arg) {
  if (count <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_chunks = static_cast<int64_t>(size()) * kChunksPerThread;
  const int64_t chunks = std::min<int64_t>((count + grain - 1) / grain, max_chunks);
  if (t_in_job) {  // nested: the enclosing chunk's failure handling covers it
    fn(arg, 0, count, t_thread);
    return;
  }
  if (chunks <= 1 || workers_.empty()) {
    run_chunk(fn, arg, 0, count, 0);
    return;
  }
  const int64_t chunk_size = (count + chunks - 1) / chunks;
  const uint32_t chunk_count = static_cast<uint32_t>((count + chunk_size - 1) / chunk_size);

  const uint32_t generation = static_cast<uint32_t>(state_.load(std::memory_order_relaxed) >> 32) + 1;
  // Close the previous job before its parameters are overwritten. A worker
  // still late for it (it saw that job posted but has not run run_chunks yet)
  // may load some of the new parameters; each is stored with release and
  // loaded with acquire, so a worker that loads any new one then sees this
  // closed state, under which it claims nothing. Otherwise it could claim a
  // chunk under the old generation with the new job's function and count,
  // running that chunk twice and counting it done early. (Release stores and
  // acquire loads rather than fences: ThreadSanitizer does not model fences;
  // on x86 both are plain moves.)
  state_.store((static_cast<uint64_t>(generation) << 32) | UINT32_MAX, std::memory_order_relaxed);
  fn_.store(fn, std::memory_order_release);
  arg_.store(arg, std::memory_order_release);
  count_.store(count, std::memory_order_release);
  chunk_size_.store(chunk_size, std::memory_order_release);
  chunks_.store(chunk_count, std::memory_order_release);
  done_.store(0, std::memory_order_relaxed);
  state_.store(static_cast<uint64_t>(generation) << 32, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    posted_.store(generation, std::memory_order_release);
  }
  wake_.notify_all();

  run_chunks(generation, 0);
  while (done_.load(std::memory_order_acquire) != chunk_count) RILL_CPU_RELAX();
}

void ThreadPool::run_chunks(uint32_t generation, unsigned thread) {
  // Acquire pairs with the release stores in parallel_for: parameters of a
  // newer job imply that the state read below is no longer open for this
  // generation.
  const TaskFn fn = fn_.load(std::memory_order_acquire);
  void* const arg = arg_.load(std::memory_order_acquire);
  const int64_t count = count_.load(std::memory_order_acquire);
  const int64_t chunk_size = chunk_size_.load(std::memory_order_acquire);
  const uint32_t chunk_count = chunks_.load(std::memory_order_acquire);
  uint64_t state = state_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(state >> 32) != generation) return;
    const uint32_t index = static_cast<uint32_t>(state);
    if (index >= chunk_count) return;
    if (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel)) continue;
    const int64_t begin = static_cast<int64_t>(index) * chunk_size;
    run_chunk(fn, arg, begin, std::min(begin + chunk_size, count), thread);
    done_.fetch_add(1, std::memory_order_release);
    state = state_.load(std::memory_order_acquire);
  }
}

void ThreadPool::run_chunk(TaskFn fn, void* arg, int64_t begin, int64_t end, unsigned thread) {
  const InJob in_job(this, thread);
  try {
    fn(arg, begin, end, thread);
  } catch (const std::bad_alloc&) {
    record_failure(RILL_ERROR_OUT_OF_MEMORY, "cpu: out of host memory in a pool thread");
  } catch (...) {
    record_failure(RILL_ERROR_INTERNAL, "cpu: unexpected C++ exception in a pool thread");
  }
}

bool ThreadPool::record_failure(rill_status status, const std::string& message) {
  ThreadPool* pool = t_pool;
  if (!t_in_job || pool == nullptr) return false;
  std::lock_guard<std::mutex> lock(pool->failure_mutex_);
  if (pool->failure_ == RILL_OK) {
    pool->failure_ = status;
    try {
      pool->failure_message_ = message;
    } catch (...) {
      pool->failure_message_.clear();  // the status still reaches the caller
    }
  }
  return true;
}

rill_status ThreadPool::take_failure(std::string& message) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  const rill_status status = failure_;
  message.swap(failure_message_);
  failure_message_.clear();
  failure_ = RILL_OK;
  return status;
}

void ThreadPool::worker_main(unsigned thread) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t posted = posted_.load(std::memory_order_acquire);
    for (int spin = 0; posted == seen && spin < kSpinBeforeSleep && !stop_.load(std::memory_order_relaxed); ++spin) {
      RILL_CPU_RELAX();
      posted = posted_.load(std::memory_order_acquire);
    }
    if (posted == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] {
        return stop_.load(std::memory_order_relaxed) || posted_.load(std::memory_order_relaxed) != seen;
      });
      posted = posted_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = posted;
    run_chunks(seen, thread);
  }
}

}  // namespace rill::cpu
