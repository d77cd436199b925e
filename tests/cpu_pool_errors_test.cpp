// A failure raised on a CPU pool worker reaches the thread that called the
// op: host->fail (which sets rill_last_error) runs on the caller's thread,
// once, with the worker's status and message, and the op returns that status.
// The ops here are test ops run through the same ops-table glue (Reported) as
// the CPU backend's own, on a real CPU context with a pool of four threads.
// The context's own limits (threads) are checked here too.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "cpu_backend.h"
#include "cpu_internal.h"

namespace {

struct FailCall {
  std::thread::id thread;
  rill_status status;
  std::string message;
};
std::vector<FailCall> g_fails;
std::mutex g_fails_mutex;

void host_log(rill_log_level, const char*, const char*) {}

rill_status host_fail(rill_status status, const char* message) {
  std::lock_guard<std::mutex> lock(g_fails_mutex);
  g_fails.push_back({std::this_thread::get_id(), status, message != nullptr ? message : ""});
  return status;
}

const rill_host_services g_host = {RILL_BACKEND_ABI_VERSION, sizeof(rill_host_services), host_log, host_fail};

// Runs a job of many chunks in which only chunks on pool workers (thread > 0)
// call failing(); the caller's own chunks wait until a worker has run one, so
// that a worker does.
template <class Failing>
void job_failing_on_workers(rill_backend_context* ctx, Failing failing) {
  std::atomic<bool> worker_ran{false};
  ctx->pool.parallel_for(64, 1, [&](int64_t, int64_t, unsigned thread) {
    if (thread == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!worker_ran.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      return;
    }
    worker_ran.store(true);
    failing(thread);
  });
  REQUIRE_MESSAGE(worker_ran.load(), "no pool worker ran a chunk");
}

rill_status op_failing_on_worker(rill_backend_context* ctx) {
  job_failing_on_workers(ctx, [](unsigned thread) {
    rill::cpu::fail(RILL_ERROR_BACKEND, "chunk on pool thread " + std::to_string(thread) + " failed");
  });
  return RILL_OK;
}

rill_status op_throwing_on_worker(rill_backend_context* ctx) {
  job_failing_on_workers(ctx, [](unsigned) { throw std::bad_alloc(); });
  return RILL_OK;
}

// Context options whose option list is threads = n.
struct ThreadsOption {
  rill_backend_option option{};
  rill_backend_context_options options{};
  explicit ThreadsOption(int64_t n) {
    option.key = "threads";
    option.type = RILL_BACKEND_OPTION_INT;
    option.int_value = n;
    options.struct_size = sizeof options;
    options.options = &option;
    options.option_count = 1;
  }
  ThreadsOption(const ThreadsOption&) = delete;
  ThreadsOption& operator=(const ThreadsOption&) = delete;
};

struct CpuContext {
  const rill_backend* table = rill_cpu_backend_get(&g_host);
  rill_backend_context* ctx = nullptr;
  CpuContext() {
    const ThreadsOption four(4);
    REQUIRE(table->context_create(&four.options, &ctx) == RILL_OK);
    REQUIRE(ctx->pool.size() == 4);
    g_fails.clear();
  }
  ~CpuContext() { table->context_destroy(ctx); }
  CpuContext(const CpuContext&) = delete;
  CpuContext& operator=(const CpuContext&) = delete;
};

}  // namespace

TEST_CASE("a failure on a pool worker is reported on the calling thread") {
  CpuContext c;
  const rill_status status = rill::cpu::Reported<op_failing_on_worker>::call(c.ctx);
  CHECK(status == RILL_ERROR_BACKEND);
  REQUIRE(g_fails.size() == 1);
  CHECK_MESSAGE((g_fails[0].thread == std::this_thread::get_id()), "host->fail ran on another thread");
  CHECK(g_fails[0].status == RILL_ERROR_BACKEND);
  CHECK_MESSAGE(g_fails[0].message.find("failed") != std::string::npos, g_fails[0].message);

  // The failure was taken: the next op starts clean.
  g_fails.clear();
  std::string left;
  CHECK(c.ctx->pool.take_failure(left) == RILL_OK);
}

TEST_CASE("an exception on a pool worker is reported on the calling thread, not a crash") {
  CpuContext c;
  const rill_status status = rill::cpu::Reported<op_throwing_on_worker>::call(c.ctx);
  CHECK(status == RILL_ERROR_OUT_OF_MEMORY);
  REQUIRE(g_fails.size() == 1);
  CHECK_MESSAGE((g_fails[0].thread == std::this_thread::get_id()), "host->fail ran on another thread");
  CHECK_MESSAGE(g_fails[0].message.find("out of host memory") != std::string::npos, g_fails[0].message);
}

TEST_CASE("context_create refuses a pool beyond 1024 threads, from an option list or a version 1-2 field") {
  const rill_backend* table = rill_cpu_backend_get(&g_host);
  for (const int64_t threads : {int64_t{1025}, int64_t{-1}, int64_t{1} << 32}) {
    CAPTURE(threads);
    const ThreadsOption too_many(threads);
    rill_backend_context* ctx = nullptr;
    g_fails.clear();
    CHECK(table->context_create(&too_many.options, &ctx) == RILL_ERROR_CONFIG);
    CHECK(ctx == nullptr);
    REQUIRE(g_fails.size() == 1);
    CHECK_MESSAGE(g_fails[0].message.find("expected 0 to 1024, got " + std::to_string(threads)) != std::string::npos,
                  g_fails[0].message);
  }
  // A version 1-2 caller: no option list, a field the host's check never read.
  rill_backend_context_options legacy{};
  legacy.struct_size = static_cast<uint32_t>(offsetof(rill_backend_context_options, options));
  legacy.threads = 100000;
  rill_backend_context* ctx = nullptr;
  g_fails.clear();
  CHECK(table->context_create(&legacy, &ctx) == RILL_ERROR_CONFIG);
  CHECK(ctx == nullptr);
  REQUIRE(g_fails.size() == 1);
  CHECK_MESSAGE(g_fails[0].message.find("got 100000") != std::string::npos, g_fails[0].message);
}
