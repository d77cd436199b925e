// One real backend (RILL_TEST_BACKEND: cpu, vulkan or cuda) driven through its
// table as the runtime drives it:
//  - at every interface version it advertises, the table it hands a host that
//    offers only that version carries the version and the struct_sizes the
//    version defines, and ops of that version run through it;
//  - struct_size is the caller's size: nothing past it is read or written;
//  - the capability query answers from the backend's real limits, naming the
//    op, the parameter and the limit;
//  - a wrapped buffer (buffer_wrap_host) is read in place, never written,
//    and never read past its last byte. The op is optional: on a backend
//    without it those cases are left out, and doctest counts them skipped.
// Exits 77 (skipped) when the backend has no usable device here.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__linux__)
#  include <sys/mman.h>
#  include <unistd.h>
#endif

#include "cpu_backend.h"
#include "direct_plugin.h"
#include "rill_backend.h"
#include "test_helpers.h"

namespace {

std::string g_last_error;

void host_log(rill_log_level, const char*, const char*) {}

rill_status host_fail(rill_status status, const char* message) {
  g_last_error = message != nullptr ? message : "";
  return status;
}

const rill_host_services g_host = {RILL_BACKEND_ABI_VERSION, sizeof(rill_host_services), host_log, host_fail};

// The backend under test. The built-in CPU backend has no entry points: it
// serves the newest version only.
std::string g_name;
rill_plugin_negotiate_fn g_negotiate = nullptr;
rill_plugin_init_fn g_init = nullptr;

// The versions the backend advertises to a host that offers them all.
std::vector<uint32_t> advertised_versions() {
  if (g_negotiate == nullptr) return {RILL_BACKEND_ABI_VERSION};
  std::vector<uint32_t> versions;
  for (uint32_t v = RILL_BACKEND_ABI_MIN_VERSION; v <= RILL_BACKEND_ABI_VERSION; ++v) {
    if (g_negotiate(v, v) == v) versions.push_back(v);
  }
  return versions;
}

// The table the backend hands a host that offers only version v.
const rill_backend* table_at(uint32_t v) {
  if (g_negotiate == nullptr) return rill_cpu_backend_get(&g_host);
  const rill_backend* table = nullptr;
  REQUIRE_MESSAGE(g_init(v, &g_host, &table) == RILL_OK, g_last_error);
  REQUIRE(table != nullptr);
  return table;
}

const rill_backend* newest() { return table_at(advertised_versions().back()); }

// A context on device 0 with the options' defaults.
struct Context {
  const rill_backend* table;
  rill_backend_context* ctx = nullptr;
  std::vector<rill_backend_buffer*> buffers;

  explicit Context(const rill_backend* t) : table(t) {
    rill_backend_context_options options{};
    options.struct_size = sizeof options;
    REQUIRE_MESSAGE(table->context_create(&options, &ctx) == RILL_OK, g_last_error);
  }
  ~Context() {
    for (rill_backend_buffer* b : buffers) table->buffer_free(ctx, b);
    table->context_destroy(ctx);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // An f32 tensor of shape [1, values.size()] holding values.
  rill_backend_tensor tensor(const std::vector<float>& values) {
    rill_backend_buffer* buffer = nullptr;
    const uint64_t bytes = values.size() * sizeof(float);
    REQUIRE_MESSAGE(table->buffer_alloc(ctx, bytes, &buffer) == RILL_OK, g_last_error);
    buffers.push_back(buffer);
    REQUIRE_MESSAGE(table->buffer_write(ctx, buffer, 0, values.data(), bytes) == RILL_OK, g_last_error);
    rill_backend_tensor t{};
    t.buffer = buffer;
    t.dtype = RILL_DTYPE_F32;
    t.ndim = 2;
    for (int64_t& dim : t.shape) dim = 1;
    t.shape[1] = static_cast<int64_t>(values.size());
    return t;
  }
  std::vector<float> read(const rill_backend_tensor& t) {
    std::vector<float> out(static_cast<size_t>(t.shape[1]));
    REQUIRE_MESSAGE(table->buffer_read(ctx, t.buffer, 0, out.data(), out.size() * sizeof(float)) == RILL_OK,
                    g_last_error);
    return out;
  }
};

rill_backend_op_desc desc_of(rill_backend_op op) {
  rill_backend_op_desc desc{};
  desc.struct_size = sizeof desc;
  desc.op = op;
  desc.dtype = RILL_DTYPE_F32;
  desc.batch = 1;
  desc.rows = 4;
  desc.cols = 64;
  desc.n = 64;
  desc.kv_length = 4;
  desc.heads = 4;
  desc.kv_heads = 2;
  desc.head_dim = 64;
  desc.rotary_dim = 64;
  desc.act_fn = RILL_ACT_SILU;
  return desc;
}

// The attention head_dim limit of each GPU backend's kernels (MAX_HEAD_DIM of
// attention.comp, kMaxHeadDim of cuda_layer_ops.cu); the CPU has none.
int64_t attention_head_dim_limit() { return g_name == "cpu" ? 0 : 256; }

}  // namespace

TEST_CASE("the backend serves every interface version from its oldest to its newest") {
  const std::vector<uint32_t> versions = advertised_versions();
  REQUIRE(!versions.empty());
  CHECK(versions.back() == RILL_BACKEND_ABI_VERSION);
  for (size_t i = 1; i < versions.size(); ++i) CHECK(versions[i] == versions[i - 1] + 1);
  if (g_negotiate != nullptr) CHECK(versions.front() == 1u);
}

TEST_CASE("at each version: the table carries it, and its ops run") {
  for (uint32_t v : advertised_versions()) {
    CAPTURE(v);
    const rill_backend* table = table_at(v);
    // What the runtime's loader requires of a table (runtime/plugin_loader.cpp).
    CHECK(table->abi_version == v);
    CHECK(table->name == g_name);
    REQUIRE(table->ops != nullptr);
    CHECK(table->ops->abi_version == v);
    CHECK(table->struct_size == RILL_BACKEND_SIZE(v));
    CHECK(table->ops->struct_size == RILL_BACKEND_OPS_SIZE(v));

    Context c(table);
    rill_backend_tensor residual = c.tensor({1, 2, 3, 4});
    const rill_backend_tensor update = c.tensor({10, 20, 30, 40});
    REQUIRE_MESSAGE(table->ops->residual_add(c.ctx, &residual, &update, nullptr, 1.0f, 0.5f) == RILL_OK,
                    g_last_error);
    CHECK(c.read(residual) == std::vector<float>{6, 12, 18, 24});
    if (v >= 2) {
      rill_backend_tensor x = c.tensor({-1, 2, -3, 4});
      REQUIRE_MESSAGE(table->ops->activation(c.ctx, RILL_ACT_RELU, &x, nullptr, &x) == RILL_OK, g_last_error);
      CHECK(c.read(x) == std::vector<float>{0, 2, 0, 4});
    }
    if (v >= 3) {
      REQUIRE((table->ops->supports != nullptr));
      const rill_backend_op_desc gemm = desc_of(RILL_BACKEND_OP_GEMM);
      CHECK_MESSAGE(table->ops->supports(c.ctx, &gemm) == RILL_OK, g_last_error);
    }
    if (v >= 5) {
      // torch.clamp(x, -0.5, 0.5): the infinities clamp, NaN stays NaN; in place and into another tensor.
      const std::vector<float> in = {-3.0f, -0.5f, 0.25f, 0.5f, 2.0f, -INFINITY, INFINITY, NAN, -0.0f, 0.4999f};
      const std::vector<float> want = {-0.5f, -0.5f, 0.25f, 0.5f, 0.5f, -0.5f, 0.5f, NAN, -0.0f, 0.4999f};
      REQUIRE((table->ops->clamp != nullptr));
      rill_backend_tensor x = c.tensor(in);
      const rill_backend_tensor out = c.tensor(std::vector<float>(in.size(), 7.0f));
      REQUIRE_MESSAGE(table->ops->clamp(c.ctx, &x, -0.5f, 0.5f, &out) == RILL_OK, g_last_error);
      REQUIRE_MESSAGE(table->ops->clamp(c.ctx, &x, -0.5f, 0.5f, &x) == RILL_OK, g_last_error);
      for (const rill_backend_tensor* t : {&out, static_cast<const rill_backend_tensor*>(&x)}) {
        const std::vector<float> got = c.read(*t);
        for (size_t i = 0; i < want.size(); ++i) {
          CAPTURE(i);
          CHECK(std::isnan(got[i]) == std::isnan(want[i]));
          if (!std::isnan(want[i])) CHECK((got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i])));
        }
      }
    }
  }
}

namespace {

// Whether the backend's newest table has the optional buffer_wrap_host. main
// leaves the "buffer_wrap_host: " cases out when it has not (the runtime then
// copies weights), so that doctest counts them as skipped, not passed.
bool has_buffer_wrap_host() {
  const rill_backend* table = nullptr;
  if (g_init == nullptr) {
    table = rill_cpu_backend_get(&g_host);
  } else if (g_init(advertised_versions().back(), &g_host, &table) != RILL_OK || table == nullptr) {
    return true;  // the cases run, and fail on the table
  }
  return table->ops->struct_size > offsetof(rill_backend_ops, buffer_wrap_host) && table->ops->buffer_wrap_host;
}

// The newest table's buffer_wrap_host, which the cases below require.
decltype(rill_backend_ops::buffer_wrap_host) buffer_wrap_host_of(const rill_backend& table) {
  REQUIRE(table.ops->struct_size > offsetof(rill_backend_ops, buffer_wrap_host));
  const bool present = table.ops->buffer_wrap_host != nullptr;
  REQUIRE(present);
  return table.ops->buffer_wrap_host;
}

}  // namespace

TEST_CASE("buffer_wrap_host: ops read the host memory in place, and nothing writes or frees it") {
  const rill_backend* table = newest();
  const auto wrap = buffer_wrap_host_of(*table);
  alignas(64) float host[8] = {0, 0, 0, 0, 1, 2, 3, 4};  // wrapped from 16 bytes in
  Context c(table);
  rill_backend_buffer* buffer = nullptr;
  REQUIRE_MESSAGE(wrap(c.ctx, host + 4, 4 * sizeof(float), &buffer) == RILL_OK, g_last_error);
  c.buffers.push_back(buffer);  // freed with the context: host must outlive it, untouched
  rill_backend_tensor update{};
  update.buffer = buffer;
  update.dtype = RILL_DTYPE_F32;
  update.ndim = 2;
  for (int64_t& dim : update.shape) dim = 1;
  update.shape[1] = 4;
  // Changed after the wrap: an op that reads a copy would not see it.
  host[7] = 40;
  rill_backend_tensor residual = c.tensor({10, 20, 30, 40});
  REQUIRE_MESSAGE(table->ops->residual_add(c.ctx, &residual, &update, nullptr, 1.0f, 1.0f) == RILL_OK, g_last_error);
  CHECK(c.read(residual) == std::vector<float>{11, 22, 33, 80});
  CHECK(c.read(update) == std::vector<float>{1, 2, 3, 40});
  const float other[4] = {9, 9, 9, 9};
  g_last_error.clear();
  CHECK(table->buffer_write(c.ctx, buffer, 0, other, sizeof other) == RILL_ERROR_INVALID_ARGUMENT);
  CHECK(g_last_error.find("read-only") != std::string::npos);
  CHECK(table->buffer_copy(c.ctx, residual.buffer, 0, buffer, 0, sizeof other) == RILL_ERROR_INVALID_ARGUMENT);
  CHECK(host[4] == 1.0f);
  // Memory the backend cannot read in place is refused as unsupported: the runtime then copies.
  rill_backend_buffer* misaligned = nullptr;
  CHECK(wrap(c.ctx, reinterpret_cast<const char*>(host) + 1, 8, &misaligned) == RILL_ERROR_UNSUPPORTED);
  CHECK(misaligned == nullptr);
}

#if defined(__linux__)
TEST_CASE("buffer_wrap_host: gemm and get_rows read a wrapped weight up to its last byte and never past it") {
  // A weight whose last byte is the last before an inaccessible page, as a
  // GGUF file's last tensor may end at the end of its map: a kernel reading
  // past it (a vector load over the end of a row or block) faults. Its
  // results must equal those of the same bytes in an allocated buffer.
  const rill_backend* table = newest();
  const auto wrap = buffer_wrap_host_of(*table);
  Context c(table);
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  constexpr int64_t kK = 256;  // one K-format block per row
  const auto make = [&](rill_backend_buffer* buffer, rill_dtype dtype, int64_t rows, int64_t cols) {
    rill_backend_tensor t{};
    t.buffer = buffer;
    t.dtype = dtype;
    t.ndim = 2;
    for (int64_t& dim : t.shape) dim = 1;
    t.shape[0] = rows;
    t.shape[1] = cols;
    return t;
  };
  const auto allocated = [&](const void* bytes, size_t size) {
    rill_backend_buffer* buffer = nullptr;
    REQUIRE_MESSAGE(table->buffer_alloc(c.ctx, size, &buffer) == RILL_OK, g_last_error);
    c.buffers.push_back(buffer);
    REQUIRE_MESSAGE(table->buffer_write(c.ctx, buffer, 0, bytes, size) == RILL_OK, g_last_error);
    return buffer;
  };
  const auto read = [&](const rill_backend_tensor& t, size_t size) {
    std::vector<unsigned char> bytes(size);
    REQUIRE_MESSAGE(table->buffer_read(c.ctx, t.buffer, 0, bytes.data(), size) == RILL_OK, g_last_error);
    return bytes;
  };
  for (const rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16, RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0,
                                 RILL_DTYPE_Q5_0, RILL_DTYPE_Q5_1, RILL_DTYPE_Q4_K, RILL_DTYPE_Q5_K, RILL_DTYPE_Q6_K}) {
    // Activations and outputs: the weight's own element dtype, f32 for a block one.
    const rill_dtype compute = rill_backend_dtype_is_block(dtype) ? RILL_DTYPE_F32 : dtype;
    const size_t element = compute == RILL_DTYPE_F32 ? 4 : 2;
    // 12 rows: a tile of 8 and 4 row dots; 16: the last tile ends at the page.
    for (const int64_t n : {12, 16}) {
      CAPTURE(dtype);
      CAPTURE(n);
      const size_t bytes = static_cast<size_t>(n) * kK / rill_backend_block_elements(dtype) *
                           rill_backend_block_bytes(dtype);
      REQUIRE(bytes % 8 == 0);  // so that the weight is 8-byte aligned where it ends at the page
      const size_t span = (bytes + page - 1) / page * page;
      void* mapping = ::mmap(nullptr, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      REQUIRE(mapping != MAP_FAILED);
      REQUIRE(::mprotect(static_cast<char*>(mapping) + span, page, PROT_NONE) == 0);
      unsigned char* weight = static_cast<unsigned char*>(mapping) + span - bytes;
      // 0x11 bytes: small finite f32, f16 and bf16 values and block scales.
      std::memset(weight, 0x11, bytes);
      rill_backend_buffer* wrapped = nullptr;
      REQUIRE_MESSAGE(wrap(c.ctx, weight, bytes, &wrapped) == RILL_OK, g_last_error);
      const rill_backend_tensor w_wrapped = make(wrapped, dtype, n, kK);
      const rill_backend_tensor w_allocated = make(allocated(weight, bytes), dtype, n, kK);
      for (const int64_t m : {1, 5}) {  // decode; a prefill tile of 4 rows and one more
        CAPTURE(m);
        const std::vector<unsigned char> a_bytes(static_cast<size_t>(m * kK) * element, 0x22);
        const rill_backend_tensor a = make(allocated(a_bytes.data(), a_bytes.size()), compute, m, kK);
        const size_t out_bytes = static_cast<size_t>(m * n) * element;
        const std::vector<unsigned char> zeros(out_bytes, 0);
        const rill_backend_tensor out_wrapped = make(allocated(zeros.data(), out_bytes), compute, m, n);
        const rill_backend_tensor out_allocated = make(allocated(zeros.data(), out_bytes), compute, m, n);
        REQUIRE_MESSAGE(table->ops->gemm(c.ctx, &a, &w_wrapped, nullptr, 1.0f, 0.0f, &out_wrapped) == RILL_OK,
                        g_last_error);
        REQUIRE_MESSAGE(table->ops->gemm(c.ctx, &a, &w_allocated, nullptr, 1.0f, 0.0f, &out_allocated) == RILL_OK,
                        g_last_error);
        CHECK(read(out_wrapped, out_bytes) == read(out_allocated, out_bytes));
      }
      const int32_t ids[2] = {static_cast<int32_t>(n - 1), 0};
      const std::vector<unsigned char> zeros(2 * kK * sizeof(float), 0);
      const rill_backend_tensor rows_wrapped = make(allocated(zeros.data(), zeros.size()), RILL_DTYPE_F32, 2, kK);
      const rill_backend_tensor rows_allocated = make(allocated(zeros.data(), zeros.size()), RILL_DTYPE_F32, 2, kK);
      if (compute == RILL_DTYPE_F32) {  // get_rows keeps an element table's dtype
        REQUIRE_MESSAGE(table->ops->get_rows(c.ctx, &w_wrapped, ids, 2, &rows_wrapped) == RILL_OK, g_last_error);
        REQUIRE_MESSAGE(table->ops->get_rows(c.ctx, &w_allocated, ids, 2, &rows_allocated) == RILL_OK, g_last_error);
        CHECK(read(rows_wrapped, zeros.size()) == read(rows_allocated, zeros.size()));
      }
      table->buffer_free(c.ctx, wrapped);
      REQUIRE(::munmap(mapping, span + page) == 0);
    }
  }
}
#endif

TEST_CASE("describe_device writes nothing past the caller's struct_size") {
  const rill_backend* table = newest();
  constexpr unsigned char kUntouched = 0xAB;
  const uint32_t sizes[] = {static_cast<uint32_t>(offsetof(rill_backend_device_info, name)),
                            static_cast<uint32_t>(offsetof(rill_backend_device_info, type)),
                            static_cast<uint32_t>(offsetof(rill_backend_device_info, details)),
                            static_cast<uint32_t>(sizeof(rill_backend_device_info))};
  for (uint32_t size : sizes) {
    CAPTURE(size);
    rill_backend_device_info info;
    std::memset(&info, kUntouched, sizeof info);
    info.struct_size = size;
    REQUIRE_MESSAGE(table->describe_device(0, &info) == RILL_OK, g_last_error);
    CHECK(info.struct_size <= size);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&info);
    size_t first_touched = sizeof info;
    for (size_t i = size; i < sizeof info; ++i) {
      if (bytes[i] != kUntouched) {
        first_touched = i;
        break;
      }
    }
    CHECK_MESSAGE(first_touched == sizeof info, "byte ", first_touched, " past struct_size ", size, " was written");
    if (size > offsetof(rill_backend_device_info, name)) CHECK(info.name[0] != '\0');
  }
  // A struct_size that cannot hold struct_size itself is refused, untouched.
  rill_backend_device_info info;
  std::memset(&info, kUntouched, sizeof info);
  info.struct_size = 0;
  CHECK(table->describe_device(0, &info) == RILL_ERROR_INVALID_ARGUMENT);
  rill_test::expect_message_has(g_last_error, {"describe_device", "struct_size", "given 0"});
  CHECK(info.name[0] == static_cast<char>(kUntouched));
}

TEST_CASE("context_create reads nothing past the caller's struct_size") {
  const rill_backend* table = newest();
  // Past struct_size: a device that does not exist, which must not be read.
  rill_backend_context_options options{};
  options.struct_size = static_cast<uint32_t>(offsetof(rill_backend_context_options, device_index));
  options.device_index = 99;
  options.device_name = "no such device";
  rill_backend_context* ctx = nullptr;
  REQUIRE_MESSAGE(table->context_create(&options, &ctx) == RILL_OK, g_last_error);
  table->context_destroy(ctx);
}

TEST_CASE("the capability query answers from the backend's real limits") {
  const rill_backend* table = newest();
  REQUIRE((table->ops->supports != nullptr));
  Context c(table);
  const rill_backend_op ops[] = {RILL_BACKEND_OP_RESIDUAL_ADD,       RILL_BACKEND_OP_RMS_NORM,
                                 RILL_BACKEND_OP_LAYER_NORM,         RILL_BACKEND_OP_FUSED_ADD_RMS_NORM,
                                 RILL_BACKEND_OP_FUSED_ADD_LAYER_NORM, RILL_BACKEND_OP_GEMM,
                                 RILL_BACKEND_OP_ROPE,               RILL_BACKEND_OP_ATTENTION,
                                 RILL_BACKEND_OP_ACTIVATION,         RILL_BACKEND_OP_CLAMP};
  for (rill_backend_op op : ops) {
    CAPTURE(rill_backend_op_name(op));
    rill_backend_op_desc desc = desc_of(op);
    CHECK_MESSAGE(table->ops->supports(c.ctx, &desc) == RILL_OK, g_last_error);
    int32_t bad_dtype = 7;
    std::memcpy(&desc.dtype, &bad_dtype, sizeof bad_dtype);
    CHECK(table->ops->supports(c.ctx, &desc) == RILL_ERROR_DTYPE);
    rill_test::expect_message_has(g_last_error, {rill_backend_op_name(op), "dtype", "7"});
  }

  rill_backend_op_desc attention = desc_of(RILL_BACKEND_OP_ATTENTION);
  attention.head_dim = 512;
  const rill_status status = table->ops->supports(c.ctx, &attention);
  if (attention_head_dim_limit() == 0) {
    CHECK_MESSAGE(status == RILL_OK, g_last_error);
  } else {
    CHECK(status == RILL_ERROR_UNSUPPORTED);
    rill_test::expect_message_has(g_last_error,
                                  {"attention", "head_dim", std::to_string(attention_head_dim_limit()), "512"});
    // At the limit it is accepted.
    attention.head_dim = static_cast<int32_t>(attention_head_dim_limit());
    CHECK_MESSAGE(table->ops->supports(c.ctx, &attention) == RILL_OK, g_last_error);
  }

  // An operand larger than a GPU backend can bind (16 GiB of gemm weight).
  rill_backend_op_desc gemm = desc_of(RILL_BACKEND_OP_GEMM);
  gemm.n = int64_t{1} << 20;
  gemm.cols = int64_t{1} << 12;
  if (g_name == "vulkan") {
    CHECK(table->ops->supports(c.ctx, &gemm) == RILL_ERROR_UNSUPPORTED);
    rill_test::expect_message_has(g_last_error, {"gemm", "maxStorageBufferRange", "17179869184"});
  } else {
    CHECK_MESSAGE(table->ops->supports(c.ctx, &gemm) == RILL_OK, g_last_error);
  }

  // A desc whose struct_size ends before head_dim: the head_dim past it is not read.
  rill_backend_op_desc short_desc = desc_of(RILL_BACKEND_OP_ATTENTION);
  short_desc.struct_size = static_cast<uint32_t>(offsetof(rill_backend_op_desc, head_dim));
  short_desc.head_dim = 1 << 20;
  CHECK_MESSAGE(table->ops->supports(c.ctx, &short_desc) == RILL_OK, g_last_error);
}

int main(int argc, char** argv) {
  const char* name = std::getenv("RILL_TEST_BACKEND");
  g_name = name != nullptr ? name : "cpu";
  const char* path = nullptr;
#ifdef RILL_VULKAN_PLUGIN
  if (g_name == "vulkan") path = RILL_VULKAN_PLUGIN;
#endif
#ifdef RILL_CUDA_PLUGIN
  if (g_name == "cuda") path = RILL_CUDA_PLUGIN;
#endif
  if (g_name != "cpu") {
    if (path == nullptr) {
      std::printf("skipped: this build has no %s plugin\n", g_name.c_str());
      return 77;
    }
    const rill_backend* table = nullptr;
    if (const int loaded = load_plugin_with_device(path, g_name.c_str(), &g_host, g_last_error, &table); loaded != 0) {
      return loaded;
    }
    void* library = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    g_negotiate = reinterpret_cast<rill_plugin_negotiate_fn>(dlsym(library, RILL_PLUGIN_NEGOTIATE_SYMBOL));
    g_init = reinterpret_cast<rill_plugin_init_fn>(dlsym(library, RILL_PLUGIN_INIT_SYMBOL));
    // A device the build has no kernels for fails context creation as unavailable.
    rill_backend_context_options options{};
    options.struct_size = sizeof options;
    rill_backend_context* ctx = nullptr;
    const rill_status created = table->context_create(&options, &ctx);
    if (created == RILL_ERROR_BACKEND_UNAVAILABLE) {
      std::printf("skipped: %s\n", g_last_error.c_str());
      return 77;
    }
    if (created == RILL_OK) table->context_destroy(ctx);
  }
  doctest::Context runner(argc, argv);
  if (!has_buffer_wrap_host()) {
    std::printf("skipped: the %s backend has no buffer_wrap_host (optional): test cases \"buffer_wrap_host: *\"\n",
                g_name.c_str());
    runner.addFilter("test-case-exclude", "buffer_wrap_host: *");
  }
  return runner.run();
}
