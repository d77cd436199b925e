"""Tensors (numpy interop, checks) and operators of the Python binding, each
against a float64 numpy computation."""

import math

import numpy as np
import pytest

import rill
from conftest import optional_op
from tolerance import compare

DTYPE_NAMES = {rill.DType.F32: "f32", rill.DType.F16: "f16", rill.DType.BF16: "bf16"}


def stored(arr, dtype):
    """arr rounded to a storage dtype, as float64 (what rill's inputs hold)."""
    arr = np.asarray(arr, dtype=np.float32)
    if dtype == rill.DType.F16:
        return arr.astype(np.float16).astype(np.float64)
    if dtype == rill.DType.BF16:
        return rill.bf16_to_f32(rill.f32_to_bf16(arr)).astype(np.float64)
    return arr.astype(np.float64)


def close(actual, expected, dtype):
    result = compare(actual, expected, DTYPE_NAMES[dtype], "ops")
    assert result.ok, str(result)


# --------------------------------------------------------------- tensors

def test_roundtrip_in_every_dtype(ctx, rng):
    values = rng.standard_normal((3, 5)).astype(np.float32)
    f32 = ctx.tensor(values)
    assert f32.dtype == rill.DType.F32 and f32.shape == (3, 5) and f32.numel == 15 and f32.nbytes == 60
    np.testing.assert_array_equal(f32.read(), values)

    halves = values.astype(np.float16)
    f16 = ctx.tensor(halves)
    assert f16.dtype == rill.DType.F16 and f16.nbytes == 30
    np.testing.assert_array_equal(f16.read(), halves)

    bits = rill.f32_to_bf16(values)
    bf16 = ctx.tensor(bits, dtype="bf16")
    np.testing.assert_array_equal(bf16.read(), bits)
    np.testing.assert_array_equal(bf16.read_f32(), rill.bf16_to_f32(bits))


def test_float_writes_round_like_numpy(ctx, rng):
    # librill's f32 -> f16/bf16 conversion and numpy's (f16) or this package's
    # (bf16) round to nearest even independently; they must agree bit for bit.
    values = (rng.standard_normal(4096) * 10.0 ** rng.integers(-6, 6, 4096)).astype(np.float32)
    values[:4] = [0.0, -0.0, np.inf, -np.inf]
    f16 = ctx.empty(values.shape, "f16")
    f16.write(values)
    with np.errstate(over="ignore"):  # values beyond f16's range become inf, as in librill
        expected = values.astype(np.float16)
    np.testing.assert_array_equal(f16.read().view(np.uint16), expected.view(np.uint16))
    bf16 = ctx.empty(values.shape, rill.DType.BF16)
    bf16.write_f32(values)
    np.testing.assert_array_equal(bf16.read(), rill.f32_to_bf16(values))


def test_numpy_protocol_and_float64_conversion(ctx):
    t = ctx.tensor([[1.0, 2.0], [3.0, 4.0]], dtype="f32")
    np.testing.assert_array_equal(np.asarray(t), np.array([[1, 2], [3, 4]], np.float32))
    t.write(np.array([[5.0, 6.0], [7.0, 8.0]]))  # float64 values are converted
    np.testing.assert_array_equal(t.read(), np.array([[5, 6], [7, 8]], np.float32))


def test_non_contiguous_arrays_are_copied_in_order(ctx):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ctx.tensor(base.T)
    np.testing.assert_array_equal(t.read(), base.T)


@pytest.mark.parametrize("make, error, words", [
    (lambda c: c.tensor(np.zeros(3)), rill.DtypeError, "float64"),
    (lambda c: c.tensor(np.zeros(3, np.uint16)), rill.DtypeError, "bf16"),
    (lambda c: c.tensor(np.zeros(3, np.int32), dtype="f32"), rill.DtypeError, "int32"),
    (lambda c: c.empty((2, 0)), rill.ShapeError, ">= 1"),
    (lambda c: c.empty((1, 1, 1, 1, 1)), rill.InvalidArgumentError, "1 to 4 dims"),
    (lambda c: c.empty(()), rill.InvalidArgumentError, "1 to 4 dims"),
    (lambda c: c.empty("ab"), rill.InvalidArgumentError, "shape"),
    (lambda c: c.empty((2.5, 2)), rill.InvalidArgumentError, "ints"),
    (lambda c: c.empty((2,), "f64"), rill.DtypeError, "'f64'"),
    (lambda c: c.empty((2, 3)).write(np.zeros((3, 2), np.float32)), rill.ShapeError, "(2, 3)"),
    (lambda c: c.empty((2,), "f16").write(np.zeros(2, np.int64)), rill.DtypeError, "int64"),
    (lambda c: c.rms_norm(np.zeros((2, 4), np.float32)), rill.InvalidArgumentError, "x: expected a rill.Tensor"),
    (lambda c: c.rms_norm(c.empty((2, 4)), eps="1"), rill.InvalidArgumentError, "eps"),
])
def test_python_side_checks_name_the_problem(ctx, make, error, words):
    with pytest.raises(error) as info:
        make(ctx)
    assert words in str(info.value)


def test_c_side_checks_arrive_as_exceptions(ctx):
    x = ctx.tensor(np.ones((2, 8), np.float32))
    w = ctx.tensor(np.ones(7, np.float32))
    with pytest.raises(rill.ShapeError) as info:
        ctx.rms_norm(x, weight=w)
    assert "weight" in str(info.value)
    h = ctx.tensor(np.ones(8, np.float16))
    with pytest.raises(rill.DtypeError):
        ctx.rms_norm(x, weight=h)
    with pytest.raises(rill.InvalidArgumentError):
        ctx.rms_norm(x, eps=-1.0)


# --------------------------------------------------------------- operators

DTYPES = [rill.DType.F32, rill.DType.F16, rill.DType.BF16]


def rms_ref(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def layer_ref(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


@pytest.mark.parametrize("dtype", DTYPES)
def test_residual_add(ctx, rng, dtype):
    r, u, g = rng.standard_normal((3, 40)), rng.standard_normal((3, 40)), rng.standard_normal(40)
    residual = ctx.tensor(r, dtype=dtype)
    ctx.residual_add(residual, ctx.tensor(u, dtype=dtype), ctx.tensor(g, dtype=dtype), 0.5, 2.0)
    close(residual.read_f32(), 0.5 * stored(r, dtype) + 2.0 * stored(g, dtype) * stored(u, dtype), dtype)


def f16_rounding_promises(ctx):
    """(rounds to nearest even, keeps denormals) for f16 results on ctx's
    device. The CPU and CUDA backends do both; a Vulkan device only where it
    has the float-controls modes, which its description in `rill info` names."""
    if ctx.backend_name != "vulkan":
        return True, True
    report = rill.info_report()
    device = report[report.index(ctx.device_name):].splitlines()
    details = next(line for line in device if "details:" in line)
    return "(RoundingModeRTE)" in details, "(DenormPreserve)" in details


@pytest.mark.parametrize("denormal", [False, True], ids=["normal", "denormal"])
def test_f16_sums_halfway_between_neighbours_round_to_even(ctx, denormal):
    # residual + update / 2 is exact in f32 and lies exactly halfway between
    # an f16 number and the next: the normal f16 numbers up to 65440 (or the
    # denormals and zero) as the lower neighbour, both signs. Nearest even goes up from
    # an odd lower neighbour and down from an even one; truncation and
    # rounding half away from zero each miss half of them.
    bits = np.arange(0x0000, 0x0400) if denormal else np.arange(0x0400, 0x7BFE)
    lower = bits.astype(np.uint16).view(np.float16)
    gap = (bits + 1).astype(np.uint16).view(np.float16) - lower  # one f16 ulp, itself an f16
    residual, update = np.concatenate([lower, -lower]), np.concatenate([gap, -gap])
    exact = residual.astype(np.float32) + np.float32(0.5) * update.astype(np.float32)
    expected = exact.astype(np.float16)
    assert np.count_nonzero(expected != residual) == residual.size // 2  # half round up: the cases discriminate

    rounds_even, keeps_denormals = f16_rounding_promises(ctx)
    if not rounds_even or (denormal and not keeps_denormals):
        pytest.skip("{} leaves f16 rounding or denormals to the driver".format(ctx.device_name))
    tensor = ctx.tensor(residual)
    ctx.residual_add(tensor, ctx.tensor(update), update_scale=0.5)
    np.testing.assert_array_equal(tensor.read().view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm(ctx, rng, dtype):
    x, w = rng.standard_normal((5, 96)), rng.uniform(0.5, 1.5, 96)
    out = ctx.rms_norm(ctx.tensor(x, dtype=dtype), ctx.tensor(w, dtype=dtype), eps=1e-5)
    close(out.read_f32(), rms_ref(stored(x, dtype), stored(w, dtype), 1e-5), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_in_place(ctx, rng, dtype):
    x, w, b = rng.standard_normal((2, 3, 64)) * 3 + 1, rng.uniform(0.5, 1.5, 64), rng.standard_normal(64)
    t = ctx.tensor(x, dtype=dtype)
    ctx.layer_norm(t, ctx.tensor(w, dtype=dtype), ctx.tensor(b, dtype=dtype), eps=1e-5, out=t)
    close(t.read_f32(), layer_ref(stored(x, dtype), stored(w, dtype), stored(b, dtype), 1e-5), dtype)


def test_fused_add_rms_norm_matches_the_unfused_definition(ctx, rng):
    x, r = rng.standard_normal((4, 48)), rng.standard_normal((4, 48))
    g, w = rng.standard_normal(48), rng.uniform(0.5, 1.5, 48)
    xt, rt = ctx.tensor(x, dtype="f32"), ctx.tensor(r, dtype="f32")
    ctx.fused_add_rms_norm(xt, rt, ctx.tensor(g, dtype="f32"), ctx.tensor(w, dtype="f32"), 1e-6, 0.9, 1.1)
    new_r = 0.9 * stored(r, "f32") + 1.1 * stored(g, "f32") * stored(x, "f32")
    close(rt.read_f32(), new_r, rill.DType.F32)
    close(xt.read_f32(), rms_ref(new_r, stored(w, "f32"), 1e-6), rill.DType.F32)


def test_fused_add_layer_norm(ctx, rng):
    x, r = rng.standard_normal((4, 48)), rng.standard_normal((4, 48))
    w, b = rng.uniform(0.5, 1.5, 48), rng.standard_normal(48)
    xt, rt = ctx.tensor(x, dtype="f32"), ctx.tensor(r, dtype="f32")
    ctx.fused_add_layer_norm(xt, rt, None, ctx.tensor(w, dtype="f32"), ctx.tensor(b, dtype="f32"), 1e-5)
    new_r = stored(r, "f32") + stored(x, "f32")
    close(rt.read_f32(), new_r, rill.DType.F32)
    close(xt.read_f32(), layer_ref(new_r, stored(w, "f32"), stored(b, "f32"), 1e-5), rill.DType.F32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm(ctx, rng, dtype):
    a, w, bias, prior = (rng.standard_normal((2, 3, 40)), rng.standard_normal((24, 40)) / 6,
                         rng.standard_normal(24), rng.standard_normal((2, 3, 24)))
    out = ctx.tensor(prior, dtype=dtype)
    ctx.gemm(ctx.tensor(a, dtype=dtype), ctx.tensor(w, dtype=dtype), ctx.tensor(bias, dtype=dtype), 0.5, 2.0, out)
    expected = 0.5 * stored(a, dtype) @ stored(w, dtype).T + 2.0 * stored(prior, dtype) + stored(bias, dtype)
    close(out.read_f32(), expected, dtype)
    fresh = ctx.gemm(ctx.tensor(a, dtype=dtype), ctx.tensor(w, dtype=dtype))
    assert fresh.shape == (2, 3, 24)
    close(fresh.read_f32(), stored(a, dtype) @ stored(w, dtype).T, dtype)


def rope_ref(x, positions, theta, rotary_dim):
    half = rotary_dim // 2
    inv = theta ** (-2.0 * np.arange(half) / rotary_dim)
    angle = np.asarray(positions, np.float64)[:, None] * inv  # [tokens, half]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    out = x.copy()
    x1, x2 = x[..., :half], x[..., half:rotary_dim]
    out[..., :half] = x1 * cos - x2 * sin
    out[..., half:rotary_dim] = x2 * cos + x1 * sin
    return out


@pytest.mark.parametrize("rotary_dim", [16, 8])
def test_rope(ctx, rng, rotary_dim):
    x = rng.standard_normal((5, 3, 16))
    positions = [0, 1, 7, 100, 3]
    t = ctx.tensor(x, dtype="f32")
    with optional_op():
        ctx.rope(t, positions, theta=10000.0, rotary_dim=rotary_dim)
    close(t.read_f32(), rope_ref(stored(x, "f32"), positions, 10000.0, rotary_dim), rill.DType.F32)
    with pytest.raises(rill.InvalidArgumentError, match="positions"):
        ctx.rope(t, [0.5] * 5)
    with pytest.raises(rill.InvalidArgumentError, match="int32"):
        ctx.rope(t, [2**31] * 5)


def attention_ref(q, k, v, kv_lengths, scale):
    B, T, Hq, hd = q.shape
    Hkv = k.shape[2]
    out = np.zeros_like(q)
    for b in range(B):
        for h in range(Hq):
            kh = h // (Hq // Hkv)
            for t in range(T):
                p = kv_lengths[b] - T + t
                logits = scale * k[b, :p + 1, kh] @ q[b, t, h]
                weights = np.exp(logits - logits.max())
                out[b, t, h] = (weights / weights.sum()) @ v[b, :p + 1, kh]
    return out


def test_attention_with_grouped_heads_and_lengths(ctx, rng):
    q, k, v = rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 6, 2, 8)), rng.standard_normal((2, 6, 2, 8))
    lengths = [6, 4]
    with optional_op():
        out = ctx.attention(ctx.tensor(q, dtype="f32"), ctx.tensor(k, dtype="f32"), ctx.tensor(v, dtype="f32"),
                            lengths)
    expected = attention_ref(stored(q, "f32"), stored(k, "f32"), stored(v, "f32"), lengths, 1 / math.sqrt(8))
    close(out.read_f32(), expected, rill.DType.F32)


ACTIVATIONS = {
    rill.ActFn.SILU: lambda x: x / (1 + np.exp(-x)),
    rill.ActFn.GELU: lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    rill.ActFn.GELU_TANH: lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    rill.ActFn.RELU: lambda x: np.maximum(x, 0),
}


@pytest.mark.parametrize("fn", list(ACTIVATIONS))
def test_activation_plain_and_gated(ctx, rng, fn):
    x, up = rng.standard_normal((4, 33)) * 3, rng.standard_normal((4, 33))
    with optional_op():
        plain = ctx.activation(fn, ctx.tensor(x, dtype="f32"))
    close(plain.read_f32(), ACTIVATIONS[fn](stored(x, "f32")), rill.DType.F32)
    gated = ctx.activation(fn, ctx.tensor(x, dtype="f32"), ctx.tensor(up, dtype="f32"))
    close(gated.read_f32(), ACTIVATIONS[fn](stored(x, "f32")) * stored(up, "f32"), rill.DType.F32)
    with pytest.raises(rill.InvalidArgumentError, match="fn"):
        ctx.activation(42, ctx.tensor(x, dtype="f32"))
