"""Decoder stacks through the Python binding, against a float64 numpy
implementation of a Llama-style (pre-norm, RMSNorm, RoPE, GQA, SwiGLU) layer."""

import ctypes

import numpy as np
import pytest

import rill
from conftest import optional_op
from tolerance import compare

D, HEADS, KV_HEADS, INTER, LAYERS = 32, 4, 2, 48, 2
HD = D // HEADS


def make_desc(**overrides):
    fields = dict(num_layers=LAYERS, hidden_size=D, num_heads=HEADS, num_kv_heads=KV_HEADS, intermediate_size=INTER)
    fields.update(overrides)
    return rill.ModelDesc(**fields)


def random_weights(rng):
    weights = {}
    for i in range(LAYERS):
        p = "model.layers.{}.".format(i)
        for name, shape in {"self_attn.q_proj.weight": (HEADS * HD, D), "self_attn.k_proj.weight": (KV_HEADS * HD, D),
                            "self_attn.v_proj.weight": (KV_HEADS * HD, D), "self_attn.o_proj.weight": (D, HEADS * HD),
                            "mlp.gate_proj.weight": (INTER, D), "mlp.up_proj.weight": (INTER, D),
                            "mlp.down_proj.weight": (D, INTER)}.items():
            weights[p + name] = (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)
        for name in ("input_layernorm.weight", "post_attention_layernorm.weight"):
            weights[p + name] = rng.uniform(0.8, 1.2, D).astype(np.float32)
    weights["model.norm.weight"] = rng.uniform(0.8, 1.2, D).astype(np.float32)
    return weights


def rms(x, w, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, positions, theta=10000.0):
    half = HD // 2
    angle = np.asarray(positions, np.float64)[:, None] * theta ** (-2.0 * np.arange(half) / HD)
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def reference_forward(weights, hidden):
    """hidden [T, D] float64 -> the stack's output (causal prefill, positions 0..T-1)."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    T = hidden.shape[0]
    h = hidden.copy()
    for i in range(LAYERS):
        p = "model.layers.{}.".format(i)
        a = rms(h, w[p + "input_layernorm.weight"])
        q = rope((a @ w[p + "self_attn.q_proj.weight"].T).reshape(T, HEADS, HD), range(T))
        k = rope((a @ w[p + "self_attn.k_proj.weight"].T).reshape(T, KV_HEADS, HD), range(T))
        v = (a @ w[p + "self_attn.v_proj.weight"].T).reshape(T, KV_HEADS, HD)
        att = np.zeros((T, HEADS, HD))
        for head in range(HEADS):
            kh = head // (HEADS // KV_HEADS)
            logits = q[:, head] @ k[:, kh].T / np.sqrt(HD)
            logits[np.triu_indices(T, 1)] = -np.inf
            probs = np.exp(logits - logits.max(axis=1, keepdims=True))
            att[:, head] = (probs / probs.sum(axis=1, keepdims=True)) @ v[:, kh]
        h = h + att.reshape(T, HEADS * HD) @ w[p + "self_attn.o_proj.weight"].T
        m = rms(h, w[p + "post_attention_layernorm.weight"])
        gate = m @ w[p + "mlp.gate_proj.weight"].T
        h = h + ((gate / (1 + np.exp(-gate))) * (m @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    return rms(h, w["model.norm.weight"])


@pytest.fixture
def model_and_weights(ctx, rng):
    weights = random_weights(rng)
    model = ctx.model(make_desc())
    for name, value in weights.items():
        model.set_weight(name, value)
    model.check_weights()
    with model:
        yield model, weights


def test_desc_defaults_and_layout():
    # the 4-byte fields and three arrays of 256 elements, as in rill.h
    assert ctypes.sizeof(rill.ModelDesc) == 3280
    desc = rill.ModelDesc()
    assert desc.struct_size == 3280
    assert desc.weight_format == rill.DType.F32
    assert desc.rope_type == 0 and desc.rope_factor == 1.0 and desc.rope_beta_fast == 32.0
    assert desc.rope_beta_slow == 1.0 and desc.rope_factor_count == 0 and desc.no_rope_layer_interval == 0
    assert desc.num_experts == 0 and desc.num_experts_per_tok == 0 and desc.shared_expert_intermediate_size == 0
    assert desc.rope_interleave == 0 and desc.clip_qkv == 0.0
    assert desc.dtype == rill.DType.F32 and desc.norm == rill.NormKind.RMS
    assert desc.norm_placement == rill.NormPlacement.PRE and desc.activation == rill.MlpActivation.SILU_GLU
    assert desc.rope_theta == 10000.0 and desc.final_norm == 1 and desc.residual_scale == 1.0
    assert abs(desc.norm_eps - 1e-6) < 1e-12
    assert desc.norm_weight_offset == 0.0 and desc.query_pre_attn_scalar == 0.0
    with pytest.raises(AttributeError):
        rill.ModelDesc(hidden=3)


def test_desc_from_toml():
    desc = rill.ModelDesc.from_toml('[model]\nnum_layers = 3\nhidden_size = 64\nnum_heads = 4\n'
                                    'intermediate_size = 128\nnorm = "layer"\nactivation = "gelu"\n')
    assert (desc.num_layers, desc.hidden_size, desc.norm, desc.activation) == (3, 64, rill.NormKind.LAYER,
                                                                                rill.MlpActivation.GELU)
    with pytest.raises(rill.ConfigError) as info:
        rill.ModelDesc.from_toml('[model]\nnum_layers = 3\nhidden_sise = 64\n', "tiny.toml")
    assert "hidden_sise" in str(info.value) and "tiny.toml" in str(info.value)


def test_prefill_matches_numpy(ctx, rng, model_and_weights):
    model, weights = model_and_weights
    tokens = rng.standard_normal((1, 6, D)).astype(np.float32)
    with optional_op():
        out = model.forward(ctx.tensor(tokens)).read_f32()
    expected = reference_forward(weights, tokens[0].astype(np.float64))
    result = compare(out[0], expected, "f32", "layers")
    assert result.ok, str(result)


def test_cached_decode_matches_prefill(ctx, rng, model_and_weights):
    model, _ = model_and_weights
    tokens = rng.standard_normal((2, 5, D)).astype(np.float32)
    with optional_op():
        full = model.forward(ctx.tensor(tokens)).read_f32()
    with model.kv_cache(batch=2, capacity=8) as cache:
        model.forward(ctx.tensor(tokens[:, :3]), cache)
        assert [cache.length(0), cache.length(1)] == [3, 3]
        for t in (3, 4):
            step = model.forward(ctx.tensor(np.ascontiguousarray(tokens[:, t:t + 1])), cache).read_f32()
            result = compare(step[:, 0], full[:, t], "f32", "layers")
            assert result.ok, "decode step {} against the prefill: {}".format(t, result)
        cache.set_length(1, 2)
        assert cache.length(1) == 2
        with pytest.raises(rill.InvalidArgumentError):
            cache.set_length(1, 3)
        with pytest.raises(rill.InvalidArgumentError, match="sequence"):
            cache.length(2)
        with pytest.raises(rill.InvalidArgumentError):
            model.forward(ctx.tensor(tokens[:, :4]), cache)  # 5 + 4 tokens exceed capacity 8


def test_bf16_weights_from_uint16_bits(ctx, rng):
    weights = random_weights(rng)
    with ctx.model(make_desc(dtype=rill.DType.BF16)) as model:
        for name, value in weights.items():
            model.set_weight(name, rill.f32_to_bf16(value), dtype="bf16")
        model.check_weights()
        tokens = rng.standard_normal((1, 4, D)).astype(np.float32)
        hidden = ctx.tensor(tokens, dtype="bf16")
        with optional_op():
            out = model.forward(hidden).read_f32()
    rounded = {k: rill.bf16_to_f32(rill.f32_to_bf16(v)) for k, v in weights.items()}
    expected = reference_forward(rounded, rill.bf16_to_f32(rill.f32_to_bf16(tokens[0])).astype(np.float64))
    assert np.max(np.abs(out[0] - expected)) < 0.1  # bf16 keeps 8 bits of mantissa at every step


def test_weight_errors_name_the_weight(ctx):
    with ctx.model(make_desc()) as model:
        with pytest.raises(rill.NotFoundError) as info:
            model.check_weights()
        assert "model.layers.0." in str(info.value)
        with pytest.raises(rill.ShapeError) as info:
            model.set_weight("model.layers.0.self_attn.q_proj.weight", np.zeros((D, D + 1), np.float32))
        assert "q_proj" in str(info.value)
        with pytest.raises(rill.NotFoundError, match="no_such"):
            model.set_weight("model.layers.0.no_such.weight", np.zeros(D, np.float32))
        with pytest.raises(rill.DtypeError, match="bf16"):
            model.set_weight("model.norm.weight", np.zeros(D, np.uint16))
        with pytest.raises(rill.NotFoundError, match="missing|not been set|model.layers"):
            model.forward(ctx.tensor(np.zeros((1, 2, D), np.float32)))


def test_bad_desc_is_rejected_with_the_field():
    with rill.Context('[runtime]\nbackend = "cpu"\n') as ctx:
        with pytest.raises(rill.InvalidArgumentError, match="num_kv_heads"):
            ctx.model(make_desc(num_kv_heads=3))
        with pytest.raises(rill.InvalidArgumentError, match="desc"):
            ctx.model({"hidden_size": 3})
        with pytest.raises(rill.InvalidArgumentError, match="context"):
            rill.Model("cpu", make_desc())


def test_closing_the_context_closes_models_and_caches():
    ctx = rill.Context('[runtime]\nbackend = "cpu"\n')
    model = ctx.model(make_desc())
    cache = model.kv_cache(1, 4)
    ctx.close()
    assert model.closed and cache.closed
    with pytest.raises(rill.InvalidArgumentError, match="closed"):
        cache.length(0)
