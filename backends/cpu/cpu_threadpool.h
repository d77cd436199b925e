// A persistent pool of worker threads owned by one CPU context. The calling
// thread takes part in every job, so a pool of size 1 runs everything inline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rill.h"

namespace rill::cpu {

class ThreadPool {
 public:
  // fn(arg, begin, end, thread) handles items [begin, end); thread is the
  // index of the thread running it, 0 (the caller) to size() - 1.
  using TaskFn = void (*)(void* arg, int64_t begin, int64_t end, unsigned thread);

  // threads: total threads including the caller, at least 1. Throws
  // std::system_error when the system refuses a thread and std::bad_alloc
  // when memory runs out, having stopped the workers it started.
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Runs fn over [0, count) split into chunks of at least `grain` items, on
  // all threads of the pool, and returns when every chunk is done. One job at
  // a time: the owning context is externally synchronized.
  void parallel_for(int64_t count, int64_t grain, TaskFn fn, void* arg);

  template <class F>
  void parallel_for(int64_t count, int64_t grain, F&& body) {
    parallel_for(
        count, grain,
        [](void* arg, int64_t begin, int64_t end, unsigned thread) { (*static_cast<F*>(arg))(begin, end, thread); },
        &body);
  }

  // A failure raised while a chunk runs, on whichever thread runs it, must
  // reach the rill_last_error() of the thread that called the backend, not a
  // worker's. Inside a chunk, record_failure keeps the first failure in the
  // chunk's pool and returns true; elsewhere it returns false and the caller
  // reports the failure itself. A C++ exception that escapes a chunk is
  // recorded the same way (out of memory, or an internal error).
  static bool record_failure(rill_status status, const std::string& message);
  // The first failure recorded since the last call, or RILL_OK. Called by the
  // pool's owner once its jobs have returned.
  rill_status take_failure(std::string& message);

 private:
  void worker_main(unsigned thread);
  // Tells the workers to stop and joins them.
  void stop_workers();
  // Runs fn on [begin, end) as a chunk of this pool's job, recording a C++
  // exception that escapes it as a failure.
  void run_chunk(TaskFn fn, void* arg, int64_t begin, int64_t end, unsigned thread);
  // Claims and runs chunks of job `generation` until none is left.
  void run_chunks(uint32_t generation, unsigned thread);

  std::vector<std::thread> workers_;
  // The current job. The high 32 bits of state_ are the job's generation, the
  // low 32 bits the next chunk to claim: a claim succeeds only while the job
  // it was read for is still current, so a slow worker never runs a chunk of
  // a newer job with an older job's function.
  std::atomic<uint64_t> state_{0};
  std::atomic<TaskFn> fn_{nullptr};
  std::atomic<void*> arg_{nullptr};
  std::atomic<int64_t> count_{0};
  std::atomic<int64_t> chunk_size_{1};
  std::atomic<uint32_t> chunks_{0};
  std::atomic<uint32_t> done_{0};
  // Wake-up of sleeping workers.
  std::atomic<uint32_t> posted_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  // The first failure recorded by a chunk (record_failure).
  std::mutex failure_mutex_;
  rill_status failure_ = RILL_OK;
  std::string failure_message_;
};

}  // namespace rill::cpu
