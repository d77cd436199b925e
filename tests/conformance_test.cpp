// The cross-backend conformance suite: every op on every dtype against a
// double-precision reference (tests/support/reference.h) computed from the
// same dtype-rounded inputs, scored by tests/support/tolerance.h (NMSE, the
// worst element, NaN/Inf), over awkward shapes and values. At the end it
// prints the largest errors it saw per dtype, the figures the limits rest
// on. Runs on the backend named by RILL_TEST_BACKEND (default "cpu"); a
// backend that cannot be had is reported as skipped (exit code 77).
// On a backend other than the CPU every result is also compared with the CPU
// backend's, and the fused ops must equal the unfused sequence bit for bit.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reference.h"
#include "rill.hpp"
#include "test_helpers.h"
#include "tolerance.h"

namespace {

std::string g_backend;
std::unique_ptr<rill::Context> g_ctx;  // the backend under test
std::unique_ptr<rill::Context> g_cpu;  // the CPU backend, when that is not the one under test

const rill_dtype kDtypes[] = {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16};

// Magnitudes that stretch the reductions without leaving what a correct f32
// accumulation of D = 4096 squares can hold (1e15^2 * 4096 < 3.4e38, and
// 1e-15^2 stays a normal f32); f16 holds only about 6e-5 to 65504.
float huge_scale(rill_dtype dtype) { return dtype == RILL_DTYPE_F16 ? 1e4f : 1e15f; }
float tiny_scale(rill_dtype dtype) { return dtype == RILL_DTYPE_F16 ? 1e-4f : 1e-15f; }

std::vector<float> random_values(size_t count, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

std::vector<float> rounded(const std::vector<float>& values, rill_dtype dtype) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<float>(rill_ref::round_to_dtype(values[i], dtype));
  return out;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// A tensor holding values (already representable in dtype). Checks that the
// runtime stored them exactly: its f32 conversion must agree with the
// independent rounding in the reference.
rill::Tensor upload(rill::Context& ctx, rill_dtype dtype, const std::vector<int64_t>& shape,
                    const std::vector<float>& values) {
  rill::Tensor t(ctx, dtype, shape);
  t.write_f32(values);
  const std::vector<float> back = t.read_f32();
  REQUIRE(std::memcmp(back.data(), values.data(), values.size() * sizeof(float)) == 0);
  return t;
}

std::vector<uint8_t> raw_bytes(const rill::Tensor& t) {
  std::vector<uint8_t> bytes(t.nbytes());
  t.read(bytes.data(), bytes.size());
  return bytes;
}

void check_close(const std::vector<float>& actual, const std::vector<double>& expected, rill_dtype dtype,
                 const char* what) {
  INFO(std::string(what));
  REQUIRE(actual.size() == expected.size());
  const rill_tol::Score score = rill_tol::score(actual, expected);
  rill_tol::note(score, dtype);
  CHECK_MESSAGE(rill_tol::within(score, dtype), rill_tol::describe(score, dtype));
}

// Results of the backend under test against the CPU backend's.
void check_against_cpu(const std::vector<std::vector<float>>& actual, const std::vector<std::vector<float>>& cpu,
                       rill_dtype dtype) {
  REQUIRE(actual.size() == cpu.size());
  for (size_t i = 0; i < actual.size(); ++i) check_close(actual[i], rill_ref::to_double(cpu[i]), dtype, "against the CPU backend");
}

// ---------------------------------------------------------------------------
// Residual add and the norms
// ---------------------------------------------------------------------------

struct RowCase {
  std::vector<int64_t> shape;
  float scale;       // inputs are offset + scale * U(-1, 1)
  float offset;
  float eps_factor;  // eps = eps_factor * scale^2, so eps means the same at every magnitude
  bool with_weight, with_bias, with_gain;
  float residual_scale, update_scale;
  bool in_place;     // norms: out aliases x
};

std::vector<RowCase> row_cases(rill_dtype dtype) {
  const std::vector<std::vector<int64_t>> shapes = {
      {1},       {1, 1},     {5, 1},     {7},          {3, 7},         {1, 4095},
      {3, 4095}, {2, 4096},  {300, 7},   {129, 96},    {2, 3, 7},      {2, 2, 3, 33},
  };
  const float huge = huge_scale(dtype), tiny = tiny_scale(dtype);
  std::vector<RowCase> cases;
  for (const std::vector<int64_t>& shape : shapes) {
    cases.push_back({shape, 1.0f, 0.0f, 1e-6f, true, true, true, 1.0f, 1.0f, false});
    cases.push_back({shape, 1.0f, 0.0f, 0.0f, false, false, false, 1.0f, 1.0f, true});
    cases.push_back({shape, 1.0f, 0.0f, 10.0f, true, true, true, 0.5f, -2.0f, false});
    cases.push_back({shape, huge, 0.0f, 1e-6f, true, false, true, 1.0f, 1.0f, false});
    cases.push_back({shape, tiny, 0.0f, 0.0f, true, true, true, 2.0f, 0.25f, true});
    cases.push_back({shape, tiny, 0.0f, 10.0f, false, false, false, 1.0f, 1.0f, false});
    // A large mean beside a small spread: LayerNorm's variance must not cancel.
    cases.push_back({shape, 1.0f, 50.0f, 1e-5f, true, true, false, 1.0f, 0.0f, false});
  }
  return cases;
}

std::string describe(const RowCase& c, rill_dtype dtype) {
  std::ostringstream s;
  s << rill_dtype_name(dtype) << " shape " << shape_text(c.shape) << " scale " << c.scale << " offset " << c.offset
    << " eps " << c.eps_factor << "*scale^2 weight " << c.with_weight << " bias " << c.with_bias << " gain "
    << c.with_gain << " residual_scale " << c.residual_scale << " update_scale " << c.update_scale << " in_place "
    << c.in_place;
  return s.str();
}

// Host inputs of one case, rounded to the dtype.
struct RowInputs {
  int64_t rows, d;
  float eps;
  std::vector<float> x, residual, weight, bias, gain;  // optional ones empty when absent
};

RowInputs make_inputs(const RowCase& c, rill_dtype dtype, uint32_t seed, bool with_residual = true) {
  RowInputs in;
  in.d = c.shape.back();
  in.rows = numel(c.shape) / in.d;
  in.eps = c.eps_factor * c.scale * c.scale;
  const size_t n = static_cast<size_t>(in.rows * in.d), d = static_cast<size_t>(in.d);
  auto shifted = [&](uint32_t s) {
    std::vector<float> v = random_values(n, s, -c.scale, c.scale);
    for (float& e : v) e += c.offset;
    return rounded(v, dtype);
  };
  in.x = shifted(seed);
  if (with_residual) in.residual = shifted(seed + 1);
  if (c.with_weight) in.weight = rounded(random_values(d, seed + 2, -1.5f, 1.5f), dtype);
  if (c.with_bias) in.bias = rounded(random_values(d, seed + 3, -1.0f, 1.0f), dtype);
  if (c.with_gain) in.gain = rounded(random_values(d, seed + 4, 0.5f, 1.5f), dtype);
  return in;
}

// Uploads an optional [D] operand.
std::unique_ptr<rill::Tensor> upload_optional(rill::Context& ctx, rill_dtype dtype, const std::vector<float>& values) {
  if (values.empty()) return nullptr;
  return std::make_unique<rill::Tensor>(upload(ctx, dtype, {static_cast<int64_t>(values.size())}, values));
}

enum class RowOp { kResidualAdd, kRmsNorm, kLayerNorm, kFusedAddRmsNorm, kFusedAddLayerNorm };

// Runs one op on ctx; returns its outputs (for the fused ops: x, then residual).
std::vector<std::vector<float>> run_row_op(rill::Context& ctx, RowOp op, rill_dtype dtype, const RowCase& c,
                                           const RowInputs& in) {
  rill::Tensor x = upload(ctx, dtype, c.shape, in.x);
  const auto weight = upload_optional(ctx, dtype, in.weight);
  const auto bias = upload_optional(ctx, dtype, in.bias);
  const auto gain = upload_optional(ctx, dtype, in.gain);
  if (op == RowOp::kRmsNorm || op == RowOp::kLayerNorm) {
    std::unique_ptr<rill::Tensor> separate;
    if (!c.in_place) separate = std::make_unique<rill::Tensor>(ctx, dtype, c.shape);
    rill::Tensor& out = c.in_place ? x : *separate;
    if (op == RowOp::kRmsNorm) {
      rill::rms_norm(ctx, x, weight.get(), in.eps, out);
    } else {
      rill::layer_norm(ctx, x, weight.get(), bias.get(), in.eps, out);
    }
    return {out.read_f32()};
  }
  rill::Tensor residual = upload(ctx, dtype, c.shape, in.residual);
  switch (op) {
    case RowOp::kResidualAdd:
      rill::residual_add(ctx, residual, x, gain.get(), c.residual_scale, c.update_scale);
      return {residual.read_f32()};
    case RowOp::kRmsNorm:
    case RowOp::kLayerNorm:
      break;  // handled above
    case RowOp::kFusedAddRmsNorm:
      rill::fused_add_rms_norm(ctx, x, residual, gain.get(), weight.get(), in.eps, c.residual_scale, c.update_scale);
      return {x.read_f32(), residual.read_f32()};
    case RowOp::kFusedAddLayerNorm:
      rill::fused_add_layer_norm(ctx, x, residual, gain.get(), weight.get(), bias.get(), in.eps, c.residual_scale,
                                 c.update_scale);
      return {x.read_f32(), residual.read_f32()};
  }
  return {};
}

// The fused op against residual_add followed by the norm, on the same
// backend: both outputs must be identical bytes.
void check_fused_equals_unfused(rill::Context& ctx, RowOp op, rill_dtype dtype, const RowCase& c,
                                const RowInputs& in) {
  rill::Tensor x1 = upload(ctx, dtype, c.shape, in.x), r1 = upload(ctx, dtype, c.shape, in.residual);
  rill::Tensor x2 = upload(ctx, dtype, c.shape, in.x), r2 = upload(ctx, dtype, c.shape, in.residual);
  const auto weight = upload_optional(ctx, dtype, in.weight);
  const auto bias = upload_optional(ctx, dtype, in.bias);
  const auto gain = upload_optional(ctx, dtype, in.gain);
  rill::residual_add(ctx, r2, x2, gain.get(), c.residual_scale, c.update_scale);
  if (op == RowOp::kFusedAddRmsNorm) {
    rill::fused_add_rms_norm(ctx, x1, r1, gain.get(), weight.get(), in.eps, c.residual_scale, c.update_scale);
    rill::rms_norm(ctx, r2, weight.get(), in.eps, x2);
  } else {
    rill::fused_add_layer_norm(ctx, x1, r1, gain.get(), weight.get(), bias.get(), in.eps, c.residual_scale,
                               c.update_scale);
    rill::layer_norm(ctx, r2, weight.get(), bias.get(), in.eps, x2);
  }
  CHECK_MESSAGE(raw_bytes(r1) == raw_bytes(r2), "fused residual differs from residual_add's");
  CHECK_MESSAGE(raw_bytes(x1) == raw_bytes(x2), "fused normalized output differs from the unfused norm's");
}

void run_row_suite(RowOp op) {
  uint32_t seed = 1000;
  for (rill_dtype dtype : kDtypes) {
    for (const RowCase& c : row_cases(dtype)) {
      INFO(g_backend << ": " << describe(c, dtype));
      const RowInputs in = make_inputs(c, dtype, seed += 10);
      // LayerNorm of a single value with eps = 0 is 0/0 (NaN) by definition.
      const bool layer_norm = op == RowOp::kLayerNorm || op == RowOp::kFusedAddLayerNorm;
      if (layer_norm && in.d == 1 && in.eps == 0.0f) continue;
      const std::vector<std::vector<float>> out = run_row_op(*g_ctx, op, dtype, c, in);
      switch (op) {
        case RowOp::kResidualAdd:
          check_close(out[0], rill_ref::residual_add(in.residual, in.x, in.gain, c.residual_scale, c.update_scale,
                                                     in.rows, in.d),
                      dtype, "residual");
          break;
        case RowOp::kRmsNorm:
          check_close(out[0], rill_ref::rms_norm(rill_ref::to_double(in.x), in.weight, in.eps, in.rows, in.d), dtype,
                      "out");
          break;
        case RowOp::kLayerNorm:
          check_close(out[0],
                      rill_ref::layer_norm(rill_ref::to_double(in.x), in.weight, in.bias, in.eps, in.rows, in.d),
                      dtype, "out");
          break;
        case RowOp::kFusedAddRmsNorm:
        case RowOp::kFusedAddLayerNorm: {
          std::vector<double> residual;
          const std::vector<double> x =
              op == RowOp::kFusedAddRmsNorm
                  ? rill_ref::fused_add_rms_norm(in.x, in.residual, in.gain, in.weight, in.eps, c.residual_scale,
                                                 c.update_scale, in.rows, in.d, dtype, &residual)
                  : rill_ref::fused_add_layer_norm(in.x, in.residual, in.gain, in.weight, in.bias, in.eps,
                                                   c.residual_scale, c.update_scale, in.rows, in.d, dtype, &residual);
          check_close(out[0], x, dtype, "x (normalized)");
          check_close(out[1], residual, dtype, "residual");
          check_fused_equals_unfused(*g_ctx, op, dtype, c, in);
          break;
        }
      }
      if (g_cpu) check_against_cpu(out, run_row_op(*g_cpu, op, dtype, c, in), dtype);
    }
  }
}

// ---------------------------------------------------------------------------
// GEMM
// ---------------------------------------------------------------------------

struct GemmCase {
  std::vector<int64_t> a_shape;  // [..., K]
  int64_t n;
};

struct GemmVariant {
  float alpha, beta;
  bool with_bias;
};

std::vector<std::vector<float>> run_gemm(rill::Context& ctx, rill_dtype dtype, const GemmCase& c, const GemmVariant& v,
                                         const std::vector<float>& a, const std::vector<float>& w,
                                         const std::vector<float>& bias, const std::vector<float>& out_prior) {
  const int64_t k = c.a_shape.back();
  std::vector<int64_t> out_shape = c.a_shape;
  out_shape.back() = c.n;
  rill::Tensor ta = upload(ctx, dtype, c.a_shape, a), tw = upload(ctx, dtype, {c.n, k}, w);
  const auto tbias = upload_optional(ctx, dtype, bias);
  rill::Tensor out(ctx, dtype, out_shape);
  out.write_f32(out_prior);
  rill::gemm(ctx, ta, tw, tbias.get(), v.alpha, v.beta, out);
  return {out.read_f32()};
}

// ---------------------------------------------------------------------------
// Decoder-layer ops
// ---------------------------------------------------------------------------

struct RopeCase {
  int64_t tokens, heads, head_dim, rotary_dim;
  float theta;
  int32_t position_step;  // token i sits at position i * step
};

std::vector<int32_t> rope_positions(const RopeCase& c) {
  std::vector<int32_t> positions(static_cast<size_t>(c.tokens));
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int32_t>(i) * c.position_step;
  return positions;
}

std::vector<float> run_rope(rill::Context& ctx, rill_dtype dtype, const RopeCase& c, const std::vector<float>& x) {
  rill::Tensor t = upload(ctx, dtype, {c.tokens, c.heads, c.head_dim}, x);
  rill::rope(ctx, t, rope_positions(c), c.theta, static_cast<int32_t>(c.rotary_dim));
  return t.read_f32();
}

// A frequency table with the spread of a scaled RoPE: theta^(-2i/rotary_dim)
// divided by a factor that grows from 1 to max_factor across the dimensions
// (llama3 and LongRoPE scale the low frequencies most).
std::vector<float> spread_freqs(int64_t rotary_dim, double theta, double max_factor) {
  const int64_t half = rotary_dim / 2;
  std::vector<float> freqs(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const double t = half > 1 ? static_cast<double>(i) / static_cast<double>(half - 1) : 0.0;
    const double base = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(rotary_dim));
    freqs[static_cast<size_t>(i)] = static_cast<float>(base / (1.0 + t * (max_factor - 1.0)));
  }
  return freqs;
}

struct RopeFreqsCase {
  RopeCase shape;
  double max_factor;  // of spread_freqs
  float attention_factor;
};

std::vector<float> run_rope_freqs(rill::Context& ctx, rill_dtype dtype, const RopeFreqsCase& c,
                                  const std::vector<float>& x) {
  const RopeCase& r = c.shape;
  rill::Tensor t = upload(ctx, dtype, {r.tokens, r.heads, r.head_dim}, x);
  rill::rope_freqs(ctx, t, rope_positions(r), spread_freqs(r.rotary_dim, r.theta, c.max_factor), c.attention_factor,
                   static_cast<int32_t>(r.rotary_dim));
  return t.read_f32();
}

struct AttentionCase {
  rill_ref::AttentionShape shape;
  std::vector<int32_t> kv_lengths;  // empty: every sequence holds all slots
};

std::string describe(const AttentionCase& c) {
  const rill_ref::AttentionShape& s = c.shape;
  std::ostringstream text;
  text << "batch " << s.batch << " queries " << s.queries << " slots " << s.slots << " q_heads " << s.q_heads
       << " kv_heads " << s.kv_heads << " head_dim " << s.head_dim << " kv_lengths "
       << shape_text({c.kv_lengths.begin(), c.kv_lengths.end()});
  return text.str();
}

struct AttentionInputs {
  std::vector<float> q, k, v;
};

AttentionInputs make_attention_inputs(const AttentionCase& c, rill_dtype dtype, uint32_t seed) {
  const rill_ref::AttentionShape& s = c.shape;
  const size_t q_count = size_t(s.batch * s.queries * s.q_heads * s.head_dim);
  const size_t kv_count = size_t(s.batch * s.slots * s.kv_heads * s.head_dim);
  // Spread wide enough that the softmax is far from uniform.
  return {rounded(random_values(q_count, seed, -2.0f, 2.0f), dtype),
          rounded(random_values(kv_count, seed + 1, -2.0f, 2.0f), dtype),
          rounded(random_values(kv_count, seed + 2, -1.0f, 1.0f), dtype)};
}

std::vector<float> run_attention(rill::Context& ctx, rill_dtype dtype, const AttentionCase& c,
                                 const AttentionInputs& in, float scale) {
  const rill_ref::AttentionShape& s = c.shape;
  rill::Tensor q = upload(ctx, dtype, {s.batch, s.queries, s.q_heads, s.head_dim}, in.q);
  rill::Tensor k = upload(ctx, dtype, {s.batch, s.slots, s.kv_heads, s.head_dim}, in.k);
  rill::Tensor v = upload(ctx, dtype, {s.batch, s.slots, s.kv_heads, s.head_dim}, in.v);
  rill::Tensor out(ctx, dtype, {s.batch, s.queries, s.q_heads, s.head_dim});
  rill::attention(ctx, q, k, v, c.kv_lengths, scale, out);
  return out.read_f32();
}

std::vector<float> run_attention_ex(rill::Context& ctx, rill_dtype dtype, const AttentionCase& c,
                                    const AttentionInputs& in, const rill_attention_params& params) {
  const rill_ref::AttentionShape& s = c.shape;
  rill::Tensor q = upload(ctx, dtype, {s.batch, s.queries, s.q_heads, s.head_dim}, in.q);
  rill::Tensor k = upload(ctx, dtype, {s.batch, s.slots, s.kv_heads, s.head_dim}, in.k);
  rill::Tensor v = upload(ctx, dtype, {s.batch, s.slots, s.kv_heads, s.head_dim}, in.v);
  rill::Tensor out(ctx, dtype, {s.batch, s.queries, s.q_heads, s.head_dim});
  rill::attention_ex(ctx, q, k, v, c.kv_lengths, params, out);
  return out.read_f32();
}

std::vector<float> run_activation(rill::Context& ctx, rill_dtype dtype, rill_act_fn fn,
                                  const std::vector<int64_t>& shape, const std::vector<float>& x,
                                  const std::vector<float>& up, bool in_place) {
  rill::Tensor tx = upload(ctx, dtype, shape, x);
  std::unique_ptr<rill::Tensor> tup;
  if (!up.empty()) tup = std::make_unique<rill::Tensor>(upload(ctx, dtype, shape, up));
  std::unique_ptr<rill::Tensor> separate;
  if (!in_place) separate = std::make_unique<rill::Tensor>(ctx, dtype, shape);
  rill::Tensor& out = in_place ? (tup ? *tup : tx) : *separate;
  rill::activation(ctx, fn, tx, tup.get(), out);
  return out.read_f32();
}

const rill_act_fn kActFns[] = {RILL_ACT_SILU, RILL_ACT_GELU, RILL_ACT_GELU_TANH, RILL_ACT_RELU};

}  // namespace

TEST_CASE("residual_add matches the double reference") { run_row_suite(RowOp::kResidualAdd); }
TEST_CASE("rms_norm matches the double reference") { run_row_suite(RowOp::kRmsNorm); }
TEST_CASE("layer_norm matches the double reference") { run_row_suite(RowOp::kLayerNorm); }
TEST_CASE("fused_add_rms_norm matches the reference and equals the unfused sequence") {
  run_row_suite(RowOp::kFusedAddRmsNorm);
}
TEST_CASE("fused_add_layer_norm matches the reference and equals the unfused sequence") {
  run_row_suite(RowOp::kFusedAddLayerNorm);
}

TEST_CASE("norms into outputs larger than the last-level cache match the reference") {
  // Backends may store such outputs differently (the CPU bypasses its caches
  // above 32 MiB). D = 4095 makes every other row start unaligned.
  uint32_t seed = 9000;
  for (rill_dtype dtype : kDtypes) {
    const int64_t rows = dtype == RILL_DTYPE_F32 ? 2049 : 4097;
    const RowCase c = {{rows, 4095}, 1.0f, 0.0f, 1e-6f, true, true, false, 1.0f, 1.0f, false};
    const RowInputs in = make_inputs(c, dtype, seed += 10, /*with_residual=*/false);
    for (RowOp op : {RowOp::kRmsNorm, RowOp::kLayerNorm}) {
      INFO(g_backend << ": " << (op == RowOp::kRmsNorm ? "rms_norm " : "layer_norm ") << describe(c, dtype));
      const std::vector<float> out = run_row_op(*g_ctx, op, dtype, c, in)[0];
      const std::vector<double> x = rill_ref::to_double(in.x);
      check_close(out,
                  op == RowOp::kRmsNorm ? rill_ref::rms_norm(x, in.weight, in.eps, in.rows, in.d)
                                        : rill_ref::layer_norm(x, in.weight, in.bias, in.eps, in.rows, in.d),
                  dtype, "out");
    }
  }
}

TEST_CASE("gemm matches the double reference") {
  // Few rows (the decode path), the M boundary at 16/17, many rows, K and N
  // that are not multiples of any vector width, 3- and 4-dim a.
  const std::vector<GemmCase> cases = {
      {{1, 1}, 1},    {{1, 7}, 5},        {{3, 64}, 33},        {{16, 96}, 40},     {{17, 96}, 40},
      {{1, 4096}, 64}, {{2, 3, 4095}, 9}, {{2, 2, 5, 129}, 70}, {{64, 256}, 130},
      // One and two rows (the weight-row streaming kernel) with K = 896 (whole
      // unrolled steps) and K = 1003 (a single vector and scalars after them).
      {{1, 896}, 130}, {{2, 1003}, 67},
      // Rows left after whole register tiles (4 + 2 + 1), and a row block of
      // the GEMM kernel (64) plus a remainder when it runs for many rows.
      {{7, 300}, 9}, {{70, 300}, 37},
      // The panel kernel (many rows): K = 523 over two widened chunks of 256
      // (AVX2; four of 128 on AVX-512) and a remainder that is no multiple of
      // the 8 x 8 transposes; 33 rows, whole register tiles of 6 (12) and the
      // rows left; N = 2 x 16 + 13, a last block of one transposed group of 8
      // columns, 5 widened one by one and zero padding.
      {{33, 523}, 45},
      // Split K on GPUs (few output tiles): K = 1000 in runs of 336, 336 and
      // 328, and K = 600 in runs of 304 and 296, with M and N at a 64-element
      // tile edge and one past it.
      {{65, 1000}, 64}, {{64, 600}, 65},
      // Vulkan's tile for up to 32 rows at its edge (33 rows take the 64 x 64
      // tile), K a multiple of 4 (vector loads) but not of the 16-step.
      {{32, 52}, 65},
  };
  const std::vector<GemmVariant> variants = {
      {1.0f, 0.0f, false}, {0.5f, 0.0f, true}, {1.0f, 1.0f, true}, {-2.0f, 0.25f, false}, {1.0f, -1.0f, true},
  };
  uint32_t seed = 5000;
  for (rill_dtype dtype : kDtypes) {
    for (const GemmCase& c : cases) {
      const int64_t k = c.a_shape.back(), rows = numel(c.a_shape) / k;
      for (const GemmVariant& v : variants) {
        INFO(g_backend << ": " << std::string(rill_dtype_name(dtype)) << " a " << shape_text(c.a_shape) << " w [" << c.n << ","
                       << k << "] alpha " << v.alpha << " beta " << v.beta << " bias " << v.with_bias);
        seed += 10;
        const std::vector<float> a = rounded(random_values(size_t(rows * k), seed, -1.0f, 1.0f), dtype);
        const std::vector<float> w = rounded(random_values(size_t(c.n * k), seed + 1, -1.0f, 1.0f), dtype);
        const std::vector<float> bias =
            v.with_bias ? rounded(random_values(size_t(c.n), seed + 2, -1.0f, 1.0f), dtype) : std::vector<float>();
        // With beta == 0 the prior contents must be ignored: make them NaN.
        const std::vector<float> prior =
            v.beta == 0.0f ? std::vector<float>(size_t(rows * c.n), std::numeric_limits<float>::quiet_NaN())
                           : rounded(random_values(size_t(rows * c.n), seed + 3, -1.0f, 1.0f), dtype);
        const std::vector<std::vector<float>> out = run_gemm(*g_ctx, dtype, c, v, a, w, bias, prior);
        check_close(out[0], rill_ref::gemm(a, w, bias, v.alpha, v.beta, prior, rows, c.n, k), dtype, "out");
        if (g_cpu) check_against_cpu(out, run_gemm(*g_cpu, dtype, c, v, a, w, bias, prior), dtype);
      }
    }
  }
}

TEST_CASE("cpu: results do not depend on the thread count") {
  // Rows and output features are split across threads; each element's
  // arithmetic must stay the same, so every thread count agrees with one thread
  // bit for bit, and a second run agrees with the first. The GEMM shapes reach
  // the few-rows kernel, the many-row panel kernel (f16/bf16; f32 without
  // OpenBLAS) and the OpenBLAS path (f32) with several column tiles and a
  // remainder tile. CTest runs this under several OpenBLAS kernels.
  rill::Context one("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = 1\n");
  std::vector<std::unique_ptr<rill::Context>> many;
  for (int threads : {2, 3, 5}) {
    many.push_back(std::make_unique<rill::Context>("[runtime]\nbackend = \"cpu\"\n[backend.cpu]\nthreads = " +
                                                   std::to_string(threads) + "\n"));
  }
  for (rill_dtype dtype : kDtypes) {
    INFO(std::string(rill_dtype_name(dtype)));
    const RowCase c = {{257, 1000}, 1.0f, 0.0f, 1e-6f, true, true, true, 1.0f, 1.0f, false};
    const RowInputs in = make_inputs(c, dtype, 77);
    for (RowOp op : {RowOp::kResidualAdd, RowOp::kRmsNorm, RowOp::kLayerNorm, RowOp::kFusedAddRmsNorm,
                     RowOp::kFusedAddLayerNorm}) {
      const auto expected = run_row_op(one, op, dtype, c, in);
      CHECK(run_row_op(one, op, dtype, c, in) == expected);
      for (const auto& ctx : many) CHECK(run_row_op(*ctx, op, dtype, c, in) == expected);
    }
    // K = 300 is no multiple of any vector width; 5 and 67 rows leave
    // remainders after the register tiles, 16 is the few-rows kernel's
    // widest, 17 the panel kernel's fewest (N = 301 and 37 leave partial
    // blocks of its 16 or 32 columns), 130 spans three of its row blocks.
    for (const GemmCase& g : {GemmCase{{1, 300}, 301}, GemmCase{{2, 300}, 301}, GemmCase{{5, 300}, 301},
                              GemmCase{{16, 300}, 301}, GemmCase{{17, 300}, 301}, GemmCase{{40, 300}, 301},
                              GemmCase{{67, 300}, 1000},
                              GemmCase{{130, 300}, 37}}) {
      INFO("gemm a " << shape_text(g.a_shape) << " n " << g.n);
      const int64_t rows = numel(g.a_shape) / 300;
      const std::vector<float> a = rounded(random_values(size_t(rows * 300), 78, -1.0f, 1.0f), dtype);
      const std::vector<float> w = rounded(random_values(size_t(g.n * 300), 79, -1.0f, 1.0f), dtype);
      const std::vector<float> bias = rounded(random_values(size_t(g.n), 80, -1.0f, 1.0f), dtype);
      const std::vector<float> prior = rounded(random_values(size_t(rows * g.n), 81, -1.0f, 1.0f), dtype);
      const GemmVariant v = {0.5f, 2.0f, true};
      const auto expected = run_gemm(one, dtype, g, v, a, w, bias, prior);
      CHECK(run_gemm(one, dtype, g, v, a, w, bias, prior) == expected);
      for (const auto& ctx : many) CHECK(run_gemm(*ctx, dtype, g, v, a, w, bias, prior) == expected);
    }
    // Attention with a window and soft-cap: prefill rows, and decode rows long
    // enough to be split into key chunks.
    for (const AttentionCase& ac : {AttentionCase{{1, 13, 13, 4, 2, 64}, {}},
                                    AttentionCase{{2, 1, 600, 4, 1, 64}, {600, 250}}}) {
      INFO("attention_ex " << describe(ac));
      const AttentionInputs ai = make_attention_inputs(ac, dtype, 82);
      const rill_attention_params params{sizeof(rill_attention_params), 0.125f, 5, 2.0f};
      const auto expected = run_attention_ex(one, dtype, ac, ai, params);
      CHECK(run_attention_ex(one, dtype, ac, ai, params) == expected);
      for (const auto& ctx : many) CHECK(run_attention_ex(*ctx, dtype, ac, ai, params) == expected);
    }
    {
      const RopeFreqsCase r = {{37, 5, 96, 64, 10000.0f, 997}, 8.0, 1.1931472f};
      const std::vector<float> x = rounded(random_values(size_t(37 * 5 * 96), 82, -1.0f, 1.0f), dtype);
      const auto expected = run_rope_freqs(one, dtype, r, x);
      for (const auto& ctx : many) CHECK(run_rope_freqs(*ctx, dtype, r, x) == expected);
    }
  }
}

TEST_CASE("rope matches the double reference, full and partial rotary") {
  const std::vector<RopeCase> cases = {
      {5, 3, 8, 8, 10000.0f, 1},         {5, 3, 8, 4, 10000.0f, 1},     {37, 5, 96, 64, 10000.0f, 997},
      {9, 4, 128, 128, 500000.0f, 4099}, {3, 2, 256, 256, 1e6f, 32767}, {11, 1, 2, 2, 10.0f, 3},
  };
  uint32_t seed = 11000;
  for (rill_dtype dtype : kDtypes) {
    for (const RopeCase& c : cases) {
      INFO(g_backend << ": " << std::string(rill_dtype_name(dtype)) << " tokens " << c.tokens << " heads " << c.heads
                     << " head_dim " << c.head_dim << " rotary_dim " << c.rotary_dim << " theta " << c.theta
                     << " position step " << c.position_step);
      const std::vector<float> x =
          rounded(random_values(size_t(c.tokens * c.heads * c.head_dim), seed += 10, -1.0f, 1.0f), dtype);
      const std::vector<float> out = run_rope(*g_ctx, dtype, c, x);
      check_close(out, rill_ref::rope(x, rope_positions(c), c.heads, c.head_dim, c.theta, c.rotary_dim), dtype, "x");
      if (g_cpu) check_against_cpu({out}, {run_rope(*g_cpu, dtype, c, x)}, dtype);
    }
  }
}

TEST_CASE("rope_freqs matches the double reference: scaled frequency tables and attention factors") {
  const std::vector<RopeFreqsCase> cases = {
      {{5, 3, 8, 8, 10000.0f, 1}, 1.0, 1.0f},          {{37, 5, 96, 64, 10000.0f, 997}, 8.0, 1.1931472f},
      {{9, 4, 128, 128, 500000.0f, 4099}, 32.0, 1.0f}, {{7, 2, 96, 96, 10000.0f, 131}, 40.0, 1.1902381f},
      {{11, 1, 2, 2, 10.0f, 3}, 4.0, 0.75f},
  };
  uint32_t seed = 11500;
  for (rill_dtype dtype : kDtypes) {
    for (const RopeFreqsCase& c : cases) {
      const RopeCase& r = c.shape;
      INFO(g_backend << ": " << std::string(rill_dtype_name(dtype)) << " tokens " << r.tokens << " heads " << r.heads
                     << " head_dim " << r.head_dim << " rotary_dim " << r.rotary_dim << " max factor " << c.max_factor
                     << " attention factor " << c.attention_factor << " position step " << r.position_step);
      const std::vector<float> x =
          rounded(random_values(size_t(r.tokens * r.heads * r.head_dim), seed += 10, -1.0f, 1.0f), dtype);
      const std::vector<float> out = run_rope_freqs(*g_ctx, dtype, c, x);
      check_close(out,
                  rill_ref::rope_freqs(x, rope_positions(r), r.heads, r.head_dim,
                                       spread_freqs(r.rotary_dim, r.theta, c.max_factor), c.attention_factor),
                  dtype, "x");
      if (g_cpu) check_against_cpu({out}, {run_rope_freqs(*g_cpu, dtype, c, x)}, dtype);
    }
  }
}

TEST_CASE("attention matches the double reference: head_dim 64/128/256, GQA and MQA, prefill and decode") {
  // Prefill (kv_lengths empty, queries == slots), decode (one query against
  // caches of per-sequence lengths, one of them a single key), and a chunk of
  // queries after a cached prefix; caches longer than one key tile. On
  // Vulkan (flash_attention.comp) the query counts leave partial row tiles
  // (rows = queries x the query heads of a KV group, 8 or 16 per tile), the
  // lengths partial key tiles (16 or 32 keys), the decode steps split their
  // keys (300 to 2100 keys, a merge of 2 to 9 ranges; one sequence's range
  // may hold no key at all), and 32 heads in groups of 4 make several row
  // tiles per KV head.
  const std::vector<AttentionCase> cases = {
      {{1, 7, 7, 4, 2, 64}, {}},         {{2, 1, 300, 4, 1, 128}, {300, 37}}, {{2, 3, 40, 2, 2, 256}, {40, 5}},
      {{2, 1, 9, 6, 3, 64}, {9, 1}},     {{1, 33, 33, 2, 1, 256}, {}},        {{3, 1, 520, 8, 2, 128}, {520, 257, 1}},
      {{2, 17, 70, 4, 4, 128}, {70, 17}}, {{1, 5, 5, 3, 1, 37}, {}},        {{2, 1, 600, 3, 1, 37}, {600, 37}},
      {{2, 2, 530, 2, 1, 20}, {300, 529}}, {{1, 19, 19, 32, 8, 64}, {}},    {{1, 1, 2100, 8, 2, 128}, {2100}},
  };
  uint32_t seed = 12000;
  for (rill_dtype dtype : kDtypes) {
    for (const AttentionCase& c : cases) {
      INFO(g_backend << ": " << std::string(rill_dtype_name(dtype)) << " " << describe(c));
      const AttentionInputs in = make_attention_inputs(c, dtype, seed += 10);
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.shape.head_dim));
      const std::vector<float> out = run_attention(*g_ctx, dtype, c, in, scale);
      check_close(out, rill_ref::attention(in.q, in.k, in.v, c.shape, c.kv_lengths, scale), dtype, "out");
      if (g_cpu) check_against_cpu({out}, {run_attention(*g_cpu, dtype, c, in, scale)}, dtype);
    }
  }
}

TEST_CASE("attention_ex matches the double reference: sliding window and logit soft-cap, prefill and decode") {
  // Windows that cut prefill rows, decode steps against long caches (several
  // key tiles and, on the CPU, key chunks), a chunk of queries after a cached
  // prefix, a window of one slot and one wider than every row; soft-caps
  // small enough to bend most logits, alone and with a window.
  struct ExCase {
    AttentionCase c;
    int32_t window;
    float softcap;
  };
  const std::vector<ExCase> cases = {
      {{{1, 11, 11, 4, 2, 64}, {}}, 4, 0.0f},         {{{2, 1, 300, 4, 1, 128}, {300, 37}}, 100, 0.0f},
      {{{2, 3, 40, 2, 2, 256}, {40, 5}}, 3, 0.0f},    {{{3, 1, 520, 8, 2, 128}, {520, 257, 1}}, 300, 0.0f},
      {{{2, 17, 70, 4, 4, 128}, {70, 17}}, 20, 0.0f}, {{{1, 9, 9, 3, 1, 37}, {}}, 1, 0.0f},
      {{{2, 2, 530, 2, 1, 20}, {300, 529}}, 1000, 0.0f},
      {{{1, 12, 12, 4, 2, 64}, {}}, 0, 1.0f},         {{{2, 1, 300, 4, 1, 128}, {300, 37}}, 0, 0.5f},
      {{{1, 10, 10, 4, 1, 64}, {}}, 4, 1.5f},         {{{2, 1, 600, 3, 1, 37}, {600, 37}}, 129, 0.75f},
  };
  uint32_t seed = 12500;
  for (rill_dtype dtype : kDtypes) {
    for (const ExCase& e : cases) {
      INFO(g_backend << ": " << std::string(rill_dtype_name(dtype)) << " " << describe(e.c) << " window "
                     << e.window << " softcap " << e.softcap);
      const AttentionInputs in = make_attention_inputs(e.c, dtype, seed += 10);
      const float scale = 1.0f / std::sqrt(static_cast<float>(e.c.shape.head_dim));
      const rill_attention_params params{sizeof(rill_attention_params), scale, e.window, e.softcap};
      const std::vector<float> out = run_attention_ex(*g_ctx, dtype, e.c, in, params);
      check_close(out, rill_ref::attention(in.q, in.k, in.v, e.c.shape, e.c.kv_lengths, scale, e.window, e.softcap),
                  dtype, "out");
      if (g_cpu) check_against_cpu({out}, {run_attention_ex(*g_cpu, dtype, e.c, in, params)}, dtype);
    }
  }
}

TEST_CASE("activation matches the double reference: every function, plain and gated, in place and not") {
  const std::vector<std::vector<int64_t>> shapes = {{5}, {7, 33}, {3, 4097}, {2, 2, 257}};
  uint32_t seed = 13000;
  for (rill_dtype dtype : kDtypes) {
    for (const std::vector<int64_t>& shape : shapes) {
      const size_t count = size_t(numel(shape));
      const std::vector<float> x = rounded(random_values(count, seed += 10, -6.0f, 6.0f), dtype);
      const std::vector<float> up = rounded(random_values(count, seed + 1, -2.0f, 2.0f), dtype);
      for (rill_act_fn fn : kActFns) {
        for (bool gated : {false, true}) {
          for (bool in_place : {false, true}) {
            INFO(g_backend << ": " << std::string(rill_dtype_name(dtype)) << " shape " << shape_text(shape) << " fn "
                           << int(fn) << " gated " << gated << " in_place " << in_place);
            const std::vector<float>& gate = gated ? up : std::vector<float>();
            const std::vector<float> out = run_activation(*g_ctx, dtype, fn, shape, x, gate, in_place);
            check_close(out, rill_ref::activation(fn, x, gate), dtype, "out");
            if (g_cpu) check_against_cpu({out}, {run_activation(*g_cpu, dtype, fn, shape, x, gate, in_place)}, dtype);
          }
        }
      }
    }
  }
}

// The largest error in ulps of f32 activations of x against the double reference.
double largest_ulp_error(const std::vector<float>& out, const std::vector<double>& expected) {
  double largest = 0.0;
  for (size_t i = 0; i < out.size(); ++i) largest = std::max(largest, rill_tol::ulp_error(out[i], expected[i]));
  return largest;
}

TEST_CASE("cpu: f32 activations are within their ulp bounds of the double reference") {
  // The CPU backend computes SiLU and GELU (tanh form) from its own vector
  // exp, in every ISA (CTest also runs this with RILL_CPU_ISA=scalar), and
  // GELU from the C library's erfcf. Inputs: both tails, where x / (1 + e^-x)
  // reaches 1e-36 (GELU only down to -5: below, the reference's double
  // 1 + tanh and 1 + erf cancel), and every tail length of a vector (odd counts).
  struct Bound {
    rill_act_fn fn;
    float range;
    double ulps;  // about twice the largest error measured (AVX2 and scalar)
  };
  // The GELUs round their argument to f32 before a function whose relative
  // change grows with it (x = -5: about 2|y| = 17 for e^-2y, x^2 = 25 for
  // erfc(-x/sqrt 2)): tens of ulps there, inherent to f32 arguments.
  const Bound bounds[] = {{RILL_ACT_SILU, 88.0f, 4.0},        // 2.1 ulp
                          {RILL_ACT_GELU_TANH, 5.0f, 64.0},   // 31 (AVX2), 37 (scalar)
                          {RILL_ACT_GELU, 5.0f, 48.0}};       // 22
  for (const Bound& b : bounds) {
    INFO("fn " << int(b.fn) << " on [-" << b.range << ", " << b.range << "]");
    for (int64_t count : {int64_t{100003}, int64_t{7}}) {
      std::vector<float> x = random_values(size_t(count), 15000 + uint32_t(count), -b.range, b.range);
      x[0] = 0.0f;
      const std::vector<float> out = run_activation(*g_ctx, RILL_DTYPE_F32, b.fn, {count}, x, {}, false);
      const double ulps = largest_ulp_error(out, rill_ref::activation(b.fn, x, {}));
      MESSAGE("fn " << int(b.fn) << ": " << ulps << " ulp (bound " << b.ulps << ")");
      CHECK(ulps <= b.ulps);
    }
  }
  // Negative control: GELU's tanh form written as 0.5 x (1 + tanhf(y)), whose
  // 1 + tanh cancels for negative x, is far outside its bound.
  std::vector<float> x = random_values(10001, 15100, -5.0f, 5.0f);
  std::vector<float> naive(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    naive[i] = 0.5f * x[i] * (1.0f + std::tanh(0.79788456f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
  }
  CHECK(largest_ulp_error(naive, rill_ref::activation(RILL_ACT_GELU_TANH, x, {})) > 64.0 * 100);
}

// ---------------------------------------------------------------------------
// Block-format weights (interface version 4): gemm's w and get_rows' table
// ---------------------------------------------------------------------------

const rill_dtype kBlockDtypes[] = {RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0, RILL_DTYPE_Q5_0, RILL_DTYPE_Q5_1,
                                   RILL_DTYPE_Q4_K, RILL_DTYPE_Q5_K, RILL_DTYPE_Q6_K};

// A [rows, cols] table of dtype holding values quantized by the runtime; the
// runtime's dequantization of it (read_f32) is bit for bit gguf.quants'
// (tests/torch/quant_reference.py), so it is the reference's weights.
rill::Tensor block_table(rill::Context& ctx, rill_dtype dtype, int64_t rows, int64_t cols, uint32_t seed) {
  rill::Tensor t(ctx, dtype, {rows, cols});
  t.write_f32(random_values(size_t(rows * cols), seed, -1.0f, 1.0f));
  return t;
}

TEST_CASE("gemm on block weights matches the double reference on the dequantized weights") {
  // Decode (up to 8 rows stream the weights), the boundary at 8/9, prefill
  // (weights dequantized, then the tiled GEMM), 3-dim a, 1 and 3 super-blocks;
  // K = 288 (the 32-element formats only): 9 blocks a row, so every other
  // row of Q8_0 (34-byte blocks), Q4_0 (18) and Q5_0 (22) starts at 2 mod 4 bytes.
  struct BlockCase {
    std::vector<int64_t> a_shape;
    int64_t n;
  };
  // N >= 24: an NMSE over a handful of outputs says little about the CPU's
  // 8-bit activations.
  const std::vector<BlockCase> cases = {{{1, 256}, 24}, {{1, 768}, 37},  {{8, 512}, 24},
                                        {{9, 512}, 24}, {{2, 33, 256}, 70},
                                        {{1, 288}, 24}, {{9, 288}, 24}};
  const std::vector<GemmVariant> variants = {{1.0f, 0.0f, false}, {0.5f, 1.0f, true}};
  uint32_t seed = 9000;
  for (rill_dtype wdtype : kBlockDtypes) {
    for (rill_dtype dtype : kDtypes) {
      for (const BlockCase& c : cases) {
        const int64_t k = c.a_shape.back(), rows = numel(c.a_shape) / k;
        if (k % int64_t(rill_dtype_block_elements(wdtype)) != 0) continue;
        for (const GemmVariant& v : variants) {
          INFO(g_backend << ": w " << std::string(rill_dtype_name(wdtype)) << " [" << c.n << "," << k << "], a "
                         << std::string(rill_dtype_name(dtype)) << " " << shape_text(c.a_shape) << " alpha " << v.alpha
                         << " beta " << v.beta << " bias " << v.with_bias);
          seed += 10;
          const rill::Tensor w = block_table(*g_ctx, wdtype, c.n, k, seed);
          const std::vector<float> dequantized = w.read_f32();
          const std::vector<float> a = rounded(random_values(size_t(rows * k), seed + 1, -1.0f, 1.0f), dtype);
          const std::vector<float> bias =
              v.with_bias ? rounded(random_values(size_t(c.n), seed + 2, -1.0f, 1.0f), dtype) : std::vector<float>();
          const std::vector<float> prior =
              v.beta == 0.0f ? std::vector<float>(size_t(rows * c.n), std::numeric_limits<float>::quiet_NaN())
                             : rounded(random_values(size_t(rows * c.n), seed + 3, -1.0f, 1.0f), dtype);
          const rill::Tensor ta = upload(*g_ctx, dtype, c.a_shape, a);
          std::vector<int64_t> out_shape = c.a_shape;
          out_shape.back() = c.n;
          rill::Tensor out(*g_ctx, dtype, out_shape);
          out.write_f32(prior);
          std::unique_ptr<rill::Tensor> tb;
          if (v.with_bias) tb = std::make_unique<rill::Tensor>(upload(*g_ctx, dtype, {c.n}, bias));
          rill::gemm(*g_ctx, ta, w, tb.get(), v.alpha, v.beta, out);
          const std::vector<float> got = out.read_f32();
          const std::vector<double> expected = rill_ref::gemm(a, dequantized, bias, v.alpha, v.beta, prior, rows, c.n, k);
          // The block format's limit (the CPU quantizes activations to 8 bits
          // per 32; Vulkan keeps them f32), plus the output's own rounding to
          // a 16-bit dtype.
          const rill_tol::Score s = rill_tol::score(got, expected);
          const bool wide = dtype == RILL_DTYPE_F32;
          const rill_tol::Limits block_limits =
              g_backend == "vulkan" ? rill_tol::f32_activation_limits(wdtype) : rill_tol::limits(wdtype);
          const double limit = block_limits.nmse + (wide ? 0.0 : rill_tol::limits(dtype).nmse);
          const double worst_limit = block_limits.worst + (wide ? 0.0 : rill_tol::limits(dtype).worst);
          rill_tol::note(s, wide ? wdtype : dtype);
          CHECK_MESSAGE((s.nmse <= limit && s.worst <= worst_limit),
                        rill_tol::describe(s, wdtype, {limit, worst_limit}));
          // Negative control: the weights with the first two runs of 32 of
          // every row swapped (a nibble-order mistake) must fail the limit.
          std::vector<float> swapped = dequantized;
          for (int64_t r = 0; r < c.n; ++r) {
            for (size_t i = 0; i < 32; ++i) std::swap(swapped[size_t(r * k) + i], swapped[size_t(r * k) + 32 + i]);
          }
          const rill_tol::Score control =
              rill_tol::score(got, rill_ref::gemm(a, swapped, bias, v.alpha, v.beta, prior, rows, c.n, k));
          CHECK_MESSAGE(control.nmse > limit, "the limit misses a swapped weight run: ",
                        rill_tol::describe(control, wdtype));
        }
      }
    }
  }
}

TEST_CASE("get_rows gathers table rows bit for bit: block tables dequantized, element tables copied") {
  const int32_t ids[] = {5, 0, 5, 2, 6};
  const int64_t vocab = 7, d = 512;
  for (rill_dtype table_dtype : {RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0, RILL_DTYPE_Q5_0, RILL_DTYPE_Q5_1, RILL_DTYPE_Q4_K,
                                 RILL_DTYPE_Q5_K, RILL_DTYPE_Q6_K,
                                 RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    const bool block = rill_dtype_size(table_dtype) == 0;
    const rill::Tensor table = block_table(*g_ctx, table_dtype, vocab, d, 77);
    const std::vector<float> all = table.read_f32();
    for (rill_dtype out_dtype : kDtypes) {
      if (!block && out_dtype != table_dtype) continue;
      INFO(g_backend << ": table " << std::string(rill_dtype_name(table_dtype)) << " into "
                     << std::string(rill_dtype_name(out_dtype)));
      rill::Tensor out(*g_ctx, out_dtype, {5, d});
      const rill_status status = rill_get_rows(g_ctx->get(), table.get(), ids, 5, out.get());
      REQUIRE_MESSAGE(status == RILL_OK, rill_last_error());
      const std::vector<float> got = out.read_f32();
      size_t mismatches = 0;
      for (size_t i = 0; i < 5; ++i) {
        for (size_t j = 0; j < size_t(d); ++j) {
          const float want = static_cast<float>(rill_ref::round_to_dtype(all[size_t(ids[i]) * size_t(d) + j], out_dtype));
          if (std::memcmp(&got[i * size_t(d) + j], &want, sizeof want) != 0) ++mismatches;
        }
      }
      CHECK_MESSAGE(mismatches == 0, mismatches, " elements differ from the dequantized table");
    }
  }
}

TEST_CASE("gemm with many rows and columns matches the reference") {
  // Vulkan's 128 x 128 tile, which it takes only where it still makes 256
  // workgroups: 17 x 17 tiles, M and N one past a tile edge plus a few, K a
  // multiple of 4 (vector loads) but not of the 16-step. One dtype of 16
  // bits (kept so in shared memory) and one variant: the tile's code is the
  // same for every dtype, and the smaller tiles cover the rest.
  const rill_dtype dtype = RILL_DTYPE_F16;
  const GemmCase c = {{2051, 36}, 2053};
  const int64_t k = c.a_shape.back(), rows = c.a_shape[0];
  INFO(g_backend << ": gemm a " << shape_text(c.a_shape) << " n " << c.n);
  const std::vector<float> a = rounded(random_values(size_t(rows * k), 13001, -1.0f, 1.0f), dtype);
  const std::vector<float> w = rounded(random_values(size_t(c.n * k), 13002, -1.0f, 1.0f), dtype);
  const std::vector<float> bias = rounded(random_values(size_t(c.n), 13003, -1.0f, 1.0f), dtype);
  const std::vector<float> prior = rounded(random_values(size_t(rows * c.n), 13004, -1.0f, 1.0f), dtype);
  check_close(run_gemm(*g_ctx, dtype, c, {0.5f, -1.0f, true}, a, w, bias, prior)[0],
              rill_ref::gemm(a, w, bias, 0.5f, -1.0f, prior, rows, c.n, k), dtype, "out");
}

// The grid the Vulkan case runs under (RILL_VULKAN_TEST_MAX_GROUPS): small,
// so that its shapes are small, and odd, so that the last pass is partial.
constexpr int64_t kVulkanTestGrid = 61;

// A Vulkan context whose looped grid dimensions are capped at grid workgroups.
std::unique_ptr<rill::Context> vulkan_context_with_grid(int64_t grid) {
  rill_test::set_env("RILL_VULKAN_TEST_MAX_GROUPS", std::to_string(grid));
  std::unique_ptr<rill::Context> ctx;
  try {
    ctx = std::make_unique<rill::Context>("[runtime]\nbackend = \"vulkan\"\n");
  } catch (const rill::Error& e) {
    FAIL_CHECK("a Vulkan context with RILL_VULKAN_TEST_MAX_GROUPS=" << grid << ": " << e.what());
  }
  rill_test::unset_env("RILL_VULKAN_TEST_MAX_GROUPS");
  return ctx;
}

TEST_CASE("launches larger than one pass of a GPU grid match the reference") {
  // GPU backends cap their grids and loop over the rest: Vulkan at 65535
  // workgroups per dimension (the least every device allows; 256 invocations
  // per group in the elementwise shaders, one row per group in the norms,
  // four output features per group in gemm_rows, 64 rows per group in gemm,
  // one (sequence, KV head, tile of query rows) per group in flash attention,
  // one (sequence, query, head) in the row kernel), CUDA at 32 blocks of
  // 256 threads per SM for the elementwise kernels (H200: 132 SMs). Each
  // shape below needs more than one pass of a grid of `grid` workgroups in
  // those units. Vulkan runs the same loops with its cap lowered to
  // kVulkanTestGrid, so its shapes are small; CUDA keeps grid = 65535, which
  // makes the elementwise shapes exceed its grid too (the CUDA norms' grid,
  // 256 row groups of up to 8 rows per SM, needs more rows than that, so
  // cuda_ops_test covers it). One dtype: the loops do not depend on it.
  const rill_dtype dtype = RILL_DTYPE_F16;
  const bool vulkan = g_backend == "vulkan";
  const int64_t grid = vulkan ? kVulkanTestGrid : 65535;
  const std::unique_ptr<rill::Context> capped = vulkan ? vulkan_context_with_grid(grid) : nullptr;
  REQUIRE((!vulkan || capped != nullptr));
  rill::Context& ctx = vulkan ? *capped : *g_ctx;
  const int64_t elementwise = grid * 256 + 1000;  // > grid groups of 256
  INFO(g_backend << ", grid " << grid);
  {
    INFO("activation, " << elementwise << " elements");
    const std::vector<int64_t> shape = {elementwise};
    const std::vector<float> x = rounded(random_values(size_t(elementwise), 14001, -6.0f, 6.0f), dtype);
    const std::vector<float> up = rounded(random_values(size_t(elementwise), 14002, -2.0f, 2.0f), dtype);
    check_close(run_activation(ctx, dtype, RILL_ACT_SILU, shape, x, up, false),
                rill_ref::activation(RILL_ACT_SILU, x, up), dtype, "out");
  }
  {
    // (grid / 4 + 1) * 1024 elements
    const RowCase c = {{grid / 4 + 1, 1024}, 1.0f, 0.0f, 1e-6f, true, true, true, 0.5f, 2.0f, false};
    INFO("residual_add " << describe(c, dtype));
    const RowInputs in = make_inputs(c, dtype, 14010);
    check_close(run_row_op(ctx, RowOp::kResidualAdd, dtype, c, in)[0],
                rill_ref::residual_add(in.residual, in.x, in.gain, c.residual_scale, c.update_scale, in.rows, in.d),
                dtype, "residual");
  }
  {
    const RopeCase c = {1025, grid / 16 + 1, 8, 8, 10000.0f, 3};  // 1025 * (grid / 16 + 1) * 4 rotated pairs
    INFO("rope, tokens " << c.tokens << " heads " << c.heads << " head_dim " << c.head_dim);
    const std::vector<float> x =
        rounded(random_values(size_t(c.tokens * c.heads * c.head_dim), 14020, -1.0f, 1.0f), dtype);
    check_close(run_rope(ctx, dtype, c, x),
                rill_ref::rope(x, rope_positions(c), c.heads, c.head_dim, c.theta, c.rotary_dim), dtype, "x");
  }
  {
    const RowCase c = {{grid + 4465, 3}, 1.0f, 0.0f, 1e-6f, true, true, false, 1.0f, 1.0f, false};
    const RowInputs in = make_inputs(c, dtype, 14030, /*with_residual=*/false);
    for (RowOp op : {RowOp::kRmsNorm, RowOp::kLayerNorm}) {
      INFO((op == RowOp::kRmsNorm ? "rms_norm " : "layer_norm ") << describe(c, dtype));
      const std::vector<double> x = rill_ref::to_double(in.x);
      check_close(run_row_op(ctx, op, dtype, c, in)[0],
                  op == RowOp::kRmsNorm ? rill_ref::rms_norm(x, in.weight, in.eps, in.rows, in.d)
                                        : rill_ref::layer_norm(x, in.weight, in.bias, in.eps, in.rows, in.d),
                  dtype, "out");
    }
  }
  for (const GemmCase& c : {GemmCase{{3, 4}, grid * 4 + 5}, GemmCase{{grid * 64 + 70, 1}, 2}}) {
    const int64_t k = c.a_shape.back(), rows = numel(c.a_shape) / k;
    INFO("gemm a " << shape_text(c.a_shape) << " n " << c.n);
    const std::vector<float> a = rounded(random_values(size_t(rows * k), 14040, -1.0f, 1.0f), dtype);
    const std::vector<float> w = rounded(random_values(size_t(c.n * k), 14041, -1.0f, 1.0f), dtype);
    const std::vector<float> bias = rounded(random_values(size_t(c.n), 14042, -1.0f, 1.0f), dtype);
    const std::vector<float> prior(size_t(rows * c.n), std::numeric_limits<float>::quiet_NaN());
    check_close(run_gemm(ctx, dtype, c, {1.0f, 0.0f, true}, a, w, bias, prior)[0],
                rill_ref::gemm(a, w, bias, 1.0f, 0.0f, prior, rows, c.n, k), dtype, "out");
  }
  {
    std::vector<int32_t> lengths(size_t(grid / 4 + 1));
    for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<int32_t>(1 + i % 2);
    // (grid / 4 + 1) * 4 (sequence, KV head) pairs
    const AttentionCase c = {{grid / 4 + 1, 1, 2, 4, 4, 4}, lengths};
    INFO("attention, batch " << c.shape.batch);
    const AttentionInputs in = make_attention_inputs(c, dtype, 14050);
    check_close(run_attention(ctx, dtype, c, in, 0.5f),
                rill_ref::attention(in.q, in.k, in.v, c.shape, c.kv_lengths, 0.5), dtype, "out");
  }
}

// Negative controls: the limits mean something only if plausible mistakes
// exceed them. Each mistake is the reference with that mistake, its result
// stored in the dtype, scored against the correct reference.
bool mistake_passes(const std::vector<double>& mistaken, const std::vector<double>& right, rill_dtype dtype) {
  std::vector<float> stored(mistaken.size());
  for (size_t i = 0; i < stored.size(); ++i)
    stored[i] = static_cast<float>(rill_ref::round_to_dtype(mistaken[i], dtype));
  return rill_tol::within(rill_tol::score(stored, right), dtype);
}

TEST_CASE("negative controls: plausible mistakes exceed the limits of every dtype") {
  for (rill_dtype dtype : kDtypes) {
    INFO(std::string(rill_dtype_name(dtype)));
    {
      // eps 1e-5 instead of 1e-6, on activations whose mean square is near eps.
      const std::vector<double> x = rill_ref::to_double(rounded(random_values(4 * 4096, 1, -0.01f, 0.01f), dtype));
      CHECK_FALSE(mistake_passes(rill_ref::rms_norm(x, {}, 1e-5f, 4, 4096), rill_ref::rms_norm(x, {}, 1e-6f, 4, 4096),
                                 dtype));
    }
    {
      // rope_theta 10000 instead of 1e6.
      const std::vector<float> x = rounded(random_values(64 * 2 * 128, 2, -1.0f, 1.0f), dtype);
      std::vector<int32_t> positions(64);
      for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int32_t>(i);
      CHECK_FALSE(mistake_passes(rill_ref::rope(x, positions, 2, 128, 1e4, 128),
                                 rill_ref::rope(x, positions, 2, 128, 1e6, 128), dtype));
      // Scaled RoPE: the plain frequencies where llama3-like scaled ones are
      // right, and the attention factor (YaRN's 1 + 0.1 ln 4) left out.
      const std::vector<float> scaled = spread_freqs(128, 500000.0, 8.0);
      CHECK_FALSE(mistake_passes(rill_ref::rope_freqs(x, positions, 2, 128, spread_freqs(128, 500000.0, 1.0), 1.0),
                                 rill_ref::rope_freqs(x, positions, 2, 128, scaled, 1.0), dtype));
      CHECK_FALSE(mistake_passes(rill_ref::rope_freqs(x, positions, 2, 128, scaled, 1.0),
                                 rill_ref::rope_freqs(x, positions, 2, 128, scaled, 1.1386294), dtype));
    }
    {
      // Query head h reading KV head h % Hkv instead of h / (Hq / Hkv). Both
      // mappings written as plain multi-head attention over KV heads copied
      // per query head.
      const rill_ref::AttentionShape gqa = {1, 4, 16, 8, 2, 64}, mha = {1, 4, 16, 8, 8, 64};
      const AttentionInputs in = make_attention_inputs({gqa, {}}, dtype, 3);
      auto expand = [&](const std::vector<float>& kv, bool modulo) {
        std::vector<float> out;
        for (int64_t j = 0; j < gqa.slots; ++j) {
          for (int64_t h = 0; h < mha.kv_heads; ++h) {
            const int64_t source = modulo ? h % gqa.kv_heads : h / (gqa.q_heads / gqa.kv_heads);
            const auto row = kv.begin() + (j * gqa.kv_heads + source) * gqa.head_dim;
            out.insert(out.end(), row, row + gqa.head_dim);
          }
        }
        return out;
      };
      const std::vector<double> right = rill_ref::attention(in.q, in.k, in.v, gqa, {}, 0.125);
      // The expansion with the right mapping is the GQA reference itself.
      CHECK(rill_ref::attention(in.q, expand(in.k, false), expand(in.v, false), mha, {}, 0.125) == right);
      CHECK_FALSE(mistake_passes(rill_ref::attention(in.q, expand(in.k, true), expand(in.v, true), mha, {}, 0.125),
                                 right, dtype));
    }
    {
      // A sliding window one slot too wide (j >= p - window instead of
      // j > p - window), and the soft-cap left out.
      const AttentionCase c = {{2, 12, 12, 4, 2, 64}, {}};
      const AttentionInputs in = make_attention_inputs(c, dtype, 7);
      const std::vector<double> right = rill_ref::attention(in.q, in.k, in.v, c.shape, {}, 0.125, 4, 1.0);
      CHECK_FALSE(mistake_passes(rill_ref::attention(in.q, in.k, in.v, c.shape, {}, 0.125, 5, 1.0), right, dtype));
      CHECK_FALSE(mistake_passes(rill_ref::attention(in.q, in.k, in.v, c.shape, {}, 0.125, 0, 1.0), right, dtype));
      CHECK_FALSE(mistake_passes(rill_ref::attention(in.q, in.k, in.v, c.shape, {}, 0.125, 4, 0.0), right, dtype));
    }
    {
      // w used as [K, N] instead of [N, K] (a transposed weight).
      const int64_t rows = 8, n = 64, k = 64;
      const std::vector<float> a = rounded(random_values(size_t(rows * k), 4, -1.0f, 1.0f), dtype);
      const std::vector<float> w = rounded(random_values(size_t(n * k), 5, -1.0f, 1.0f), dtype);
      std::vector<float> transposed(w.size());
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < k; ++j) transposed[size_t(j * n + i)] = w[size_t(i * k + j)];
      }
      CHECK_FALSE(mistake_passes(rill_ref::gemm(a, transposed, {}, 1.0f, 0.0f, {}, rows, n, k),
                                 rill_ref::gemm(a, w, {}, 1.0f, 0.0f, {}, rows, n, k), dtype));
    }
    {
      // Five elements of a million off by 0.25 (a lost tail, a race): the
      // NMSE of the 16-bit formats hardly notices; the worst-element bound does.
      const std::vector<double> right = rill_ref::to_double(rounded(random_values(1 << 20, 6, -1.0f, 1.0f), dtype));
      std::vector<double> corrupted = right;
      for (size_t i : {size_t(0), size_t(4095), size_t(65536), size_t(777777), corrupted.size() - 1})
        corrupted[i] += 0.25;
      CHECK_FALSE(mistake_passes(corrupted, right, dtype));
    }
  }
}

// The CUDA backend's prefill kernel on tensor cores (cuda_flash_attention.cu)
// rounds the softmax weights to the dtype before they multiply V, which the
// other kernels never do: a model of that rounding, to show that
// limits(dtype) leave room for it where no GPU can run the kernel. Each query
// tile of 64 walks its keys in tiles of key_tile from its first query's
// window start; each row takes its weights against its running max,
// rounds them, adds the rounded weights to its sum and rescales sum and
// values when the max grows. Everything else is exact (double). see_ahead
// > 0 models a mistake: each query also sees that many slots after its
// position (within its sequence's length).
std::vector<double> attention_with_rounded_weights(const AttentionInputs& in, const rill_ref::AttentionShape& s,
                                                   const std::vector<int32_t>& lengths, double scale, int64_t window,
                                                   double softcap, rill_dtype dtype, int64_t see_ahead = 0) {
  const int64_t key_tile = s.head_dim == 256 ? 32 : 64, query_tile = 64, group = s.q_heads / s.kv_heads;
  std::vector<double> out(size_t(s.batch * s.queries * s.q_heads * s.head_dim));
  std::vector<double> acc(size_t(s.head_dim));
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t offset = lengths[size_t(b)] - s.queries;
    for (int64_t t = 0; t < s.queries; ++t) {
      const int64_t position = offset + t, tile_first = offset + t / query_tile * query_tile;
      const int64_t last_seen = std::min<int64_t>(position + see_ahead, lengths[size_t(b)] - 1);
      const int64_t lo = window > 0 && tile_first + 1 > window ? tile_first + 1 - window : 0;
      for (int64_t h = 0; h < s.q_heads; ++h) {
        const float* q = &in.q[size_t(((b * s.queries + t) * s.q_heads + h) * s.head_dim)];
        double row_max = -INFINITY, sum = 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j0 = lo; j0 <= last_seen; j0 += key_tile) {
          std::vector<double> logits;
          double tile_max = -INFINITY;
          for (int64_t j = j0; j < j0 + key_tile && j <= last_seen; ++j) {
            const float* k = &in.k[size_t(((b * s.slots + j) * s.kv_heads + h / group) * s.head_dim)];
            double dot = 0.0;
            for (int64_t d = 0; d < s.head_dim; ++d) dot += double(q[d]) * double(k[d]);
            double logit = scale * dot;
            if (softcap > 0.0) logit = softcap * std::tanh(logit / softcap);
            if (window > 0 && j <= position - window) logit = -INFINITY;
            logits.push_back(logit);
            tile_max = std::max(tile_max, logit);
          }
          const double new_max = std::max(row_max, tile_max);
          if (new_max == -INFINITY) continue;
          const double correction = std::exp(row_max - new_max);
          sum *= correction;
          for (double& a : acc) a *= correction;
          row_max = new_max;
          for (size_t i = 0; i < logits.size(); ++i) {
            const double p = rill_ref::round_to_dtype(std::exp(logits[i] - new_max), dtype);
            const int64_t j = j0 + int64_t(i);
            const float* v = &in.v[size_t(((b * s.slots + j) * s.kv_heads + h / group) * s.head_dim)];
            sum += p;
            for (int64_t d = 0; d < s.head_dim; ++d) acc[size_t(d)] += p * double(v[d]);
          }
        }
        for (int64_t d = 0; d < s.head_dim; ++d)
          out[size_t(((b * s.queries + t) * s.q_heads + h) * s.head_dim + d)] = acc[size_t(d)] / sum;
      }
    }
  }
  return out;
}

// Named "cpu: " although it checks a CUDA kernel's numerics: it runs no
// backend, so the CPU registrations are enough, and the GPU ones stay short.
TEST_CASE("cpu: tensor-core attention's rounded softmax weights stay within the limits; its plausible mistakes do not") {
  // The shapes of cuda_ops_test's tensor-core cases: partial query and key
  // tiles, queries offset into the cache, a window, a soft-cap, GQA and MQA.
  struct Case {
    AttentionCase c;
    int32_t window;
    double softcap;
  };
  for (rill_dtype dtype : {RILL_DTYPE_F16, RILL_DTYPE_BF16}) {
    for (int64_t head_dim : {64, 128, 256}) {
      const std::vector<Case> cases = {{{{2, 100, 333, 8, 2, head_dim}, {333, 100}}, 0, 0.0},
                                       {{{2, 100, 333, 4, 1, head_dim}, {333, 150}}, 50, 5.0}};
      for (const Case& c : cases) {
        INFO(std::string(rill_dtype_name(dtype)) << " " << describe(c.c) << " window " << c.window << " softcap "
                                                 << c.softcap);
        const AttentionInputs in = make_attention_inputs(c.c, dtype, 90);
        const double scale = 1.0 / std::sqrt(double(head_dim));
        const std::vector<double> right =
            rill_ref::attention(in.q, in.k, in.v, c.c.shape, c.c.kv_lengths, scale, c.window, c.softcap);
        const std::vector<double> model =
            attention_with_rounded_weights(in, c.c.shape, c.c.kv_lengths, scale, c.window, c.softcap, dtype);
        std::vector<float> stored(model.size());
        for (size_t i = 0; i < stored.size(); ++i)
          stored[i] = static_cast<float>(rill_ref::round_to_dtype(model[i], dtype));
        const rill_tol::Score score = rill_tol::score(stored, right);
        CHECK_MESSAGE(rill_tol::within(score, dtype), rill_tol::describe(score, dtype));
        MESSAGE("rounded weights: " << rill_tol::describe(score, dtype));
        // Queries placed at positions 0..T-1 instead of offset into the
        // cache (kv_lengths - T + t): the causal mask of a plain prefill.
        std::vector<int32_t> unshifted(c.c.kv_lengths.size(), int32_t(c.c.shape.queries));
        CHECK_FALSE(mistake_passes(
            rill_ref::attention(in.q, in.k, in.v, c.c.shape, unshifted, scale, c.window, c.softcap), right, dtype));
        // The causal mask left out inside the diagonal key tile: each query
        // also sees the key_tile - 1 slots after it (within its sequence),
        // as a kernel would that masks slots only by the sequence's length.
        const int64_t key_tile = head_dim == 256 ? 32 : 64;
        CHECK_FALSE(mistake_passes(attention_with_rounded_weights(in, c.c.shape, c.c.kv_lengths, scale, c.window,
                                                                  c.softcap, dtype, key_tile - 1),
                                   right, dtype));
      }
    }
  }
}

int main(int argc, char** argv) {
  const char* env = std::getenv("RILL_TEST_BACKEND");
  g_backend = env && *env ? env : "cpu";
  try {
    g_ctx = std::make_unique<rill::Context>("[runtime]\nbackend = \"" + g_backend + "\"\n");
    if (g_backend != "cpu") g_cpu = std::make_unique<rill::Context>("[runtime]\nbackend = \"cpu\"\n");
  } catch (const rill::Error& e) {
    if (e.status() == RILL_ERROR_BACKEND_UNAVAILABLE) {
      std::printf("SKIPPED: %s: %s\n", g_backend.c_str(), rill_last_error());
      return 77;
    }
    std::fprintf(stderr, "conformance: cannot create a %s context: %s\n", g_backend.c_str(), e.what());
    return 1;
  }
  std::printf("conformance: backend %s, device %s\n", g_ctx->backend_name(), g_ctx->device_name());
  doctest::Context context(argc, argv);
  if (g_backend != "cpu") {
    // Test cases named "cpu: ..." check promises of the CPU backend alone;
    // doctest counts the excluded ones as skipped.
    context.addFilter("test-case-exclude", "cpu: *");
    std::printf("conformance: the \"cpu: *\" test cases are skipped on %s\n", g_backend.c_str());
  }
  const int result = context.run();
  std::printf("%s", rill_tol::largest_noted().c_str());
  g_cpu.reset();
  g_ctx.reset();
  return result;
}
