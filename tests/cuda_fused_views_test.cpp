// The CUDA backend's fused add+norm equals residual_add followed by the plain
// norm bit for bit (the contract of rill_fused_add_rms_norm), also when some
// operands are views at odd element offsets, which the 16-byte vector loads
// cannot serve; activations and a GEMM bias at such offsets give the bits of
// aligned operands. The public API makes no such views, so this test drives the
// plugin's backend table directly, loaded with dlopen as the runtime does, and
// places each operand at an offset of its own within a buffer.
// Without a usable CUDA device the test reports skipped (77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "direct_plugin.h"
#include "rill_backend.h"

namespace {

const rill_backend* g_backend = nullptr;
rill_backend_context* g_ctx = nullptr;
std::string g_last_error;

void host_log(rill_log_level, const char*, const char*) {}

rill_status host_fail(rill_status status, const char* message) {
  g_last_error = message;
  return status;
}

const rill_host_services g_host = {RILL_BACKEND_ABI_VERSION, sizeof(rill_host_services), host_log, host_fail};

size_t dtype_bytes(rill_dtype dtype) { return dtype == RILL_DTYPE_F32 ? 4 : 2; }

// Random values as raw storage bits, all finite and within a few binades of 1
// so that sums of squares carry rounding in their last bits.
std::vector<unsigned char> random_bits(size_t count, rill_dtype dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> bytes(count * dtype_bytes(dtype));
  for (size_t i = 0; i < count; ++i) {
    const auto r = static_cast<uint32_t>(rng());
    const uint32_t sign = r >> 31;
    if (dtype == RILL_DTYPE_F32) {
      const uint32_t bits = (sign << 31) | ((125u + (r >> 23) % 4u) << 23) | (static_cast<uint32_t>(rng()) & 0x7FFFFFu);
      std::memcpy(&bytes[i * 4], &bits, 4);
    } else if (dtype == RILL_DTYPE_F16) {
      const auto bits = static_cast<uint16_t>((sign << 15) | ((13u + (r >> 10) % 4u) << 10) | (r & 0x3FFu));
      std::memcpy(&bytes[i * 2], &bits, 2);
    } else {
      const auto bits = static_cast<uint16_t>((sign << 15) | ((125u + (r >> 7) % 4u) << 7) | (r & 0x7Fu));
      std::memcpy(&bytes[i * 2], &bits, 2);
    }
  }
  return bytes;
}

// Which operands sit one element past a 16-byte boundary.
struct Layout {
  const char* name;
  bool x, residual, gain, weight, bias;
};

const Layout kLayouts[] = {
    {"all aligned", false, false, false, false, false}, {"gain misaligned", false, false, true, false, false},
    {"weight misaligned", false, false, false, true, false}, {"bias misaligned", false, false, false, false, true},
    {"x misaligned", true, false, false, false, false},     {"residual misaligned", false, true, false, false, false},
    {"all misaligned", true, true, true, true, true},
};

// A view of shape in a buffer of its own (added to buffers), at offset 0 or,
// misaligned, one element in, holding bytes.
rill_backend_tensor make_view(std::vector<rill_backend_buffer*>& buffers, rill_dtype dtype,
                              const std::vector<int64_t>& shape, bool misaligned, const std::vector<unsigned char>& bytes) {
  rill_backend_buffer* buffer = nullptr;
  REQUIRE_MESSAGE(g_backend->buffer_alloc(g_ctx, bytes.size() + 16, &buffer) == RILL_OK, g_last_error);
  buffers.push_back(buffer);
  rill_backend_tensor t{};
  t.buffer = buffer;
  t.offset = misaligned ? dtype_bytes(dtype) : 0;
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(shape.size());
  for (int64_t& s : t.shape) s = 1;
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  REQUIRE_MESSAGE(g_backend->buffer_write(g_ctx, buffer, t.offset, bytes.data(), bytes.size()) == RILL_OK,
                  g_last_error);
  return t;
}

std::vector<unsigned char> read_view(const rill_backend_tensor& t) {
  size_t n = dtype_bytes(t.dtype);
  for (int32_t i = 0; i < t.ndim; ++i) n *= static_cast<size_t>(t.shape[i]);
  std::vector<unsigned char> bytes(n);
  REQUIRE_MESSAGE(g_backend->buffer_read(g_ctx, t.buffer, t.offset, bytes.data(), n) == RILL_OK, g_last_error);
  return bytes;
}

// The operands of one add+norm call, each in its own buffer at offset 0 or
// one element in.
struct Operands {
  rill_backend_context* const ctx = g_ctx;
  std::vector<rill_backend_buffer*> buffers;
  rill_backend_tensor x{}, residual{}, gain{}, weight{}, bias{};

  Operands(rill_dtype dtype, int64_t rows, int64_t d, const Layout& layout) {
    const size_t n = static_cast<size_t>(rows * d);
    x = make(dtype, rows, d, layout.x, random_bits(n, dtype, 1));
    residual = make(dtype, rows, d, layout.residual, random_bits(n, dtype, 2));
    gain = make(dtype, 1, d, layout.gain, random_bits(static_cast<size_t>(d), dtype, 3));
    weight = make(dtype, 1, d, layout.weight, random_bits(static_cast<size_t>(d), dtype, 4));
    bias = make(dtype, 1, d, layout.bias, random_bits(static_cast<size_t>(d), dtype, 5));
  }
  ~Operands() {
    for (rill_backend_buffer* b : buffers) g_backend->buffer_free(ctx, b);
  }
  Operands(const Operands&) = delete;
  Operands& operator=(const Operands&) = delete;

  rill_backend_tensor make(rill_dtype dtype, int64_t rows, int64_t d, bool misaligned,
                           const std::vector<unsigned char>& bytes) {
    return make_view(buffers, dtype, rows > 1 ? std::vector<int64_t>{rows, d} : std::vector<int64_t>{d}, misaligned,
                     bytes);
  }

  std::vector<unsigned char> read(const rill_backend_tensor& t) const { return read_view(t); }

  // Runs fused add+norm (or residual_add then the norm) and returns the new
  // residual and x.
  std::vector<unsigned char> run(bool fused, bool layer) {
    const rill_backend_ops& ops = *g_backend->ops;
    const float eps = 1e-5f, residual_scale = 0.7f, update_scale = 1.3f;
    rill_status status;
    if (fused) {
      status = layer ? ops.fused_add_layer_norm(ctx, &x, &residual, &gain, &weight, &bias, eps, residual_scale,
                                                update_scale)
                     : ops.fused_add_rms_norm(ctx, &x, &residual, &gain, &weight, eps, residual_scale, update_scale);
    } else {
      status = ops.residual_add(ctx, &residual, &x, &gain, residual_scale, update_scale);
      if (status == RILL_OK) {
        status = layer ? ops.layer_norm(ctx, &residual, &weight, &bias, eps, &x)
                       : ops.rms_norm(ctx, &residual, &weight, eps, &x);
      }
    }
    REQUIRE_MESSAGE(status == RILL_OK, g_last_error);
    std::vector<unsigned char> result = read(residual);
    const std::vector<unsigned char> normalized = read(x);
    result.insert(result.end(), normalized.begin(), normalized.end());
    return result;
  }
};

const char* dtype_name(rill_dtype dtype) {
  return dtype == RILL_DTYPE_F32 ? "f32" : dtype == RILL_DTYPE_F16 ? "f16" : "bf16";
}

// Every layout, fused and unfused, gives the bits of the unfused sequence on
// aligned operands.
void check_all_layouts(rill_dtype dtype, int64_t rows, int64_t d, bool layer) {
  std::vector<unsigned char> reference;
  {
    Operands aligned(dtype, rows, d, kLayouts[0]);
    reference = aligned.run(false, layer);
  }
  for (const Layout& layout : kLayouts) {
    for (bool fused : {false, true}) {
      INFO(dtype_name(dtype) << " [" << rows << ", " << d << "] " << (layer ? "layer_norm " : "rms_norm ")
                             << (fused ? "fused, " : "unfused, ") << layout.name);
      Operands operands(dtype, rows, d, layout);
      CHECK(operands.run(fused, layer) == reference);
    }
  }
}

}  // namespace

TEST_CASE("fused add+norm equals residual_add then the norm bit for bit, with operands at odd offsets") {
  // D a multiple of the 16-byte pack (the vector path when aligned) and one
  // that is not; decode-sized and prefill-sized row counts (different teams).
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    for (int64_t d : {int64_t{4096}, int64_t{1000}, int64_t{777}}) {
      for (int64_t rows : {int64_t{3}, int64_t{600}}) {
        check_all_layouts(dtype, rows, d, false);
        check_all_layouts(dtype, rows, d, true);
      }
    }
  }
}

// Operands of one op, each in its own buffer at offset 0 or one element in.
struct Views {
  std::vector<rill_backend_buffer*> buffers;
  Views() = default;
  ~Views() {
    for (rill_backend_buffer* b : buffers) g_backend->buffer_free(g_ctx, b);
  }
  Views(const Views&) = delete;
  Views& operator=(const Views&) = delete;
  rill_backend_tensor make(rill_dtype dtype, const std::vector<int64_t>& shape, bool misaligned, uint32_t seed) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return make_view(buffers, dtype, shape, misaligned, random_bits(n, dtype, seed));
  }
};

TEST_CASE("gemm with a bias view off cuBLASLt's 16-byte alignment gives the aligned bias's bits") {
  // The misaligned bias is copied to an aligned area first; a, w and out are
  // aligned in both runs, so the same cuBLASLt algorithm runs on the same
  // values.
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    INFO(dtype_name(dtype));
    std::vector<unsigned char> results[2];
    for (int misaligned = 0; misaligned < 2; ++misaligned) {
      Views views;
      const rill_backend_tensor a = views.make(dtype, {5, 256}, false, 21);
      const rill_backend_tensor w = views.make(dtype, {200, 256}, false, 22);
      const rill_backend_tensor bias = views.make(dtype, {200}, misaligned != 0, 23);
      const rill_backend_tensor out = views.make(dtype, {5, 200}, false, 24);
      REQUIRE_MESSAGE(g_backend->ops->gemm(g_ctx, &a, &w, &bias, 1.0f, 0.0f, &out) == RILL_OK, g_last_error);
      results[misaligned] = read_view(out);
    }
    CHECK(results[1] == results[0]);
  }
}

TEST_CASE("activation with operands at odd offsets (element by element) gives the 16-byte path's bits") {
  // Aligned operands go in 16-byte packs plus a tail of count % pack
  // elements; any misaligned one sends every element through the scalar
  // path. Each element's arithmetic is the same on both.
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    for (rill_act_fn fn : {RILL_ACT_SILU, RILL_ACT_GELU_TANH}) {
      INFO(dtype_name(dtype) << " fn " << static_cast<int>(fn));
      std::vector<unsigned char> results[2];
      for (int misaligned = 0; misaligned < 2; ++misaligned) {
        Views views;
        const rill_backend_tensor x = views.make(dtype, {3, 1001}, misaligned != 0, 31);
        const rill_backend_tensor up = views.make(dtype, {3, 1001}, false, 32);
        const rill_backend_tensor out = views.make(dtype, {3, 1001}, false, 33);
        REQUIRE_MESSAGE(g_backend->ops->activation(g_ctx, fn, &x, &up, &out) == RILL_OK, g_last_error);
        results[misaligned] = read_view(out);
      }
      CHECK(results[1] == results[0]);
    }
  }
}

int main(int argc, char** argv) {
  if (const int loaded = load_plugin_with_device(RILL_CUDA_PLUGIN, "CUDA", &g_host, g_last_error, &g_backend);
      loaded != 0) {
    return loaded;
  }
  // A device the build has no kernels for fails context creation as unavailable.
  rill_backend_context_options options{};
  options.struct_size = sizeof options;
  const rill_status created = g_backend->context_create(&options, &g_ctx);
  if (created == RILL_ERROR_BACKEND_UNAVAILABLE) {
    std::printf("skipped: %s\n", g_last_error.c_str());
    return 77;
  }
  if (created != RILL_OK) {
    std::printf("context_create failed: %s\n", g_last_error.c_str());
    return 1;
  }

  doctest::Context runner(argc, argv);
  const int result = runner.run();
  g_backend->context_destroy(g_ctx);
  // The plugin stays loaded until exit, as the runtime keeps it.
  return result;
}
