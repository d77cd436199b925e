// Host-side costs of the Vulkan plugin, for comparing two builds of it in one
// run: how long the calling thread is held by buffer_free while work is
// queued, by a 64 MiB buffer_read, and by the RoPE calls of one forward pass
// (q and k of 24 layers at 4096 positions). Each plugin given on the command
// line is loaded and measured in turn, the rounds interleaved, and the median
// of each is printed with its ratio to the first plugin's.
//
//   vulkan_host_costs <plugin.so> [<other plugin.so>]
//
// Not a test: its figures depend on the machine and its load.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "direct_plugin.h"
#include "rill_backend.h"

namespace {

std::string g_last_error;

rill_status host_fail(rill_status status, const char* message) {
  g_last_error = message;
  return status;
}

void host_log(rill_log_level, const char*, const char*) {}

const rill_host_services g_host = {2u, sizeof(rill_host_services), host_log, host_fail};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool ok(rill_status status, const char* what) {
  if (status == RILL_OK) return true;
  std::fprintf(stderr, "%s failed: %s\n", what, g_last_error.c_str());
  return false;
}

rill_backend_tensor tensor(rill_backend_buffer* buffer, std::vector<int64_t> shape) {
  rill_backend_tensor t{};
  t.buffer = buffer;
  t.dtype = RILL_DTYPE_F32;
  t.ndim = static_cast<int32_t>(shape.size());
  for (int i = 0; i < RILL_MAX_DIMS; ++i) t.shape[i] = i < t.ndim ? shape[static_cast<size_t>(i)] : 1;
  return t;
}

struct Costs {
  double free_ms = 0, read_ms = 0, rope_ms = 0;
};

// One round on backend: each figure is the host time of the calls it names.
bool measure(const rill_backend* backend, Costs* out) {
  rill_backend_context_options options{};
  options.struct_size = sizeof options;
  rill_backend_context* ctx = nullptr;
  if (!ok(backend->context_create(&options, &ctx), "context_create")) return false;
  bool good = true;
  const uint64_t big_elements = 16u << 20;  // 64 MiB of f32
  rill_backend_buffer* big = nullptr;
  good = good && ok(backend->buffer_alloc(ctx, big_elements * 4, &big), "buffer_alloc");
  std::vector<float> host(big_elements, 1.0f);
  good = good && ok(backend->buffer_write(ctx, big, 0, host.data(), big_elements * 4), "buffer_write");
  rill_backend_tensor t = tensor(big, {4096, 4096});
  good = good && ok(backend->synchronize(ctx), "synchronize");

  // 20 frees, each with a 64 MiB residual_add queued before it.
  for (int i = 0; good && i < 20; ++i) {
    rill_backend_buffer* small = nullptr;
    good = ok(backend->buffer_alloc(ctx, 4096, &small), "buffer_alloc") &&
           ok(backend->ops->residual_add(ctx, &t, &t, nullptr, 1.0f, 0.0f), "residual_add");
    const double start = now_ms();
    backend->buffer_free(ctx, small);
    out->free_ms += now_ms() - start;
  }
  good = good && ok(backend->synchronize(ctx), "synchronize");

  // Five 64 MiB reads of a buffer with no work pending.
  for (int i = 0; good && i < 5; ++i) {
    const double start = now_ms();
    good = ok(backend->buffer_read(ctx, big, 0, host.data(), big_elements * 4), "buffer_read");
    out->read_ms += now_ms() - start;
  }

  // RoPE of q [4096, 32, 128] and k [4096, 8, 128] in each of 24 layers.
  std::vector<int32_t> positions(4096);
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int32_t>(i);
  rill_backend_tensor q = tensor(big, {4096, 32, 128});
  rill_backend_tensor k = tensor(big, {4096, 8, 128});
  for (int layer = 0; good && layer < 24; ++layer) {
    const double start = now_ms();
    good = ok(backend->ops->rope(ctx, &q, positions.data(), 10000.0f, 128), "rope") &&
           ok(backend->ops->rope(ctx, &k, positions.data(), 10000.0f, 128), "rope");
    out->rope_ms += now_ms() - start;
  }
  good = good && ok(backend->synchronize(ctx), "synchronize");
  backend->buffer_free(ctx, big);
  backend->context_destroy(ctx);
  return good;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <plugin.so> [<other plugin.so>]\n", argv[0]);
    return 2;
  }
  std::vector<const rill_backend*> backends;
  for (int i = 1; i < argc; ++i) {
    const rill_backend* backend = nullptr;
    if (load_plugin_with_device(argv[i], "Vulkan", &g_host, g_last_error, &backend) != 0) return 1;
    backends.push_back(backend);
  }
  const int rounds = 5;
  std::vector<std::vector<Costs>> costs(backends.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t b = 0; b < backends.size(); ++b) {
      Costs c;
      if (!measure(backends[b], &c)) return 1;
      costs[b].push_back(c);
    }
  }
  std::printf("host time, median of %d interleaved rounds (ratio: first plugin / this one)\n", rounds);
  std::printf("%-40s %14s %14s %14s\n", "plugin", "20 frees ms", "5 reads ms", "48 ropes ms");
  double first[3] = {0, 0, 0};
  for (size_t b = 0; b < backends.size(); ++b) {
    std::vector<double> f, r, p;
    for (const Costs& c : costs[b]) {
      f.push_back(c.free_ms);
      r.push_back(c.read_ms);
      p.push_back(c.rope_ms);
    }
    const double m[3] = {median(f), median(r), median(p)};
    if (b == 0) std::copy(m, m + 3, first);
    std::printf("%-40s %8.2f (x%.1f) %8.2f (x%.2f) %8.2f (x%.1f)\n", argv[b + 1], m[0], first[0] / m[0], m[1],
                first[1] / m[1], m[2], first[2] / m[2]);
  }
  return 0;
}
