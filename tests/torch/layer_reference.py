#!/usr/bin/env python3
"""Checks `rill run` against PyTorch references nobody here wrote, and one
written in plain torch from the published model definitions.

References, all evaluated in float64 from the same (dtype-rounded) weights
and inputs that rill gets:
  * torch.nn.TransformerEncoderLayer with norm_first True (placement "pre")
    and False ("post"), a causal mask, GELU or ReLU; its parameters are mapped
    onto the Hugging Face names rill reads;
  * a Llama/Qwen2-style decoder (RMSNorm, grouped-query attention, NeoX RoPE,
    SwiGLU, QKV bias) in plain torch, following the Hugging Face modelling
    code, extended with the deepnorm placement from the DeepNet paper
    (alpha, beta and x = LN(alpha * x + G(x))), with post norm, and for one
    case (post_layer_scale_branch) with LayerScale and branch scale behind a
    post norm as the rill header defines them: no published model has that;
  * Hugging Face transformers' own decoder layers (the transformers group;
    transformers comes from a venv, --venv, and the group reports skipped
    without it): Gemma2DecoderLayer and Gemma2RMSNorm for the sandwich norm
    (with LayerScale folded into its post-sublayer norms),
    GraniteDecoderLayer for the branch scale (Granite's residual_multiplier)
    and MimiTransformerLayer for LayerScale (MimiLayerScale) with LayerNorm
    and a plain GELU MLP; and OPTModel (learned positions zeroed) in the pre
    and post placements;
  * the QK norm (the qknorm group, also from the venv): Olmo2DecoderLayer
    (q_norm and k_norm over the whole projections, the output placement)
    and, as transformers 4.47.1 has no Qwen3, Qwen2DecoderLayer with Qwen3's
    per-head q_norm and k_norm added as its published modelling code does;
  * whole Gemma and Gemma 2 models from transformers (GemmaModel,
    Gemma2Model; the gemma group, also from --venv) with Gemma's checkpoint
    norm weights (w for x_hat * (1 + w), rill's norm_weight_offset), its tanh
    GELU gated MLP and Gemma 2's query_pre_attn_scalar;
  * (the parallel group) whole models with parallel attention + MLP and
    fused checkpoint tensors: GPTNeoXModel with use_parallel_residual and
    its own tensor names, query_key_value fused, PhiModel (Phi-2, one shared
    input norm), Phi3Model with qkv_proj and gate_up_proj fused, and
    GPTJModel and CohereModel (one shared norm, interleaved rotary that rill
    reorders at load: rope_interleave);
  * (the window group) sliding-window attention and logit soft-capping:
    MistralModel, Gemma2Model, a Gemma 3 stack adapted from Gemma2Model
    after Gemma 3's published code (see gemma_window_case), and Qwen2Model
    with max_window_layers (see qwen2_window_case).
  * (the rope group) RoPE scaling and NoPE layers in whole models: LlamaModel
    with llama3 (Llama 3.1/3.2), linear and dynamic NTK rope_scaling,
    Qwen2Model with YaRN, Phi3Model with LongRoPE below and above its
    original_max_position_embeddings, and LlamaModel with SmolLM3's NoPE
    layers (no_rope_layer_interval). Dynamic NTK and LongRoPE depend on each
    forward's positions, so their decode modes are compared with
    transformers run the same way: a prefill forward and one forward per
    decode step against its DynamicCache.
  * (the moe group) mixtures of experts in whole models: MixtralModel (its
    own tensor names), Qwen2MoeModel (a shared expert, unnormalized top-k
    weights), OlmoeModel (full-width QK norm) and, as transformers 4.47.1
    has no Qwen3-MoE, Qwen2MoeModel with Qwen3's per-head QK norm and its
    shared expert removed (see moe_case). The low-precision cases'
    seeds route every token to the same experts in rill as in the float64
    reference; a flipped choice would fail them.
Every case runs as one prefill, as a prefill followed by decode steps and as
decode steps only (`--decode-from`), and each output must match the reference
by the limits of tests/python/tolerance.py (NMSE, worst element, finiteness).
Each output must also fail against every negative control (CONTROLS): the
reference built with a wrong eps, rope_theta, GQA head mapping or a transposed
weight, or without its branch scale or LayerScale gains, and for the cases
of a feature the controls of that feature (FEATURE_CONTROLS: no QK norm, the
other QK norm form, the pre placement instead of output; Gemma's norm weights
used as stored, the erf GELU, the head_dim attention scale; the sequential
form of parallel layers, a fused tensor split the wrong way, the interleaved
rotary read as half-split; no sliding
window, a window one position wider, no soft-cap, the global RoPE theta on
the sliding layers; rope_scaling left out, the wrong rope_type, LongRoPE's
other factor list, RoPE on the NoPE layers; the top-1 expert instead of the
top-k, the top-k weights renormalized or not the other way, the shared expert
left out, OLMoE's QK norm left out or per head), so a tolerance
too loose to see those mistakes fails the test.

Weight files are written with PyPI's safetensors package, or where it is
missing with safetensors_fallback.py beside this script.

Exit codes: 0 all passed, 1 a failure, 77 skipped (torch missing, the
backend unavailable, or a plugin backend lacking an op). The CPU backend
refusing an op is a failure, and a skip never hides a failure found before it.
"""
import argparse
import glob
import math
import os
import subprocess
import sys
import tempfile

from outcome import conclude  # exit codes and the closing lines
from reference_imports import require, use_test_folders

np, torch, F = require("numpy", "torch", "torch.nn.functional")
try:
    from safetensors.torch import save_file
except ImportError:
    from safetensors_fallback import save_file

use_test_folders("python")
from tolerance import compare  # noqa: E402  (the Python tests' one tolerance module)

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def base_config(**overrides):
    config = dict(dtype="f32", num_layers=2, hidden_size=64, num_heads=4, num_kv_heads=2, head_dim=16,
                  intermediate_size=96, norm="rms", norm_eps=1e-6, norm_placement="pre", activation="silu_glu",
                  rope_theta=10000.0, rope_dim=0, qkv_bias=False, o_bias=False, mlp_bias=False, final_norm=True,
                  residual_scale=1.0, branch_scale=1.0, layer_scale=False, parallel_residual=False, parallel_norms=1)
    config.update(overrides)
    return config


def toml_text(config, backend):
    lines = ["[runtime]", f'backend = "{backend}"', "[backend.cpu]", "threads = 2", "[model]"]
    tables = {key: value for key, value in config.items() if isinstance(value, dict)}  # [model.<key>]
    for key, value in [item for item in config.items() if item[0] not in tables] + [
            item for name, table in tables.items() for item in [(f"[model.{name}]", None)] + list(table.items())]:
        if value is None:
            lines.append(key)
        elif isinstance(value, bool):
            lines.append(f"{key} = {'true' if value else 'false'}")
        elif isinstance(value, str):
            lines.append(f'{key} = "{value}"')
        else:
            lines.append(f"{key} = {value!r}")
    return "\n".join(lines) + "\n"


def rounded(t, dtype):
    """t rounded to the model dtype, as float64 for the reference."""
    return t.to(TORCH_DTYPES[dtype]).to(torch.float64)


# ---------------------------------------------------------------------------
# Negative controls: the reference built with one plausible mistake, which the
# comparison must catch in every case (rill's weights and inputs stay as they
# are; only the reference goes wrong).
CONTROLS = {
    "eps": "norm_eps 10x too large (f32), 0.05 too large (f16, bf16)",
    "rope_theta": "rope_theta 10000 and 1e6 swapped",
    "gqa": "query heads read the next KV head",
    "transpose": "o_proj's weight transposed",
    "scale": "the branch scale 1 and the LayerScale gains ones (the residual variant left out)",
}
# Controls of parallel layers and fused tensors, asked only of the builders
# that have the feature (see FEATURE_CONTROLS).
SEQUENTIAL_CONTROLS = {"sequential": "the sequential form of parallel layers: h += A(norm(h)), then h += M(norm(h))"}
SPLIT_CONTROLS = {"split": "a fused checkpoint tensor split the wrong way (GPT-NeoX's per-head and Falcon's per-KV-"
                           "head q, k, v as three blocks; Phi-3's gate and up halves swapped)"}


def weight_drawer(gen, dtype, weights):
    """param(name, shape, scale, offset=0): a weight offset + scale * N(0, 1)
    drawn from gen, rounded to dtype and recorded in weights under name."""
    def param(name, shape, scale, offset=0.0):
        weights[name] = rounded(offset + scale * torch.randn(shape, generator=gen, dtype=torch.float64), dtype)
        return weights[name]

    return param


# DeepNet (Wang et al. 2022, "DeepNet: Scaling Transformers to 1,000 Layers"),
# decoder-only models of N layers: each sublayer is x = LN(alpha * x + G(x)),
# and the weights of the value and output projections and of the feed-forward
# network start Xavier-normal with gain beta (query and key projections: 1).
# beta is an initialization only, so a DeepNet model runs with rill's
# residual_scale = alpha and branch_scale = 1.


def deepnet_alpha(num_layers):
    return (2 * num_layers) ** 0.25


def deepnet_beta(num_layers):
    return (8 * num_layers) ** -0.25


def wrong_eps(eps, dtype):
    # In f16 and bf16 eps 10x too large changes the output less than the
    # storage rounding does (it passes every f16 and bf16 case): there eps is
    # off by 0.05 instead, the smallest of 0.02, 0.05 that every case catches.
    return eps * 10 if dtype == "f32" else eps + 0.05


def wrong_rope_theta(theta):
    return 1e6 if theta == 10000.0 else 10000.0


def roll_kv_heads(t, kv_heads, dim=0):
    """t's KV-head blocks along dim, rotated so that block i holds what block i + 1 held."""
    return torch.cat(t.chunk(kv_heads, dim=dim)[1:] + t.chunk(kv_heads, dim=dim)[:1], dim=dim)


# ---------------------------------------------------------------------------
# Reference 1: torch.nn.TransformerEncoderLayer


def encoder_case(gen, config, control=None):
    d, heads, inter = config["hidden_size"], config["num_heads"], config["intermediate_size"]
    if control in ("rope_theta", "scale"):
        return None, None  # torch's encoder layer has no RoPE, no branch scale and no LayerScale
    eps = wrong_eps(config["norm_eps"], config["dtype"]) if control == "eps" else config["norm_eps"]
    layers = []
    weights = {}
    for i in range(config["num_layers"]):
        layer = torch.nn.TransformerEncoderLayer(d, heads, inter, dropout=0.0, activation=config["activation"],
                                                 layer_norm_eps=eps, batch_first=True,
                                                 norm_first=config["norm_placement"] == "pre")
        with torch.no_grad():
            for p in layer.parameters():  # non-trivial values for every parameter, norms included
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * (0.3 if p.dim() == 1 else 0.15))
            for norm in (layer.norm1, layer.norm2):
                norm.weight.add_(1.0)
            for p in layer.parameters():
                p.copy_(rounded(p.detach(), config["dtype"]))
        layer = layer.double().eval()
        prefix = f"model.layers.{i}."
        w_q, w_k, w_v = layer.self_attn.in_proj_weight.detach().chunk(3)
        b_q, b_k, b_v = layer.self_attn.in_proj_bias.detach().chunk(3)
        names = {
            "self_attn.q_proj.weight": w_q, "self_attn.k_proj.weight": w_k, "self_attn.v_proj.weight": w_v,
            "self_attn.q_proj.bias": b_q, "self_attn.k_proj.bias": b_k, "self_attn.v_proj.bias": b_v,
            "self_attn.o_proj.weight": layer.self_attn.out_proj.weight, "self_attn.o_proj.bias": layer.self_attn.out_proj.bias,
            "mlp.up_proj.weight": layer.linear1.weight, "mlp.up_proj.bias": layer.linear1.bias,
            "mlp.down_proj.weight": layer.linear2.weight, "mlp.down_proj.bias": layer.linear2.bias,
            "input_layernorm.weight": layer.norm1.weight, "input_layernorm.bias": layer.norm1.bias,
            "post_attention_layernorm.weight": layer.norm2.weight, "post_attention_layernorm.bias": layer.norm2.bias,
        }
        for name, value in names.items():
            weights[prefix + name] = value.detach().clone()
        with torch.no_grad():  # the reference's own copy goes wrong, not the weights rill reads
            if control == "gqa":
                for p in (layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias):
                    p[d:2 * d], p[2 * d:] = roll_kv_heads(p[d:2 * d], heads), roll_kv_heads(p[2 * d:], heads)
            elif control == "transpose":
                layer.self_attn.out_proj.weight.copy_(layer.self_attn.out_proj.weight.t().clone())
        layers.append(layer)
    final = None
    if config["final_norm"]:
        final = torch.nn.LayerNorm(d, eps=eps).double()
        with torch.no_grad():
            final.weight.copy_(rounded(1.0 + 0.3 * torch.randn(d, generator=gen, dtype=torch.float64), config["dtype"]))
            final.bias.copy_(rounded(0.3 * torch.randn(d, generator=gen, dtype=torch.float64), config["dtype"]))
        weights["model.norm.weight"] = final.weight.detach().clone()
        weights["model.norm.bias"] = final.bias.detach().clone()

    def reference(x):
        t = x.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf"), dtype=torch.float64), diagonal=1)
        with torch.no_grad():
            for layer in layers:
                x = layer(x, src_mask=mask)
            if final is not None:
                x = final(x)
        return x

    return weights, reference


# ---------------------------------------------------------------------------
# Reference 2: a Llama/Qwen2-style decoder in plain torch


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, positions, theta, rotary_dim):
    """x: [B, H, T, hd]; the first rotary_dim dims rotate (NeoX layout)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim))
    freqs = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, None], emb.sin()[None, None]
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    return torch.cat((rot * cos + rotate_half(rot) * sin, rest), dim=-1)


def decoder_case(gen, config, control=None):
    c = dict(config)
    if control == "eps":
        c["norm_eps"] = wrong_eps(c["norm_eps"], c["dtype"])
    elif control == "rope_theta":
        c["rope_theta"] = wrong_rope_theta(c["rope_theta"])
    elif control == "gqa" and c["num_kv_heads"] == 1:
        return None, None  # one KV head: every query head reads it, there is no mapping to get wrong
    elif control == "scale" and c["branch_scale"] == 1.0 and not c["layer_scale"]:
        return None, None  # no branch scale or LayerScale to leave out
    d, hq, hkv, hd, inter = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"], c["intermediate_size"]
    gated = c["activation"] in ("silu_glu", "gelu_glu")
    placement = c["norm_placement"]
    weights = {}
    param = weight_drawer(gen, c["dtype"], weights)

    def norm_params(prefix):
        w = param(prefix + ".weight", (d,), 0.3, 1.0)
        b = param(prefix + ".bias", (d,), 0.3) if c["norm"] == "layer" else None
        return w, b

    def linear_params(prefix, out_f, in_f, bias, deepnet_gain=1.0):
        if placement == "deepnorm":  # DeepNet's initialization: Xavier normal, times beta where it says so
            scale = deepnet_gain * math.sqrt(2.0 / (in_f + out_f))
        else:
            scale = 1.0 / math.sqrt(in_f)
        w = param(prefix + ".weight", (out_f, in_f), scale)
        b = param(prefix + ".bias", (out_f,), 0.2) if bias else None
        return w, b

    beta_init = deepnet_beta(c["num_layers"])

    layers = []
    for i in range(c["num_layers"]):
        p = f"model.layers.{i}."
        layer = {
            "q": linear_params(p + "self_attn.q_proj", hq * hd, d, c["qkv_bias"]),
            "k": linear_params(p + "self_attn.k_proj", hkv * hd, d, c["qkv_bias"]),
            "v": linear_params(p + "self_attn.v_proj", hkv * hd, d, c["qkv_bias"], beta_init),
            "o": linear_params(p + "self_attn.o_proj", d, hq * hd, c["o_bias"], beta_init),
            "up": linear_params(p + "mlp.up_proj", inter, d, c["mlp_bias"], beta_init),
            "down": linear_params(p + "mlp.down_proj", d, inter, c["mlp_bias"], beta_init),
            "attn_norm": norm_params(p + "input_layernorm"),
        }
        if gated:
            layer["gate"] = linear_params(p + "mlp.gate_proj", inter, d, c["mlp_bias"], beta_init)
        if placement == "sandwich":
            layer["attn_out_norm"] = norm_params(p + "post_attention_layernorm")
            layer["mlp_norm"] = norm_params(p + "pre_feedforward_layernorm")
            layer["mlp_out_norm"] = norm_params(p + "post_feedforward_layernorm")
        else:
            layer["mlp_norm"] = norm_params(p + "post_attention_layernorm")
        if c["layer_scale"]:
            layer["attn_gain"] = param(p + "self_attn_gain", (d,), 0.5)
            layer["mlp_gain"] = param(p + "mlp_gain", (d,), 0.5)
        layers.append(layer)
    final = norm_params("model.norm") if c["final_norm"] else None

    def norm(x, wb):
        w, b = wb
        if c["norm"] == "rms":
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["norm_eps"]) * w
        return F.layer_norm(x, (d,), w, b, c["norm_eps"])

    def linear(x, wb):
        return F.linear(x, wb[0], wb[1])

    act = {"silu_glu": F.silu, "gelu_glu": F.gelu, "gelu": F.gelu, "relu": F.relu,
           "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}[c["activation"]]

    def attention(x, layer):
        b, t, _ = x.shape
        q = linear(x, layer["q"]).view(b, t, hq, hd).transpose(1, 2)
        k = linear(x, layer["k"]).view(b, t, hkv, hd).transpose(1, 2)
        v = linear(x, layer["v"]).view(b, t, hkv, hd).transpose(1, 2)
        if c["rope_theta"] > 0:
            positions = torch.arange(t)
            rotary = c["rope_dim"] or hd
            q, k = apply_rope(q, positions, c["rope_theta"], rotary), apply_rope(k, positions, c["rope_theta"], rotary)
        if control == "gqa":
            k, v = roll_kv_heads(k, hkv, dim=1), roll_kv_heads(v, hkv, dim=1)
        k = k.repeat_interleave(hq // hkv, dim=1)  # Hugging Face's repeat_kv
        v = v.repeat_interleave(hq // hkv, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        scores = scores + torch.triu(torch.full((t, t), float("-inf"), dtype=torch.float64), diagonal=1)
        out = torch.softmax(scores, dim=-1) @ v
        w_o, b_o = layer["o"]
        if control == "transpose":
            w_o = w_o.t()
        return F.linear(out.transpose(1, 2).reshape(b, t, hq * hd), w_o, b_o)

    def mlp(x, layer):
        if gated:
            return linear(act(linear(x, layer["gate"])) * linear(x, layer["up"]), layer["down"])
        return linear(act(linear(x, layer["up"])), layer["down"])

    alpha, beta = c["residual_scale"], 1.0 if control == "scale" else c["branch_scale"]
    gains = c["layer_scale"] and control != "scale"  # the control still draws the gains: the later draws stay put

    def branch(out, layer, gain):
        return beta * (out * layer[gain] if gains else out)

    def reference(x):
        for layer in layers:
            if placement == "pre":
                x = alpha * x + branch(attention(norm(x, layer["attn_norm"]), layer), layer, "attn_gain")
                x = alpha * x + branch(mlp(norm(x, layer["mlp_norm"]), layer), layer, "mlp_gain")
            elif placement == "sandwich":
                a = norm(attention(norm(x, layer["attn_norm"]), layer), layer["attn_out_norm"])
                x = alpha * x + branch(a, layer, "attn_gain")
                m = norm(mlp(norm(x, layer["mlp_norm"]), layer), layer["mlp_out_norm"])
                x = alpha * x + branch(m, layer, "mlp_gain")
            elif placement == "deepnorm":  # DeepNet's x = LN(alpha * x + G(x)), alpha from the paper, not rill
                a = deepnet_alpha(c["num_layers"])
                x = norm(a * x + attention(x, layer), layer["attn_norm"])
                x = norm(a * x + mlp(x, layer), layer["mlp_norm"])
            else:  # post
                x = norm(alpha * x + branch(attention(x, layer), layer, "attn_gain"), layer["attn_norm"])
                x = norm(alpha * x + branch(mlp(x, layer), layer, "mlp_gain"), layer["mlp_norm"])
        return norm(x, final) if final is not None else x

    return weights, reference


# ---------------------------------------------------------------------------
# Reference 3: Hugging Face transformers' own decoder layers: Gemma2 (sandwich
# norm), Granite (branch scale) and Mimi (LayerScale)


def gemma2_case(gen, config, control=None):
    """Gemma2DecoderLayer (eager attention) and Gemma2RMSNorm, in float64 but
    for what Gemma2 itself computes in float32 (norms, RoPE tables, softmax)."""
    try:
        from transformers import Gemma2Config
        from transformers.models.gemma2.modeling_gemma2 import Gemma2DecoderLayer, Gemma2RMSNorm
    except ImportError as missing:
        raise Skip(f"the Gemma2 reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"]
    # What Gemma2 can express: RMSNorm, a gated MLP, full RoPE, no biases, unit residual scales.
    assert c["norm"] == "rms" and c["rope_dim"] == 0 and c["residual_scale"] == c["branch_scale"] == 1.0
    assert not (c["qkv_bias"] or c["o_bias"] or c["mlp_bias"])
    if control == "scale" and not c["layer_scale"]:
        return None, None  # no LayerScale to leave out
    hidden_activation = {"silu_glu": "silu", "gelu_glu": "gelu"}[c["activation"]]
    hf = Gemma2Config(hidden_size=d, intermediate_size=c["intermediate_size"], num_hidden_layers=c["num_layers"],
                      num_attention_heads=hq, num_key_value_heads=hkv, head_dim=hd, hidden_activation=hidden_activation,
                      rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                      rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                      query_pre_attn_scalar=hd, attn_logit_softcapping=None, attention_bias=False,
                      attn_implementation="eager")
    weights = {}
    param = weight_drawer(gen, c["dtype"], weights)

    layers = []
    for i in range(c["num_layers"]):
        p = f"model.layers.{i}."
        layer = Gemma2DecoderLayer(hf, layer_idx=i).double().eval()
        modules = dict(layer.named_modules())
        linears = [("self_attn.q_proj", d), ("self_attn.k_proj", d), ("self_attn.v_proj", d),
                   ("self_attn.o_proj", hq * hd), ("mlp.up_proj", d), ("mlp.down_proj", c["intermediate_size"]),
                   ("mlp.gate_proj", d)]
        with torch.no_grad():
            for name, fan_in in linears:
                modules[name].weight.copy_(param(p + name + ".weight", modules[name].weight.shape, fan_in ** -0.5))
            norms = {}
            for name in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                         "post_feedforward_layernorm"):
                norms[name] = param(p + name + ".weight", (d,), 0.3, 1.0)
            if c["layer_scale"]:  # LayerScale (CaiT): gain * branch, folded into the branch's last norm
                for norm_name, gain_name in (("post_attention_layernorm", "self_attn_gain"),
                                             ("post_feedforward_layernorm", "mlp_gain")):
                    gain = param(p + gain_name, (d,), 0.5)  # drawn for the control too: the later draws stay put
                    if control != "scale":
                        norms[norm_name] = norms[norm_name] * gain
            for name, w in norms.items():
                modules[name].weight.copy_(w - 1.0)  # Gemma's RMSNorm scales by (1 + weight); rill's by weight
            if control == "gqa":
                for name in ("self_attn.k_proj", "self_attn.v_proj"):
                    modules[name].weight.copy_(roll_kv_heads(modules[name].weight.clone(), hkv))
            elif control == "transpose":
                modules["self_attn.o_proj"].weight.copy_(modules["self_attn.o_proj"].weight.t().clone())
        layers.append(layer)
    final = None
    if c["final_norm"]:
        final = Gemma2RMSNorm(d, eps=hf.rms_norm_eps).double()
        with torch.no_grad():
            final.weight.copy_(param("model.norm.weight", (d,), 0.3, 1.0) - 1.0)

    def reference(x):
        b, t, _ = x.shape
        mask = torch.triu(torch.full((t, t), float("-inf"), dtype=torch.float64), diagonal=1)[None, None]
        positions = torch.arange(t)[None].expand(b, t)
        with torch.no_grad():
            for layer in layers:
                x = layer(x, attention_mask=mask, position_ids=positions)[0]
            return final(x) if final is not None else x

    return weights, reference


def granite_case(gen, config, control=None):
    """GraniteDecoderLayer (eager attention) and GraniteRMSNorm: a Llama-style
    pre-norm layer that adds each sublayer's output times residual_multiplier,
    h = h + residual_multiplier * F(norm(h)), which is rill's branch scale. In
    float64 but for what Granite itself computes in float32 (norms, RoPE
    tables, softmax)."""
    try:
        from transformers import GraniteConfig
        from transformers.models.granite.modeling_granite import (GraniteDecoderLayer, GraniteRMSNorm,
                                                                  GraniteRotaryEmbedding)
    except ImportError as missing:
        raise Skip(f"the Granite reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd, inter = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"], c["intermediate_size"]
    # What Granite can express: pre RMSNorm, a gated MLP, full RoPE, head_dim = hidden_size / num_heads, one bias
    # switch for all four attention projections (attention_bias) and one for the MLP's, no LayerScale and an
    # unscaled skip path.
    assert c["norm"] == "rms" and c["norm_placement"] == "pre" and c["rope_dim"] == 0 and hq * hd == d
    assert c["qkv_bias"] == c["o_bias"] and c["residual_scale"] == 1.0 and not c["layer_scale"]
    hf = GraniteConfig(hidden_size=d, intermediate_size=inter, num_hidden_layers=c["num_layers"],
                       num_attention_heads=hq, num_key_value_heads=hkv,
                       hidden_act={"silu_glu": "silu", "gelu_glu": "gelu"}[c["activation"]],
                       rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                       rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                       attention_bias=c["qkv_bias"], mlp_bias=c["mlp_bias"],
                       residual_multiplier=1.0 if control == "scale" else c["branch_scale"],
                       # Granite scales q.k by attention_multiplier, a config value of its own (not derived from
                       # head_dim); rill's attention scales by 1/sqrt(head_dim)
                       attention_multiplier=hd ** -0.5, attn_implementation="eager")
    weights = {}
    param = weight_drawer(gen, c["dtype"], weights)

    layers = []
    for i in range(c["num_layers"]):
        p = f"model.layers.{i}."
        layer = GraniteDecoderLayer(hf, layer_idx=i).double().eval()
        modules = dict(layer.named_modules())
        linears = [("self_attn.q_proj", d, c["qkv_bias"]), ("self_attn.k_proj", d, c["qkv_bias"]),
                   ("self_attn.v_proj", d, c["qkv_bias"]), ("self_attn.o_proj", hq * hd, c["o_bias"]),
                   ("mlp.gate_proj", d, c["mlp_bias"]), ("mlp.up_proj", d, c["mlp_bias"]),
                   ("mlp.down_proj", inter, c["mlp_bias"])]
        with torch.no_grad():
            for name, fan_in, bias in linears:
                module = modules[name]
                module.weight.copy_(param(p + name + ".weight", module.weight.shape, fan_in ** -0.5))
                if bias:
                    module.bias.copy_(param(p + name + ".bias", module.bias.shape, 0.2))
            for name in ("input_layernorm", "post_attention_layernorm"):
                modules[name].weight.copy_(param(p + name + ".weight", (d,), 0.3, 1.0))
            if control == "gqa":
                for name in ("self_attn.k_proj", "self_attn.v_proj"):
                    modules[name].weight.copy_(roll_kv_heads(modules[name].weight.clone(), hkv))
                    if c["qkv_bias"]:
                        modules[name].bias.copy_(roll_kv_heads(modules[name].bias.clone(), hkv))
            elif control == "transpose":
                modules["self_attn.o_proj"].weight.copy_(modules["self_attn.o_proj"].weight.t().clone())
        layers.append(layer)
    final = None
    if c["final_norm"]:
        final = GraniteRMSNorm(d, eps=hf.rms_norm_eps).double()
        with torch.no_grad():
            final.weight.copy_(param("model.norm.weight", (d,), 0.3, 1.0))
    rotary = GraniteRotaryEmbedding(hf)  # GraniteModel computes the RoPE tables once for every layer

    def reference(x):
        b, t, _ = x.shape
        mask = torch.triu(torch.full((t, t), float("-inf"), dtype=torch.float64), diagonal=1)[None, None]
        positions = torch.arange(t)[None].expand(b, t)
        with torch.no_grad():
            position_embeddings = rotary(x, positions)
            for layer in layers:
                x = layer(x, attention_mask=mask, position_ids=positions, position_embeddings=position_embeddings)[0]
            return final(x) if final is not None else x

    return weights, reference


def opt_case(gen, config, control=None):
    """OPTModel (eager attention) with its learned position embeddings set to
    0, since they lie above the stack: LayerNorm before each sublayer
    (do_layer_norm_before, OPT-125m and larger) with the decoder's final norm,
    or after it (OPT-350m's post placement) without one; MHA without RoPE,
    every bias, a ReLU fc1/fc2 MLP. Its names are renamed to rill's
    (self_attn.out_proj, self_attn_layer_norm, the layer's final_layer_norm,
    fc1, fc2, the decoder's final_layer_norm). OPT's LayerNorm eps is fixed
    at 1e-5; the eps control sets the reference's."""
    try:
        from transformers import OPTConfig, OPTModel
    except ImportError as missing:
        raise Skip(f"the OPT reference needs transformers: {missing}")

    c = config
    d, h, hd = c["hidden_size"], c["num_heads"], c["head_dim"]
    pre = c["norm_placement"] == "pre"
    # What OPT can express: LayerNorm (eps 1e-5), MHA, no RoPE, every bias, a plain MLP, pre with a final norm or post
    # without one.
    assert c["norm"] == "layer" and c["norm_eps"] == 1e-5 and c["num_kv_heads"] == h and h * hd == d
    assert c["rope_theta"] == 0 and c["qkv_bias"] and c["o_bias"] and c["mlp_bias"] and c["final_norm"] == pre
    assert c["norm_placement"] in ("pre", "post")
    if control in ("rope_theta", "scale"):
        return None, None  # no RoPE; no branch scale or LayerScale
    hf = OPTConfig(vocab_size=8, hidden_size=d, num_hidden_layers=c["num_layers"], ffn_dim=c["intermediate_size"],
                   num_attention_heads=h, word_embed_proj_dim=d, do_layer_norm_before=pre,
                   activation_function=c["activation"], enable_bias=True, layer_norm_elementwise_affine=True,
                   max_position_embeddings=64, attn_implementation="eager")
    model = OPTModel(hf).double().eval()
    rename = {"self_attn.out_proj.": "self_attn.o_proj.", "self_attn_layer_norm.": "input_layernorm.",
              "final_layer_norm.": "post_attention_layernorm.", "fc1.": "mlp.up_proj.", "fc2.": "mlp.down_proj."}
    weights = {}
    for name, value in draw_hf_params(gen, model, c["dtype"]).items():
        if name.startswith("decoder.layers."):
            layer, rest = name[len("decoder.layers."):].split(".", 1)
            for theirs, ours in rename.items():
                if rest.startswith(theirs):
                    rest = ours + rest[len(theirs):]
                    break
            weights[f"model.layers.{layer}.{rest}"] = value
        elif name.startswith("decoder.final_layer_norm."):
            weights["model.norm." + name.rsplit(".", 1)[1]] = value
    with torch.no_grad():
        model.decoder.embed_positions.weight.zero_()
        for module in model.modules():
            if control == "eps" and isinstance(module, torch.nn.LayerNorm):
                module.eps = wrong_eps(c["norm_eps"], c["dtype"])
        for layer in model.decoder.layers:
            attn = layer.self_attn
            if control == "gqa":
                for proj in (attn.k_proj, attn.v_proj):
                    for p in (proj.weight, proj.bias):
                        p.copy_(roll_kv_heads(p.clone(), h))
            elif control == "transpose":
                attn.out_proj.weight.copy_(attn.out_proj.weight.t().clone())
    run = hf_reference(model)

    def reference(x):
        # OPT's mask helper fills a float64 mask through the default dtype, which must then be float64 too.
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            return run(x)
        finally:
            torch.set_default_dtype(previous)

    return weights, reference


def mimi_case(gen, config, control=None):
    """MimiTransformerLayer (eager attention), the transformer of the Mimi audio
    codec: pre LayerNorm (weight and bias), LayerScale on each sublayer's output
    (MimiLayerScale, h = h + scale * F(norm(h)) with a per-channel scale: rill's
    self_attn_gain and mlp_gain) and a plain MLP fc2(act(fc1(x))) (rill's
    up_proj and down_proj). In float64 but for what Mimi itself computes in
    float32 (RoPE tables, softmax)."""
    try:
        from transformers import MimiConfig
        from transformers.models.mimi.modeling_mimi import MimiTransformerLayer
    except ImportError as missing:
        raise Skip(f"the Mimi reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd, inter = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"], c["intermediate_size"]
    # What Mimi can express: pre LayerNorm, LayerScale, a plain MLP without biases, full RoPE, one bias switch for
    # all four attention projections (attention_bias), unit residual scales, and no final norm
    # (MimiTransformerModel has none).
    assert c["norm"] == "layer" and c["norm_placement"] == "pre" and c["rope_dim"] == 0 and c["layer_scale"]
    assert c["qkv_bias"] == c["o_bias"] and not c["mlp_bias"] and not c["final_norm"]
    assert c["residual_scale"] == c["branch_scale"] == 1.0
    # ACT2FN's "gelu" is PyTorch's erf GELU, "gelu_pytorch_tanh" its tanh approximation.
    hidden_act = {"gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh", "relu": "relu"}[c["activation"]]
    # sliding_window only shapes the mask MimiTransformerModel builds; the layer applies the causal mask it is given.
    hf = MimiConfig(hidden_size=d, intermediate_size=inter, num_hidden_layers=c["num_layers"], num_attention_heads=hq,
                    num_key_value_heads=hkv, head_dim=hd, hidden_act=hidden_act,
                    norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                    rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                    attention_bias=c["qkv_bias"], attn_implementation="eager")
    weights = {}
    param = weight_drawer(gen, c["dtype"], weights)

    layers = []
    for i in range(c["num_layers"]):
        p = f"model.layers.{i}."
        layer = MimiTransformerLayer(hf, layer_idx=i).double().eval()
        modules = dict(layer.named_modules())
        # (Mimi's module, rill's weight name, fan-in, bias)
        linears = [("self_attn.q_proj", "self_attn.q_proj", d, c["qkv_bias"]),
                   ("self_attn.k_proj", "self_attn.k_proj", d, c["qkv_bias"]),
                   ("self_attn.v_proj", "self_attn.v_proj", d, c["qkv_bias"]),
                   ("self_attn.o_proj", "self_attn.o_proj", hq * hd, c["o_bias"]),
                   ("mlp.fc1", "mlp.up_proj", d, False), ("mlp.fc2", "mlp.down_proj", inter, False)]
        with torch.no_grad():
            for name, rill_name, fan_in, bias in linears:
                module = modules[name]
                module.weight.copy_(param(p + rill_name + ".weight", module.weight.shape, fan_in ** -0.5))
                if bias:
                    module.bias.copy_(param(p + rill_name + ".bias", module.bias.shape, 0.2))
            for name in ("input_layernorm", "post_attention_layernorm"):
                modules[name].weight.copy_(param(p + name + ".weight", (d,), 0.3, 1.0))
                modules[name].bias.copy_(param(p + name + ".bias", (d,), 0.3))
            for name, rill_name in (("self_attn_layer_scale", "self_attn_gain"), ("mlp_layer_scale", "mlp_gain")):
                gain = param(p + rill_name, (d,), 0.5)  # drawn for the control too: the later draws stay put
                modules[name].scale.copy_(torch.ones(d) if control == "scale" else gain)
            if control == "gqa":
                for name in ("self_attn.k_proj", "self_attn.v_proj"):
                    modules[name].weight.copy_(roll_kv_heads(modules[name].weight.clone(), hkv))
                    if c["qkv_bias"]:
                        modules[name].bias.copy_(roll_kv_heads(modules[name].bias.clone(), hkv))
            elif control == "transpose":
                modules["self_attn.o_proj"].weight.copy_(modules["self_attn.o_proj"].weight.t().clone())
        layers.append(layer)

    def reference(x):
        b, t, _ = x.shape
        mask = torch.triu(torch.full((t, t), float("-inf"), dtype=torch.float64), diagonal=1)[None, None]
        positions = torch.arange(t)[None].expand(b, t)
        with torch.no_grad():
            for layer in layers:
                x = layer(x, attention_mask=mask, position_ids=positions)[0]
        return x

    return weights, reference


# ---------------------------------------------------------------------------
# Reference 4: the QK norm. OLMo 2 from transformers' own layers (full-width
# QK norm, output placement); Qwen3 (per-head QK norm), which transformers
# 4.47.1 lacks, as transformers' Qwen2 layer with the norms Qwen3 adds.


# ---------------------------------------------------------------------------
# Reference 6: parallel attention + MLP and fused checkpoint tensors, from
# transformers' GPT-NeoX, Phi (Phi-2) and Phi-3 models. Each model runs whole
# (inputs_embeds in, last_hidden_state out, so its final norm included) with
# its own names and tensor layouts; the weights rill reads are its state dict
# under the checkpoint's prefix, fused tensors kept fused.


def draw_hf_params(gen, model, dtype):
    """Gives every parameter of model but the token embedding a value rounded
    to dtype (norm weights near 1); returns them by name."""
    values = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("embed"):
                continue
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if "norm" in name or ".ln_" in "." + name:  # GPT-J's ln_1, ln_f; Falcon's ln_attn, ln_mlp, ln_f
                value = noise * 0.3 + (1.0 if name.endswith("weight") else 0.0)
            else:
                value = noise * (0.2 if name.endswith("bias") else p.shape[1] ** -0.5)
            p.copy_(rounded(value, dtype))
            values[name] = p.detach().clone()
    return values


def hf_reference(model):
    def reference(x):
        with torch.no_grad():
            return model(inputs_embeds=x, use_cache=False).last_hidden_state

    return reference


def neox_case(gen, config, control=None):
    """GPTNeoXModel (eager attention) with use_parallel_residual: LayerNorm with
    bias, two input norms (input_layernorm for attention, post_attention_layernorm
    for the MLP, both on the same h), partial rotary (rotary_pct), biased linears
    and a plain GELU MLP. Its checkpoint names are kept, query_key_value
    interleaved per head ([H, 3, hd] rows: each head's q, k, v) and fused."""
    try:
        from transformers import GPTNeoXConfig, GPTNeoXModel
    except ImportError as missing:
        raise Skip(f"the GPT-NeoX reference needs transformers: {missing}")

    c = config
    d, h, hd = c["hidden_size"], c["num_heads"], c["head_dim"]
    # What GPT-NeoX can express: MHA, head_dim = hidden_size / num_heads, every bias, LayerNorm, a final norm.
    assert c["norm"] == "layer" and c["num_kv_heads"] == h and h * hd == d and c["final_norm"]
    assert c["qkv_bias"] and c["o_bias"] and c["mlp_bias"] and c["parallel_residual"] and c["parallel_norms"] == 2
    if control == "scale":
        return None, None  # no branch scale or LayerScale
    hf = GPTNeoXConfig(vocab_size=8, hidden_size=d, num_hidden_layers=c["num_layers"], num_attention_heads=h,
                       intermediate_size=c["intermediate_size"], hidden_act={"gelu": "gelu", "relu": "relu"}[
                           c["activation"]], rotary_pct=c["rope_dim"] / hd,
                       rotary_emb_base=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c[
                           "rope_theta"],
                       layer_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                       use_parallel_residual=control != "sequential", attention_bias=True,
                       attn_implementation="eager")
    model = GPTNeoXModel(hf).double().eval()
    weights = {"gpt_neox." + k: v for k, v in draw_hf_params(gen, model, c["dtype"]).items()}
    with torch.no_grad():
        for layer in model.layers:
            qkv, dense = layer.attention.query_key_value, layer.attention.dense
            if control == "gqa":  # per head [q; k; v]: head i's k and v rows become head i + 1's
                for p in (qkv.weight, qkv.bias):
                    heads = p.view(h, 3, -1).clone()
                    heads[:, 1:] = heads[:, 1:].roll(-1, dims=0)
                    p.copy_(heads.view(p.shape))
            elif control == "transpose":
                dense.weight.copy_(dense.weight.t().clone())
            elif control == "split":  # the reference reads the fused rows as blocks [q; k; v]
                for p in (qkv.weight, qkv.bias):
                    p.copy_(p.view(3, h, -1).transpose(0, 1).reshape(p.shape).clone())
    return weights, hf_reference(model)


def phi_case(gen, config, control=None):
    """PhiModel (Phi-2; eager attention): one shared LayerNorm (input_layernorm)
    feeding attention and MLP in parallel, h = h + A(ln(h)) + M(ln(h)), partial
    rotary (partial_rotary_factor), biased q/k/v/dense, a plain fc2(act(fc1(x)))
    MLP and final_layernorm. Phi's names dense, fc1, fc2 and final_layernorm are
    renamed to rill's o_proj, up_proj, down_proj and model.norm. In float64 but
    for what Phi itself computes in float32 (RoPE tables, attention scores)."""
    try:
        from transformers import PhiConfig, PhiModel
    except ImportError as missing:
        raise Skip(f"the Phi reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"]
    # What Phi can express: LayerNorm, one shared input norm, head_dim = hidden_size / num_heads, every bias, a
    # final norm.
    assert c["norm"] == "layer" and hq * hd == d and c["final_norm"] and c["parallel_residual"]
    assert c["parallel_norms"] == 1 and c["qkv_bias"] and c["o_bias"] and c["mlp_bias"]
    if control == "scale":
        return None, None  # no branch scale or LayerScale
    # ACT2FN's "gelu_new" is the tanh approximation.
    hf = PhiConfig(vocab_size=8, hidden_size=d, intermediate_size=c["intermediate_size"],
                   num_hidden_layers=c["num_layers"], num_attention_heads=hq, num_key_value_heads=hkv,
                   hidden_act={"gelu": "gelu", "gelu_tanh": "gelu_new"}[c["activation"]],
                   partial_rotary_factor=c["rope_dim"] / hd,
                   rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                   layer_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                   qk_layernorm=False, attn_implementation="eager")
    model = PhiModel(hf).double().eval()
    rename = {"self_attn.dense.": "self_attn.o_proj.", "mlp.fc1.": "mlp.up_proj.", "mlp.fc2.": "mlp.down_proj.",
              "final_layernorm.": "norm."}
    weights = {}
    for name, value in draw_hf_params(gen, model, c["dtype"]).items():
        for theirs, ours in rename.items():
            name = name.replace(theirs, ours)
        weights["model." + name] = value
    with torch.no_grad():
        for layer in model.layers:
            if control == "gqa":
                for name in ("k_proj", "v_proj"):
                    for p in (getattr(layer.self_attn, name).weight, getattr(layer.self_attn, name).bias):
                        p.copy_(roll_kv_heads(p.clone(), hkv))
            elif control == "transpose":
                layer.self_attn.dense.weight.copy_(layer.self_attn.dense.weight.t().clone())
            elif control == "sequential":
                layer.forward = phi_sequential_forward(layer)
    return weights, hf_reference(model)


def phi_sequential_forward(layer):
    """PhiDecoderLayer.forward made sequential: h += A(ln(h)); h += M(ln(h))."""
    def forward(hidden_states, **kwargs):
        h = hidden_states + layer.self_attn(hidden_states=layer.input_layernorm(hidden_states), **kwargs)[0]
        return (h + layer.mlp(layer.input_layernorm(h)),)

    return forward


def interleaved_rows(t, head_dim, rope_dim):
    """t's rows in each head of head_dim reordered from the half-split rotary
    layout to the interleaved one (pair i at rows 2i, 2i + 1): what rill runs
    when rope_interleave is left out, seen from the interleaved model."""
    half = rope_dim // 2
    order = []
    for head in range(t.shape[0] // head_dim):
        within = [i // 2 if i % 2 == 0 else half + i // 2 for i in range(rope_dim)] + list(range(rope_dim, head_dim))
        order += [head * head_dim + j for j in within]
    return t[order].clone()


# Interleaved (GPT-J style) rotary: rill reorders the q and k rows as it loads them (rope_interleave).
INTERLEAVE_CONTROLS = {"interleave": "the interleaved rotary read as half-split (rope_interleave left out)"}


def sequential_forward(attention_norm, attention, mlp_norm, mlp):
    """A parallel decoder layer's forward made sequential: h += A(attention_norm(h)); h += M(mlp_norm(h))."""
    def forward(hidden_states, **kwargs):
        h = hidden_states + attention(attention_norm(hidden_states), **kwargs)[0]
        return (h + mlp(mlp_norm(h)),)

    return forward


def gptj_case(gen, config, control=None):
    """GPTJModel (eager attention): one LayerNorm (ln_1) feeding attention and
    MLP in parallel, interleaved rotary on the first rotary_dim dims of each
    head, q/k/v/out projections without bias, a gelu_new fc_in/fc_out MLP with
    biases, ln_f. GPT-J has no GQA and a fixed RoPE base of 10000. Its names
    are renamed to rill's (ln_1, attn.out_proj, mlp.fc_in, mlp.fc_out, ln_f);
    the q and k rows stay interleaved. In float64 but for what GPT-J itself
    computes in float32 (RoPE tables, q and k in the attention scores)."""
    try:
        from transformers import GPTJConfig, GPTJModel
    except ImportError as missing:
        raise Skip(f"the GPT-J reference needs transformers: {missing}")

    c = config
    d, h, hd, rd = c["hidden_size"], c["num_heads"], c["head_dim"], c["rope_dim"]
    # What GPT-J can express: MHA, LayerNorm, one shared norm, MLP biases only, theta 10000, a final norm.
    assert c["norm"] == "layer" and c["num_kv_heads"] == h and h * hd == d and c["final_norm"]
    assert c["parallel_residual"] and c["parallel_norms"] == 1 and c["mlp_bias"] and c["rope_interleave"]
    assert not (c["qkv_bias"] or c["o_bias"]) and c["rope_theta"] == 10000.0 and 0 < rd < hd
    if control in ("scale", "rope_theta"):
        return None, None  # no branch scale or LayerScale; the RoPE base is fixed
    hf = GPTJConfig(vocab_size=8, n_embd=d, n_layer=c["num_layers"], n_head=h, n_inner=c["intermediate_size"],
                    rotary_dim=rd, activation_function={"gelu_tanh": "gelu_new", "gelu": "gelu"}[c["activation"]],
                    layer_norm_epsilon=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                    attn_implementation="eager")
    model = GPTJModel(hf).double().eval()
    rename = {"ln_1.": "input_layernorm.", "attn.out_proj.": "self_attn.o_proj.", "attn.": "self_attn.",
              "mlp.fc_in.": "mlp.up_proj.", "mlp.fc_out.": "mlp.down_proj."}
    weights = {}
    for name, value in draw_hf_params(gen, model, c["dtype"]).items():
        if name == "wte.weight":
            continue
        if name.startswith("ln_f."):
            weights["model.norm." + name[len("ln_f."):]] = value
            continue
        layer, rest = name[len("h."):].split(".", 1)
        for theirs, ours in rename.items():
            if rest.startswith(theirs):
                rest = ours + rest[len(theirs):]
                break
        weights[f"model.layers.{layer}.{rest}"] = value
    with torch.no_grad():
        for layer in model.h:
            attn = layer.attn
            if control == "gqa":
                for proj in (attn.k_proj, attn.v_proj):
                    proj.weight.copy_(roll_kv_heads(proj.weight.clone(), h))
            elif control == "transpose":
                attn.out_proj.weight.copy_(attn.out_proj.weight.t().clone())
            elif control == "interleave":
                for proj in (attn.q_proj, attn.k_proj):
                    proj.weight.copy_(interleaved_rows(proj.weight, hd, rd))
            elif control == "sequential":
                layer.forward = sequential_forward(layer.ln_1, layer.attn, layer.ln_1, layer.mlp)
    return weights, hf_reference(model)


def cohere_case(gen, config, control=None):
    """CohereModel (Command R; eager attention): one LayerNorm without bias
    feeding attention and a SwiGLU MLP in parallel, interleaved rotary on whole
    heads, GQA, q/k/v/o biases (attention_bias), and with qk_norm
    "head_weights" Command R+'s use_qk_norm: a LayerNorm without bias over
    each head of q and k with a weight per head. Its names are rill's; its
    norms have no bias, so rill's LayerNorm biases are written as 0, as the
    language-model loader sets them. In float64 but for what Cohere itself
    computes in float32 (norms, RoPE)."""
    try:
        from transformers import CohereConfig, CohereModel
    except ImportError as missing:
        raise Skip(f"the Cohere reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"]
    # What Cohere can express: LayerNorm, one shared norm, SwiGLU, full rotary, q/k/v/o biases alike, a final norm.
    assert c["norm"] == "layer" and hq * hd == d and c["final_norm"] and c["activation"] == "silu_glu"
    assert c["parallel_residual"] and c["parallel_norms"] == 1 and c["rope_interleave"] and c["rope_dim"] == 0
    assert c["qkv_bias"] == c["o_bias"] and not c["mlp_bias"]
    qk_norm = c.get("qk_norm", "none") == "head_weights"
    assert c.get("qk_norm", "none") in ("none", "head_weights")
    if control == "scale" or (control in {**QK_NORM_CONTROLS, **QK_LAYER_NORM_CONTROLS} and not qk_norm):
        return None, None  # no branch scale or LayerScale; no QK norm to leave out
    hf = CohereConfig(vocab_size=8, hidden_size=d, intermediate_size=c["intermediate_size"],
                      num_hidden_layers=c["num_layers"], num_attention_heads=hq, num_key_value_heads=hkv,
                      hidden_act="silu", attention_bias=c["qkv_bias"], use_qk_norm=qk_norm,
                      rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                      layer_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                      pad_token_id=0, bos_token_id=1, eos_token_id=2, attn_implementation="eager")
    model = CohereModel(hf).double().eval()
    weights = {"model." + k: v for k, v in draw_hf_params(gen, model, c["dtype"]).items()}
    for name in [n for n in weights if n.endswith("layernorm.weight") or n == "model.norm.weight"]:
        weights[name[:-len("weight")] + "bias"] = torch.zeros_like(weights[name])
    with torch.no_grad():
        for layer in model.layers:
            attn = layer.self_attn
            if control == "gqa":
                for proj in (attn.k_proj, attn.v_proj):
                    for p in (proj.weight, proj.bias) if c["qkv_bias"] else (proj.weight,):
                        p.copy_(roll_kv_heads(p.clone(), hkv))
            elif control == "transpose":
                attn.o_proj.weight.copy_(attn.o_proj.weight.t().clone())
            elif control == "interleave":
                for proj in (attn.q_proj, attn.k_proj):
                    for p in (proj.weight, proj.bias) if c["qkv_bias"] else (proj.weight,):
                        p.copy_(interleaved_rows(p, hd, hd))
            elif control == "sequential":
                layer.forward = sequential_forward(layer.input_layernorm, layer.self_attn, layer.input_layernorm, layer.mlp)
            elif control == "no_qk_norm":
                attn.use_qk_norm = False
            elif control == "qk_norm_form":  # every head with head 0's weight, as one weight shared by the heads
                for norm in (attn.q_norm, attn.k_norm):
                    norm.weight.copy_(norm.weight[:1].expand_as(norm.weight).clone())
            elif control == "qk_rms":
                for norm in (attn.q_norm, attn.k_norm):
                    norm.forward = rms_head_norm(norm)
    return weights, hf_reference(model)


QK_LAYER_NORM_CONTROLS = {"qk_rms": "the QK LayerNorm as an RMSNorm (the mean left in)"}


def rms_head_norm(norm):
    """A CohereLayerNorm's forward as an RMSNorm over each head with the same weights and eps."""
    def forward(x):
        x32 = x.to(torch.float32)
        y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
        return (norm.weight.to(torch.float32) * y).to(x.dtype)

    return forward


def falcon_case(new_arch, gen, config, control=None):
    """FalconModel (eager attention) with its own names, query_key_value kept
    fused: grouped by KV head (each group's query rows, then its k and v rows),
    which is the layout of the new decoder architecture (num_kv_heads groups),
    of the old multi-query one (one group) and of the old multi-head one (a
    group per head). Parallel attention + MLP with one shared norm
    (input_layernorm) or two (ln_attn, ln_mlp: num_ln_in_parallel_attn = 2),
    LayerNorm, a plain GELU MLP, biases all on or all off (bias)."""
    try:
        from transformers import FalconConfig, FalconModel
    except ImportError as missing:
        raise Skip(f"the Falcon reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"]
    # What Falcon can express: LayerNorm, parallel, head_dim = hidden_size / num_heads, biases alike, a final norm.
    assert c["norm"] == "layer" and hq * hd == d and c["final_norm"] and c["parallel_residual"]
    assert c["qkv_bias"] == c["o_bias"] == c["mlp_bias"] and c["rope_dim"] == 0
    assert new_arch or hkv in (1, hq) and c["parallel_norms"] == 1
    if control == "scale" or control in ("gqa", "split") and hkv == 1:
        return None, None  # no branch scale or LayerScale; one KV head: no grouping to get wrong
    hf = FalconConfig(vocab_size=8, hidden_size=d, num_hidden_layers=c["num_layers"], num_attention_heads=hq,
                      num_kv_heads=hkv if new_arch else None, new_decoder_architecture=new_arch,
                      multi_query=hkv == 1,
                      num_ln_in_parallel_attn=c["parallel_norms"] if new_arch else None,
                      ffn_hidden_size=c["intermediate_size"], activation=c["activation"], bias=c["qkv_bias"],
                      rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                      layer_norm_epsilon=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                      attn_implementation="eager")
    model = FalconModel(hf).double().eval()
    weights = {"transformer." + k: v for k, v in draw_hf_params(gen, model, c["dtype"]).items()
               if not k.startswith("word_embeddings")}
    group = hq // hkv + 2  # rows of hd per KV group: its query heads, k, v
    with torch.no_grad():
        for layer in model.h:
            qkv, dense = layer.self_attention.query_key_value, layer.self_attention.dense
            for p in (qkv.weight, qkv.bias) if qkv.bias is not None else (qkv.weight,):
                groups = p.view(hkv, group, hd, *p.shape[1:]).clone()
                if control == "gqa":  # group i's k and v rows become group i + 1's
                    groups[:, -2:] = groups[:, -2:].roll(-1, dims=0)
                elif control == "split":  # the reference reads the fused rows as blocks [q; k; v]
                    q, k, v = p.split([hq * hd, hkv * hd, hkv * hd])
                    groups = torch.cat((q.view(hkv, group - 2, hd, *p.shape[1:]), k.view(hkv, 1, hd, *p.shape[1:]),
                                        v.view(hkv, 1, hd, *p.shape[1:])), dim=1)
                p.copy_(groups.reshape(p.shape))
            if control == "transpose":
                dense.weight.copy_(dense.weight.t().clone())
            elif control == "sequential":
                two = c["parallel_norms"] == 2
                layer.forward = sequential_forward(layer.ln_attn if two else layer.input_layernorm,
                                                   layer.self_attention,
                                                   layer.ln_mlp if two else layer.input_layernorm, layer.mlp)
    return weights, hf_reference(model)


def falcon_new_case(gen, config, control=None):
    return falcon_case(True, gen, config, control)


def falcon_old_case(gen, config, control=None):
    return falcon_case(False, gen, config, control)


def phi3_case(gen, config, control=None):
    """Phi3Model (eager attention): Llama-style pre RMSNorm with the fused
    checkpoint tensors self_attn.qkv_proj ([q; k; v] rows) and mlp.gate_up_proj
    ([gate; up] rows), kept fused; a sliding window longer than the sequence, no
    RoPE scaling. In float64 but for what Phi-3 itself computes in float32
    (norms, RoPE tables, softmax)."""
    try:
        from transformers import Phi3Config, Phi3Model
    except ImportError as missing:
        raise Skip(f"the Phi-3 reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd, inter = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"], c["intermediate_size"]
    # What Phi-3 can express: pre RMSNorm, SwiGLU, full RoPE, no biases, head_dim = hidden_size / num_heads.
    assert c["norm"] == "rms" and c["norm_placement"] == "pre" and c["activation"] == "silu_glu" and hq * hd == d
    assert c["rope_dim"] == 0 and c["final_norm"] and not (c["qkv_bias"] or c["o_bias"] or c["mlp_bias"])
    if control == "scale" or control == "gqa" and hkv == 1:
        return None, None  # no branch scale or LayerScale; one KV head: no head mapping to get wrong
    hf = Phi3Config(vocab_size=8, hidden_size=d, intermediate_size=inter, num_hidden_layers=c["num_layers"],
                    num_attention_heads=hq, num_key_value_heads=hkv, hidden_act="silu",
                    rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                    rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                    rope_scaling=None, sliding_window=64, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                    attn_implementation="eager")
    model = Phi3Model(hf).double().eval()
    weights = {"model." + k: v for k, v in draw_hf_params(gen, model, c["dtype"]).items()}
    with torch.no_grad():
        for layer in model.layers:
            qkv, o, gate_up = layer.self_attn.qkv_proj.weight, layer.self_attn.o_proj.weight, layer.mlp.gate_up_proj.weight
            if control == "gqa":
                q, k, v = qkv.split([hq * hd, hkv * hd, hkv * hd])
                qkv.copy_(torch.cat((q, roll_kv_heads(k.clone(), hkv), roll_kv_heads(v.clone(), hkv))))
            elif control == "transpose":
                o.copy_(o.t().clone())
            elif control == "split":
                gate_up.copy_(torch.cat(gate_up.chunk(2)[::-1]).clone())
    return weights, hf_reference(model)


# ---------------------------------------------------------------------------
# RoPE scaling and NoPE layers (the rope group): whole transformers models with
# their rope_scaling, at positions far enough that the scaling matters.

ROPE_CONTROLS = {
    "scaling_off": "rope_scaling left out (the plain rope_theta frequencies)",
    "rope_type": "the wrong rope_type (linear where llama3 or yarn is right, dynamic where linear is, linear where "
                 "dynamic is; Phi-3 knows only longrope)",
}
LONGROPE_CONTROLS = {"factor_list": "LongRoPE's long factors where the short ones are right, or the reverse"}
NOPE_CONTROLS = {"nope_off": "RoPE on every layer, the NoPE layers included"}
WRONG_ROPE_TYPE = {"llama3": "linear", "linear": "dynamic", "dynamic": "linear", "yarn": "linear"}


def stepwise_reference(model):
    """The model run as rill run runs it: one forward of the whole sequence,
    or (decode_from given) tokens [0, decode_from) as one forward and then
    one forward per token against transformers' DynamicCache. Dynamic NTK and
    LongRoPE derive their frequencies from each forward's positions, so a
    decode step is compared with transformers' own decode step."""
    from transformers import DynamicCache

    def reference(x, decode_from=None):
        with torch.no_grad():
            if decode_from is None:
                return model(inputs_embeds=x, use_cache=False).last_hidden_state
            cache, outputs = DynamicCache(), []
            spans = ([(0, decode_from)] if decode_from > 0 else []) + [(t, t + 1) for t in
                                                                         range(decode_from, x.shape[1])]
            for begin, end in spans:
                out = model(inputs_embeds=x[:, begin:end], past_key_values=cache, use_cache=True)
                outputs.append(out.last_hidden_state)
            return torch.cat(outputs, dim=1)

    reference.stepwise = True
    return reference


def nope_layer_forward(layer):
    """LlamaDecoderLayer.forward with the rotary embedding left out, as
    SmolLM3's attention does on its NoPE layers (`if self.use_rope:
    apply_rotary_pos_emb(...)`): cos 1 and sin 0 make apply_rotary_pos_emb
    the identity. SmolLM3 is not in transformers 4.47.1, so LlamaModel stands
    in for it."""
    forward = layer.forward

    def without_rope(*args, position_embeddings=None, **kwargs):
        cos, sin = position_embeddings
        return forward(*args, position_embeddings=(torch.ones_like(cos), torch.zeros_like(sin)), **kwargs)

    return without_rope


def rope_case(gen, config, control=None):
    """LlamaModel, Qwen2Model (qkv_bias) or Phi3Model (LongRoPE; fused
    qkv_proj and gate_up_proj) with their rope_scaling, eager attention, GQA,
    run whole (inputs_embeds in, last_hidden_state out). rill's config keys
    are transformers' (rope_scaling as [model.rope_scaling]); Phi-3 keeps
    original_max_position_embeddings beside rope_scaling, rill inside it."""
    try:
        from transformers import LlamaConfig, LlamaModel, Phi3Config, Phi3Model, Qwen2Config, Qwen2Model
    except ImportError as missing:
        raise Skip(f"the RoPE scaling references need transformers: {missing}")

    c = dict(config)
    d, hq, hkv, hd, inter = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"], c["intermediate_size"]
    assert c["norm"] == "rms" and c["norm_placement"] == "pre" and c["activation"] == "silu_glu" and hq * hd == d
    assert c["rope_dim"] == 0 and c["final_norm"] and not (c["o_bias"] or c["mlp_bias"])
    scaling = dict(c.get("rope_scaling", {}))
    interval = c.get("no_rope_layer_interval", 0)
    family = "phi3" if scaling.get("rope_type") == "longrope" else "qwen2" if c["qkv_bias"] else "llama"
    if (control == "scale" or control == "gqa" and hkv == 1 or control in ("scaling_off", "rope_type") and not scaling
            or control == "rope_type" and family == "phi3" or control == "nope_off" and not interval
            or control == "factor_list" and family != "phi3"):
        return None, None  # the feature is absent: no mistake to make
    original = scaling.pop("original_max_position_embeddings", None)
    if control == "scaling_off":
        scaling = None
    elif control == "rope_type":
        scaling = {"rope_type": WRONG_ROPE_TYPE[scaling["rope_type"]], "factor": scaling["factor"]}
    elif control == "factor_list":
        scaling["short_factor"], scaling["long_factor"] = scaling["long_factor"], scaling["short_factor"]
    scaling = scaling or None  # NoPE alone: no rope_scaling
    if scaling is not None and scaling.get("rope_type") == "llama3":
        scaling["original_max_position_embeddings"] = original
    common = dict(vocab_size=8, hidden_size=d, intermediate_size=inter, num_hidden_layers=c["num_layers"],
                  num_attention_heads=hq, num_key_value_heads=hkv, hidden_act="silu",
                  max_position_embeddings=c.get("max_position_embeddings") or 2048,
                  rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                  rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                  attn_implementation="eager")
    if family == "phi3":
        if scaling is not None:
            scaling = {"type": "longrope", "short_factor": scaling["short_factor"],
                       "long_factor": scaling["long_factor"]}
        model = Phi3Model(Phi3Config(**common, rope_scaling=scaling, original_max_position_embeddings=original,
                                     sliding_window=64, pad_token_id=0, bos_token_id=1, eos_token_id=2))
    elif family == "qwen2":
        model = Qwen2Model(Qwen2Config(**common, rope_scaling=scaling, use_sliding_window=False))
    else:
        model = LlamaModel(LlamaConfig(**common, rope_scaling=scaling, attention_bias=False, mlp_bias=False))
    model = model.double().eval()
    weights = {"model." + k: v for k, v in draw_hf_params(gen, model, c["dtype"]).items()}
    with torch.no_grad():
        for i, layer in enumerate(model.layers):
            attn = layer.self_attn
            if control == "gqa":
                if family == "phi3":
                    q, k, v = attn.qkv_proj.weight.split([hq * hd, hkv * hd, hkv * hd])
                    attn.qkv_proj.weight.copy_(torch.cat((q, roll_kv_heads(k.clone(), hkv),
                                                          roll_kv_heads(v.clone(), hkv))))
                else:
                    for proj in (attn.k_proj, attn.v_proj):
                        for p in [proj.weight] + ([proj.bias] if proj.bias is not None else []):
                            p.copy_(roll_kv_heads(p.clone(), hkv))
            elif control == "transpose":
                attn.o_proj.weight.copy_(attn.o_proj.weight.t().clone())
            if interval and (i + 1) % interval == 0 and control != "nope_off":
                layer.forward = nope_layer_forward(layer)
    return weights, stepwise_reference(model)


# ---------------------------------------------------------------------------

# Controls of the QK norm and the output placement, asked only of the
# builders that have the feature (the others would build a correct reference).
QK_NORM_CONTROLS = {
    "no_qk_norm": "the QK norm left out",
    "qk_norm_form": "the QK norm per head where it is over the whole projection, or over it where it is per head",
}
OUTPUT_CONTROLS = {"placement": "the pre placement (each norm on its sublayer's input) instead of output"}


def per_head_rms_norm(x, weight, eps, head_dim):
    """x [..., H*hd] normalized over each head's hd values (in float32, as the
    Hugging Face RMSNorms compute), times weight [hd], or [H*hd] elementwise."""
    h = x.view(*x.shape[:-1], -1, head_dim).to(torch.float32)
    h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype).reshape(x.shape)
    return (h.view(*x.shape[:-1], -1, head_dim) * weight.view(-1, head_dim)).reshape(x.shape)


class HeadNorm(torch.nn.Module):
    """A projection followed by an RMSNorm of each head of its output (the
    form of Qwen3's q_norm and k_norm), or with whole=True of the whole output."""

    def __init__(self, proj, weight, eps, head_dim, whole=False):
        super().__init__()
        self.proj, self.weight, self.eps, self.head_dim, self.whole = proj, weight, eps, head_dim, whole

    def forward(self, x):
        y = self.proj(x)
        if self.whole:  # one group of every head's values, the [hd] weight repeated per head
            return per_head_rms_norm(y, self.weight.repeat(y.shape[-1] // self.head_dim), self.eps, y.shape[-1])
        return per_head_rms_norm(y, self.weight, self.eps, self.head_dim)


def olmo2_case(gen, config, control=None):
    """Olmo2DecoderLayer (eager attention) and Olmo2RMSNorm: q_norm and k_norm
    over the whole q and k projections before RoPE, and each sublayer's output
    normalized before it is added, h = h + post_attention_layernorm(A(h)),
    h = h + post_feedforward_layernorm(M(h)). In float64 but for what OLMo 2
    itself computes in float32 (norms, RoPE tables, softmax)."""
    try:
        from transformers import Olmo2Config
        from transformers.models.olmo2.modeling_olmo2 import Olmo2DecoderLayer, Olmo2RMSNorm
    except ImportError as missing:
        raise Skip(f"the OLMo 2 reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd, inter = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"], c["intermediate_size"]
    # What OLMo 2 can express: RMSNorm, the output placement with a final norm, the full QK norm, SwiGLU, full RoPE,
    # head_dim = hidden_size / num_heads, one bias switch for all four attention projections, no MLP bias and an
    # unscaled skip path.
    assert c["norm"] == "rms" and c["norm_placement"] == "output" and c["qk_norm"] == "full" and c["final_norm"]
    assert c["activation"] == "silu_glu" and c["rope_dim"] == 0 and hq * hd == d and c["residual_scale"] == 1.0
    assert c["qkv_bias"] == c["o_bias"] and not c["mlp_bias"]
    if control == "scale" and c["branch_scale"] == 1.0 and not c["layer_scale"]:
        return None, None  # no branch scale or LayerScale to leave out
    hf = Olmo2Config(hidden_size=d, intermediate_size=inter, num_hidden_layers=c["num_layers"],
                     num_attention_heads=hq, num_key_value_heads=hkv, hidden_act="silu",
                     rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                     rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                     attention_bias=c["qkv_bias"], attn_implementation="eager")
    eps = hf.rms_norm_eps
    weights = {}
    param = weight_drawer(gen, c["dtype"], weights)

    layers = []
    for i in range(c["num_layers"]):
        p = f"model.layers.{i}."
        layer = Olmo2DecoderLayer(hf, layer_idx=i).double().eval()
        modules = dict(layer.named_modules())
        linears = [("self_attn.q_proj", d, c["qkv_bias"]), ("self_attn.k_proj", d, c["qkv_bias"]),
                   ("self_attn.v_proj", d, c["qkv_bias"]), ("self_attn.o_proj", hq * hd, c["o_bias"]),
                   ("mlp.gate_proj", d, False), ("mlp.up_proj", d, False), ("mlp.down_proj", inter, False)]
        with torch.no_grad():
            for name, fan_in, bias in linears:
                modules[name].weight.copy_(param(p + name + ".weight", modules[name].weight.shape, fan_in ** -0.5))
                if bias:
                    modules[name].bias.copy_(param(p + name + ".bias", modules[name].bias.shape, 0.2))
            for name in ("self_attn.q_norm", "self_attn.k_norm"):
                modules[name].weight.copy_(param(p + name + ".weight", modules[name].weight.shape, 0.3, 1.0))
            for name, gain_name in (("post_attention_layernorm", "self_attn_gain"),
                                    ("post_feedforward_layernorm", "mlp_gain")):
                w = param(p + name + ".weight", (d,), 0.3, 1.0)
                # LayerScale and the branch scale, beta g * norm(F(h)), folded into the output norm's weight (as
                # the Gemma2 reference folds them into its post-sublayer norms)
                if c["layer_scale"]:
                    gain = param(p + gain_name, (d,), 0.5)  # drawn for the control too: the later draws stay put
                    if control != "scale":
                        w = w * gain
                modules[name].weight.copy_(w * (1.0 if control == "scale" else c["branch_scale"]))
            if control == "gqa":  # the k norm's weight moves with its head
                for name in ("self_attn.k_proj", "self_attn.v_proj"):
                    modules[name].weight.copy_(roll_kv_heads(modules[name].weight.clone(), hkv))
                    if c["qkv_bias"]:
                        modules[name].bias.copy_(roll_kv_heads(modules[name].bias.clone(), hkv))
                modules["self_attn.k_norm"].weight.copy_(roll_kv_heads(modules["self_attn.k_norm"].weight.clone(), hkv))
            elif control == "transpose":
                modules["self_attn.o_proj"].weight.copy_(modules["self_attn.o_proj"].weight.t().clone())
        attn = layer.self_attn
        if control == "no_qk_norm":
            attn.q_norm, attn.k_norm = torch.nn.Identity(), torch.nn.Identity()
        elif control == "qk_norm_form":  # per head, each head's hd values with its slice of the full weight
            for proj, norm in (("q_proj", "q_norm"), ("k_proj", "k_norm")):
                setattr(attn, proj, HeadNorm(getattr(attn, proj), getattr(attn, norm).weight.detach(), eps, hd))
                setattr(attn, norm, torch.nn.Identity())
        layers.append(layer)
    final = Olmo2RMSNorm(d, eps=eps).double()
    with torch.no_grad():
        final.weight.copy_(param("model.norm.weight", (d,), 0.3, 1.0))

    def reference(x):
        b, t, _ = x.shape
        mask = torch.triu(torch.full((t, t), float("-inf"), dtype=torch.float64), diagonal=1)[None, None]
        positions = torch.arange(t)[None].expand(b, t)
        with torch.no_grad():
            for layer in layers:
                if control == "placement":  # the same norms on the sublayer inputs
                    x = x + layer.self_attn(layer.post_attention_layernorm(x), attention_mask=mask,
                                            position_ids=positions)[0]
                    x = x + layer.mlp(layer.post_feedforward_layernorm(x))
                else:
                    x = layer(x, attention_mask=mask, position_ids=positions)[0]
            return final(x)

    return weights, reference


def qwen3_case(gen, config, control=None):
    """Qwen3: transformers 4.47.1 has no Qwen3, so this is its Qwen2DecoderLayer
    (eager attention) and Qwen2RMSNorm with what Qwen3's published modelling
    code (Qwen3Attention, transformers 4.51) adds to Qwen2's attention: q_norm
    and k_norm, RMSNorms of head_dim with the config's rms_norm_eps, applied to
    each head of q and of k before RoPE,
        q = q_norm(q_proj(x).view(*x.shape[:-1], -1, head_dim)),
    here as a module behind q_proj and k_proj (the view only splits the last
    dim into heads, so the head norm may run before it). Qwen2's attention has
    q, k and v biases (Qwen3: attention_bias), which come before the norm."""
    try:
        from transformers import Qwen2Config
        from transformers.models.qwen2.modeling_qwen2 import Qwen2DecoderLayer, Qwen2RMSNorm, Qwen2RotaryEmbedding
    except ImportError as missing:
        raise Skip(f"the Qwen3 reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd, inter = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"], c["intermediate_size"]
    # What this reference expresses: pre RMSNorm, the per-head QK norm, SwiGLU, full RoPE, head_dim = hidden_size /
    # num_heads, q/k/v biases and none on o_proj or the MLP, unit residual scales, no LayerScale.
    assert c["norm"] == "rms" and c["norm_placement"] == "pre" and c["qk_norm"] == "head" and c["rope_dim"] == 0
    assert c["activation"] == "silu_glu" and hq * hd == d and c["qkv_bias"] and not (c["o_bias"] or c["mlp_bias"])
    assert c["residual_scale"] == c["branch_scale"] == 1.0 and not c["layer_scale"]
    if control == "scale" or control == "gqa" and hkv == 1:
        return None, None  # no branch scale or LayerScale to leave out; one KV head has no mapping to get wrong
    if control in OUTPUT_CONTROLS:
        return None, None
    hf = Qwen2Config(hidden_size=d, intermediate_size=inter, num_hidden_layers=c["num_layers"],
                     num_attention_heads=hq, num_key_value_heads=hkv, hidden_act="silu",
                     rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                     rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                     attn_implementation="eager")
    weights = {}
    param = weight_drawer(gen, c["dtype"], weights)

    layers = []
    for i in range(c["num_layers"]):
        p = f"model.layers.{i}."
        layer = Qwen2DecoderLayer(hf, layer_idx=i).double().eval()
        modules = dict(layer.named_modules())
        linears = [("self_attn.q_proj", d, True), ("self_attn.k_proj", d, True), ("self_attn.v_proj", d, True),
                   ("self_attn.o_proj", hq * hd, False), ("mlp.gate_proj", d, False), ("mlp.up_proj", d, False),
                   ("mlp.down_proj", inter, False)]
        with torch.no_grad():
            for name, fan_in, bias in linears:
                modules[name].weight.copy_(param(p + name + ".weight", modules[name].weight.shape, fan_in ** -0.5))
                if bias:
                    modules[name].bias.copy_(param(p + name + ".bias", modules[name].bias.shape, 0.2))
            qk_norms = {name: param(p + f"self_attn.{name}.weight", (hd,), 0.3, 1.0) for name in ("q_norm", "k_norm")}
            for name in ("input_layernorm", "post_attention_layernorm"):
                modules[name].weight.copy_(param(p + name + ".weight", (d,), 0.3, 1.0))
            if control == "gqa":
                for name in ("self_attn.k_proj", "self_attn.v_proj"):
                    modules[name].weight.copy_(roll_kv_heads(modules[name].weight.clone(), hkv))
                    modules[name].bias.copy_(roll_kv_heads(modules[name].bias.clone(), hkv))
            elif control == "transpose":
                modules["self_attn.o_proj"].weight.copy_(modules["self_attn.o_proj"].weight.t().clone())
        if control != "no_qk_norm":
            attn = layer.self_attn
            whole = control == "qk_norm_form"  # over the whole projection where it is per head
            attn.q_proj = HeadNorm(attn.q_proj, qk_norms["q_norm"], hf.rms_norm_eps, hd, whole)
            attn.k_proj = HeadNorm(attn.k_proj, qk_norms["k_norm"], hf.rms_norm_eps, hd, whole)
        layers.append(layer)
    final = Qwen2RMSNorm(d, eps=hf.rms_norm_eps).double()
    with torch.no_grad():
        final.weight.copy_(param("model.norm.weight", (d,), 0.3, 1.0))
    rotary = Qwen2RotaryEmbedding(config=hf)  # Qwen2Model computes the RoPE tables once for every layer

    def reference(x):
        b, t, _ = x.shape
        mask = torch.triu(torch.full((t, t), float("-inf"), dtype=torch.float64), diagonal=1)[None, None]
        positions = torch.arange(t)[None].expand(b, t)
        with torch.no_grad():
            position_embeddings = rotary(x, positions)
            for layer in layers:
                x = layer(x, attention_mask=mask, position_ids=positions, position_embeddings=position_embeddings)[0]
            return final(x)

    return weights, reference


# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Reference 5: whole Gemma and Gemma 2 models from transformers (GemmaModel,
# Gemma2Model), with every Gemma convention rill maps from the config: norm
# weights stored as w for an RMSNorm that scales by (1 + w), the tanh GELU
# gated MLP, head_dim apart from hidden_size / num_heads, and (Gemma 2) the
# attention scale query_pre_attn_scalar ** -0.5.

# Controls only the Gemma cases can fail (beside CONTROLS, which every case runs).
GEMMA_CONTROLS = {
    "norm_offset": "the norm weights used as stored, x_hat * w instead of x_hat * (1 + w)",
    "gelu_erf": "the erf GELU instead of the tanh approximation (f32; f16: x * sigmoid(1.702 x), bf16: SiLU)",
    "attn_scale": "attention scale head_dim ** -0.5 instead of query_pre_attn_scalar ** -0.5",
}


def wrong_gelu(dtype):
    # ACT2FN's names. The erf GELU and its tanh approximation differ by less
    # than 5e-4 anywhere, below what f16 and bf16 storage resolve (no limit
    # could see it there), so each dtype takes the closest mistake it
    # resolves: f16 the sigmoid approximation x * sigmoid(1.702 x); bf16
    # (which passes that too) SiLU, what a mapping that drops Gemma's
    # hidden_activation gets from rill's default activation.
    return {"f32": "gelu", "f16": "quick_gelu", "bf16": "silu"}[dtype]


def gemma_case(gen, config, control=None):
    """GemmaModel (placement "pre") or Gemma2Model ("sandwich"), eager attention,
    in float64 but for what Gemma itself computes in float32 (norms, RoPE
    tables, softmax). rill's stack takes hidden states where these models take
    token embeddings, which they multiply by sqrt(hidden_size) first: the
    reference is model(inputs_embeds=x / sqrt(hidden_size)), with hidden_size a
    power of 4 so that the division and Gemma's multiplication are exact.
    Here Gemma 2's attention logit soft-capping is off and its sliding window
    longer than any sequence; the window group checks both (gemma2 cases
    there)."""
    try:
        from transformers import Gemma2Config, GemmaConfig
        from transformers.models.gemma.modeling_gemma import GemmaModel
        from transformers.models.gemma2.modeling_gemma2 import Gemma2Model
    except ImportError as missing:
        raise Skip(f"the Gemma reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"]
    gemma2 = c["norm_placement"] == "sandwich"
    # What Gemma can express: RMSNorm stored as w for (1 + w), pre (Gemma) or sandwich (Gemma 2) norms, the tanh
    # GELU gated MLP, full RoPE, no biases, unit residual scales and a final norm. Gemma's attention scale is
    # head_dim ** -0.5; Gemma 2 configures its own.
    assert c["norm"] == "rms" and c["norm_weight_offset"] == 1.0 and c["activation"] == "gelu_tanh_glu"
    assert c["norm_placement"] in ("pre", "sandwich") and c["rope_dim"] == 0 and c["final_norm"]
    assert not (c["qkv_bias"] or c["o_bias"] or c["mlp_bias"] or c["layer_scale"])
    assert c["residual_scale"] == c["branch_scale"] == 1.0
    scalar = c.get("query_pre_attn_scalar", 0.0) or hd
    assert gemma2 or scalar == hd
    normalizer = d ** 0.5
    assert normalizer == 2 ** round(math.log2(normalizer)), "hidden_size must be a power of 4"
    if control == "scale" or (control == "attn_scale" and not gemma2):
        return None, None  # no branch scale or LayerScale to leave out; Gemma's scale is head_dim's already
    if control == "gqa" and hkv == 1:
        return None, None
    common = dict(vocab_size=16, hidden_size=d, intermediate_size=c["intermediate_size"],
                  num_hidden_layers=c["num_layers"], num_attention_heads=hq, num_key_value_heads=hkv, head_dim=hd,
                  hidden_activation=wrong_gelu(c["dtype"]) if control == "gelu_erf" else "gelu_pytorch_tanh",
                  rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                  rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                  attention_bias=False, use_cache=False, attn_implementation="eager")
    if gemma2:
        model = Gemma2Model(Gemma2Config(**common, query_pre_attn_scalar=hd if control == "attn_scale" else scalar,
                                         attn_logit_softcapping=None, final_logit_softcapping=None,
                                         sliding_window=64))
    else:
        model = GemmaModel(GemmaConfig(**common))
    model = model.double().eval()
    weights = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("embed_tokens."):
                continue  # rill's stack starts from hidden states
            if name.endswith("norm.weight"):  # Gemma's checkpoints: w around 0, the norm scales by 1 + w
                value = rounded(0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64), c["dtype"])
                p.copy_(value - 1.0 if control == "norm_offset" else value)
            else:
                value = rounded(p.shape[1] ** -0.5 * torch.randn(p.shape, generator=gen, dtype=torch.float64),
                                c["dtype"])
                p.copy_(value)
                if control == "gqa" and name.endswith(("self_attn.k_proj.weight", "self_attn.v_proj.weight")):
                    p.copy_(roll_kv_heads(value, hkv))
                elif control == "transpose" and name.endswith("self_attn.o_proj.weight"):
                    # o_proj is not square here: the stored [D, Hq*hd] read as the [in, out] layout
                    p.copy_(value.reshape(p.shape[1], p.shape[0]).t())
            weights["model." + name] = value

    def reference(x):
        with torch.no_grad():
            return model(inputs_embeds=x / normalizer, use_cache=False).last_hidden_state

    return weights, reference


# ---------------------------------------------------------------------------
# Sliding-window attention and attention logit soft-capping (the window
# group): transformers' MistralModel (a window on every layer) and
# Gemma2Model (every other layer slides, Gemma2DecoderLayer's
# is_sliding = not layer_idx % 2, logits soft-capped), and a Gemma 3 stack.
# transformers 4.47.1 has no Gemma 3: its stack is Gemma2Model adapted as
# Gemma 3's published modelling code differs from Gemma 2's, in the three
# places that concern the layers: layer i is global when
# (i + 1) % sliding_window_pattern == 0 and slides otherwise, the sliding
# layers rotate with rope_local_base_freq (the global ones with rope_theta),
# and q and k get a per-head RMSNorm with (1 + w) weights (q_norm, k_norm,
# Gemma3RMSNorm over head_dim) between the projection and RoPE; Gemma 3 has
# no attention soft-cap.
WINDOW_CONTROLS = {
    "window_off": "no sliding window (full causal attention on every layer)",
    "window_wide": "a window one position wider (keys p - W .. p instead of p - W + 1 .. p)",
    "softcap_off": "no attention logit soft-cap",
    "local_theta": "the sliding layers rotated with rope_theta instead of rope_local_base_freq",
}


def window_of(config, control):
    w = config["sliding_window"]
    return {"window_off": 4096, "window_wide": w + 1}.get(control, w)


def mistral_case(gen, config, control=None):
    """MistralModel (eager attention): Llama's layers with a sliding window on
    every layer, its 4-D mask built by _prepare_4d_causal_attention_mask_with_cache_position
    (keys j <= p - sliding_window masked)."""
    try:
        from transformers import MistralConfig, MistralModel
    except ImportError as missing:
        raise Skip(f"the Mistral reference needs transformers: {missing}")

    c = config
    hq, hkv, hd = c["num_heads"], c["num_kv_heads"], c["head_dim"]
    assert c["norm"] == "rms" and c["norm_placement"] == "pre" and c["activation"] == "silu_glu"
    assert c["rope_dim"] == 0 and c["final_norm"] and c.get("sliding_window_pattern", 0) == 0
    if control in ("scale", "softcap_off", "local_theta"):
        return None, None  # Mistral has no branch scale, LayerScale, soft-cap or local theta
    if control == "gqa" and hkv == 1:
        return None, None
    hf = MistralConfig(vocab_size=8, hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
                       num_hidden_layers=c["num_layers"], num_attention_heads=hq, num_key_value_heads=hkv,
                       head_dim=hd, rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c[
                           "norm_eps"],
                       rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                       sliding_window=window_of(c, control), attn_implementation="eager")
    model = MistralModel(hf).double().eval()
    weights = {"model." + k: v for k, v in draw_hf_params(gen, model, c["dtype"]).items()}
    with torch.no_grad():
        for layer in model.layers:
            attn = layer.self_attn
            if control == "gqa":
                for proj in (attn.k_proj, attn.v_proj):
                    proj.weight.copy_(roll_kv_heads(proj.weight.clone(), hkv))
            elif control == "transpose":
                attn.o_proj.weight.copy_(attn.o_proj.weight.reshape(attn.o_proj.weight.shape[1], -1).t().clone())
    return weights, hf_reference(model)


# Qwen2's max_window_layers: the layers below it attend to every earlier position.
MAX_WINDOW_LAYERS_CONTROLS = {"window_layers": "the window on every layer, max_window_layers left out"}


def causal_only(forward):
    """A decoder layer's forward given the plain causal mask in place of the
    model's sliding-window mask (positions from 0, one forward)."""
    def wrapped(hidden_states, attention_mask=None, **kwargs):
        rows, keys = attention_mask.shape[-2:]
        causal = torch.full((rows, keys), torch.finfo(attention_mask.dtype).min, dtype=attention_mask.dtype).triu(1)
        return forward(hidden_states, attention_mask=causal.expand_as(attention_mask), **kwargs)

    return wrapped


def qwen2_window_case(gen, config, control=None):
    """Qwen2Model (eager attention) with use_sliding_window: layers from
    max_window_layers on slide, those below attend to every earlier position.
    transformers 4.47.1 applies the window per layer only in its flash
    attention path (Qwen2FlashAttention2: layer_idx >= max_window_layers); the
    eager model masks every layer with the window. Here each layer below
    max_window_layers gets the plain causal mask instead, which is what the
    flash path computes."""
    try:
        from transformers import Qwen2Config, Qwen2Model
    except ImportError as missing:
        raise Skip(f"the Qwen2 reference needs transformers: {missing}")

    c = config
    hq, hkv, hd = c["num_heads"], c["num_kv_heads"], c["head_dim"]
    assert c["norm"] == "rms" and c["norm_placement"] == "pre" and c["activation"] == "silu_glu" and c["qkv_bias"]
    assert c["rope_dim"] == 0 and c["final_norm"] and c["max_window_layers"] > 0
    if control in ("scale", "softcap_off", "local_theta") or control == "gqa" and hkv == 1:
        return None, None  # Qwen2 has no branch scale, LayerScale, soft-cap or local theta
    hf = Qwen2Config(vocab_size=8, hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
                     num_hidden_layers=c["num_layers"], num_attention_heads=hq, num_key_value_heads=hkv,
                     rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"],
                     rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"],
                     use_sliding_window=True, sliding_window=window_of(c, control),
                     max_window_layers=c["max_window_layers"], attn_implementation="eager")
    model = Qwen2Model(hf).double().eval()
    weights = {"model." + k: v for k, v in draw_hf_params(gen, model, c["dtype"]).items()}
    with torch.no_grad():
        for i, layer in enumerate(model.layers):
            attn = layer.self_attn
            if control == "gqa":
                for proj in (attn.k_proj, attn.v_proj):
                    proj.weight.copy_(roll_kv_heads(proj.weight.clone(), hkv))
                    proj.bias.copy_(roll_kv_heads(proj.bias.clone(), hkv))
            elif control == "transpose":
                attn.o_proj.weight.copy_(attn.o_proj.weight.t().clone())
            if i < c["max_window_layers"] and control != "window_layers":
                layer.forward = causal_only(layer.forward)
    return weights, hf_reference(model)


class HeadNormed(torch.nn.Module):
    """Gemma 3's q_norm / k_norm placed after a projection: proj(x), then an
    RMSNorm of each head's head_dim values scaled by (1 + w)."""

    def __init__(self, proj, weight, eps, head_dim):
        super().__init__()
        self.proj, self.weight, self.eps, self.head_dim = proj, weight, eps, head_dim

    def forward(self, x):
        y = self.proj(x)
        heads = y.view(*y.shape[:-1], -1, self.head_dim)
        normed = heads * torch.rsqrt(heads.pow(2).mean(-1, keepdim=True) + self.eps) * (1.0 + self.weight)
        return normed.view(y.shape)


def gemma_window_case(gen, config, control=None):
    """Gemma2Model (eager attention; Gemma 2 when sliding_window_pattern is 2,
    the Gemma 3 stack described above otherwise), weights and inputs as in
    gemma_case."""
    try:
        from transformers import Gemma2Config
        from transformers.models.gemma2.modeling_gemma2 import Gemma2Model, Gemma2RotaryEmbedding
    except ImportError as missing:
        raise Skip(f"the Gemma 2 reference needs transformers: {missing}")

    c = config
    d, hq, hkv, hd = c["hidden_size"], c["num_heads"], c["num_kv_heads"], c["head_dim"]
    pattern = c["sliding_window_pattern"]
    gemma3 = c.get("qk_norm", "none") == "head"
    assert c["norm"] == "rms" and c["norm_weight_offset"] == 1.0 and c["activation"] == "gelu_tanh_glu"
    assert c["norm_placement"] == "sandwich" and c["rope_dim"] == 0 and c["final_norm"] and pattern >= 1
    assert gemma3 or (pattern == 2 and not c.get("rope_local_base_freq"))
    scalar = c.get("query_pre_attn_scalar", 0.0) or hd
    softcap = c.get("attn_logit_softcapping", 0.0) or None
    local_theta = c.get("rope_local_base_freq", 0.0) or c["rope_theta"]
    normalizer = d ** 0.5
    assert normalizer == 2 ** round(math.log2(normalizer)), "hidden_size must be a power of 4"
    if control == "scale" or (control == "attn_scale" and scalar == hd) or (control == "softcap_off" and not softcap):
        return None, None
    if (control == "local_theta" and local_theta == c["rope_theta"]) or (control == "gqa" and hkv == 1):
        return None, None
    theta = wrong_rope_theta(c["rope_theta"]) if control == "rope_theta" else c["rope_theta"]
    eps = wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps" else c["norm_eps"]
    hf = Gemma2Config(vocab_size=16, hidden_size=d, intermediate_size=c["intermediate_size"],
                      num_hidden_layers=c["num_layers"], num_attention_heads=hq, num_key_value_heads=hkv, head_dim=hd,
                      hidden_activation=wrong_gelu(c["dtype"]) if control == "gelu_erf" else "gelu_pytorch_tanh",
                      rms_norm_eps=eps, rope_theta=theta, attention_bias=False, use_cache=False,
                      query_pre_attn_scalar=hd if control == "attn_scale" else scalar,
                      attn_logit_softcapping=None if control == "softcap_off" else softcap,
                      final_logit_softcapping=None, sliding_window=window_of(c, control),
                      attn_implementation="eager")
    model = Gemma2Model(hf).double().eval()
    for i, layer in enumerate(model.layers):
        layer.is_sliding = (i + 1) % pattern != 0  # Gemma 2 (pattern 2): even layers, as its own rule
        if layer.is_sliding and control != "local_theta":
            layer.self_attn.rotary_emb = Gemma2RotaryEmbedding(hd, max_position_embeddings=hf.max_position_embeddings,
                                                               base=local_theta)
    weights = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("embed_tokens."):
                continue
            if name.endswith("norm.weight"):  # checkpoint norm weights w for (1 + w)
                value = rounded(0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64), c["dtype"])
                p.copy_(value - 1.0 if control == "norm_offset" else value)
            else:
                value = rounded(p.shape[1] ** -0.5 * torch.randn(p.shape, generator=gen, dtype=torch.float64),
                                c["dtype"])
                p.copy_(value)
                if control == "gqa" and name.endswith(("self_attn.k_proj.weight", "self_attn.v_proj.weight")):
                    p.copy_(roll_kv_heads(value, hkv))
                elif control == "transpose" and name.endswith("self_attn.o_proj.weight"):
                    p.copy_(value.reshape(p.shape[1], p.shape[0]).t())
            weights["model." + name] = value
        if gemma3:
            for i, layer in enumerate(model.layers):
                attn = layer.self_attn
                for which in ("q", "k"):
                    w = rounded(0.3 * torch.randn(hd, generator=gen, dtype=torch.float64), c["dtype"])
                    weights[f"model.layers.{i}.self_attn.{which}_norm.weight"] = w
                    used = w - 1.0 if control == "norm_offset" else w
                    setattr(attn, f"{which}_proj", HeadNormed(getattr(attn, f"{which}_proj"), used, eps, hd))

    def reference(x):
        with torch.no_grad():
            return model(inputs_embeds=x / normalizer, use_cache=False).last_hidden_state

    return weights, reference


MOE_CONTROLS = {
    "top1": "the top-1 expert instead of the top-k",
    "renorm": "the top-k routing weights renormalized where they are not, or left as they are where they are",
}
SHARED_EXPERT_CONTROLS = {"shared_off": "the shared expert left out"}
DENSE_LAYER_CONTROLS = {"dense_off": "the MLP of the dense layers (decoder_sparse_step, mlp_only_layers) left out"}


def unnormalized_moe_forward(block):
    """block's forward (MixtralSparseMoeBlock, which always renormalizes)
    with the top-k softmax weights as they are."""

    def forward(hidden_states):
        b, t, d = hidden_states.shape
        x = hidden_states.view(-1, d)
        logits = block.gate(x)
        weights, chosen = torch.topk(F.softmax(logits, dim=1, dtype=torch.float), block.top_k, dim=-1)
        weights = weights.to(x.dtype)
        out = torch.zeros_like(x)
        for e, expert in enumerate(block.experts):
            rows, slot = torch.where(chosen == e)
            out.index_add_(0, rows, expert(x[rows]) * weights[rows, slot, None])
        return out.view(b, t, d), logits

    return forward


def moe_case(family, gen, config, control=None):
    """A whole mixture-of-experts model from transformers (eager attention):
    MixtralModel (its own tensor names: block_sparse_moe, w1/w3/w2; always
    renormalizes the top-k weights), Qwen2MoeModel (a shared expert with its
    sigmoid gate, q/k/v biases, every layer sparse unless decoder_sparse_step
    or mlp_only_layers makes it dense), OlmoeModel (the QK norm
    over the whole q and k projections, before RoPE) or Qwen3-MoE. transformers
    4.47.1 has no Qwen3-MoE; its published modelling code (Qwen3MoeModel,
    transformers 4.51) is Qwen2-MoE's without the shared expert, with Qwen3's
    per-head q_norm and k_norm (RMSNorms of head_dim before RoPE) and
    attention_bias for the q/k/v biases. So qwen3_moe is Qwen2MoeModel with its
    shared expert answering 0 (its weights not given to rill) and HeadNorm
    behind q_proj and k_proj, as qwen3_case does (biases on)."""
    try:
        import transformers
    except ImportError as missing:
        raise Skip(f"the {family} reference needs transformers: {missing}")

    c = config
    hq, hkv, hd, d = c["num_heads"], c["num_kv_heads"], c["head_dim"], c["hidden_size"]
    assert c["norm"] == "rms" and c["norm_placement"] == "pre" and c["activation"] == "silu_glu"
    assert c["rope_dim"] == 0 and c["final_norm"] and hq * hd == d
    if control == "scale" or (control == "gqa" and hkv == 1):
        return None, None  # no branch scale or LayerScale
    if control == "dense_off" and c.get("decoder_sparse_step", 1) <= 1 and not c.get("mlp_only_layers"):
        return None, None  # every layer sparse
    k = 1 if control == "top1" else c["num_experts_per_tok"]
    norm_topk = c.get("norm_topk_prob", False) != (control == "renorm")
    common = dict(vocab_size=8, hidden_size=d, num_hidden_layers=c["num_layers"], num_attention_heads=hq,
                  num_key_value_heads=hkv, rms_norm_eps=wrong_eps(c["norm_eps"], c["dtype"]) if control == "eps"
                  else c["norm_eps"], rope_theta=wrong_rope_theta(c["rope_theta"]) if control == "rope_theta"
                  else c["rope_theta"], num_experts_per_tok=k, attn_implementation="eager")
    if family == "mixtral":
        assert c["norm_topk_prob"] and not c["qkv_bias"] and c.get("shared_expert_intermediate_size", 0) == 0
        hf = transformers.MixtralConfig(**common, intermediate_size=c["moe_intermediate_size"],
                                        num_local_experts=c["num_experts"])
        model, prefix = transformers.MixtralModel(hf), "model."
    elif family in ("qwen2_moe", "qwen3_moe"):
        qwen3 = family == "qwen3_moe"
        assert c["qkv_bias"] and (c.get("shared_expert_intermediate_size", 0) > 0) != qwen3
        assert (c.get("qk_norm") == "head") == qwen3
        hf = transformers.Qwen2MoeConfig(**common, intermediate_size=c["intermediate_size"],
                                         moe_intermediate_size=c["moe_intermediate_size"],
                                         shared_expert_intermediate_size=8 if qwen3 else c[
                                             "shared_expert_intermediate_size"],
                                         num_experts=c["num_experts"], norm_topk_prob=norm_topk,
                                         decoder_sparse_step=c.get("decoder_sparse_step", 1),
                                         mlp_only_layers=c.get("mlp_only_layers", []))
        model, prefix = transformers.Qwen2MoeModel(hf), "model."
    else:
        assert c["qk_norm"] == "full" and not c["qkv_bias"] and c.get("shared_expert_intermediate_size", 0) == 0
        hf = transformers.OlmoeConfig(**common, intermediate_size=c["moe_intermediate_size"],
                                      num_experts=c["num_experts"], norm_topk_prob=norm_topk)
        model, prefix = transformers.OlmoeModel(hf), "model."
    model = model.double().eval()
    weights = {prefix + k: v for k, v in draw_hf_params(gen, model, c["dtype"]).items()
               if family != "qwen3_moe" or "shared_expert" not in k}
    param = weight_drawer(gen, c["dtype"], weights)
    with torch.no_grad():
        for i, layer in enumerate(model.layers):
            attn = layer.self_attn
            if control == "gqa":
                for proj in (attn.k_proj, attn.v_proj):
                    proj.weight.copy_(roll_kv_heads(proj.weight.clone(), hkv))
                    if proj.bias is not None:
                        proj.bias.copy_(roll_kv_heads(proj.bias.clone(), hkv))
                if family == "olmoe":
                    attn.k_norm.weight.copy_(roll_kv_heads(attn.k_norm.weight.clone(), hkv))
            elif control == "transpose":
                attn.o_proj.weight.copy_(attn.o_proj.weight.t().clone())
            elif control == "shared_off":
                if hasattr(layer.mlp, "shared_expert"):
                    layer.mlp.shared_expert.down_proj.weight.zero_()
            elif control == "dense_off" and not hasattr(layer.mlp, "experts"):
                layer.mlp.down_proj.weight.zero_()
            if family == "mixtral" and control == "renorm":
                layer.block_sparse_moe.forward = unnormalized_moe_forward(layer.block_sparse_moe)
            if family == "qwen3_moe":
                layer.mlp.shared_expert = ZeroExpert()
                layer.mlp.shared_expert_gate = torch.nn.Identity()
                if control != "no_qk_norm":
                    for proj, norm in (("q_proj", "q_norm"), ("k_proj", "k_norm")):
                        weight = param(f"model.layers.{i}.self_attn.{norm}.weight", (hd,), 0.3, 1.0)
                        setattr(attn, proj, HeadNorm(getattr(attn, proj), weight, hf.rms_norm_eps, hd,
                                                     whole=control == "qk_norm_form"))
            if family != "olmoe":
                continue
            if control == "no_qk_norm":
                attn.q_norm, attn.k_norm = torch.nn.Identity(), torch.nn.Identity()
            elif control == "qk_norm_form":  # per head, each head's hd values with its slice of the full weight
                for proj, norm in (("q_proj", "q_norm"), ("k_proj", "k_norm")):
                    setattr(attn, proj, HeadNorm(getattr(attn, proj), getattr(attn, norm).weight.detach(),
                                                 hf.rms_norm_eps, hd))
                    setattr(attn, norm, torch.nn.Identity())
    return weights, hf_reference(model)


class ZeroExpert(torch.nn.Module):
    """A shared expert that adds nothing (Qwen3-MoE has none)."""

    def forward(self, x):
        return torch.zeros_like(x)


def mixtral_case(gen, config, control=None):
    return moe_case("mixtral", gen, config, control)


def qwen2_moe_case(gen, config, control=None):
    return moe_case("qwen2_moe", gen, config, control)


def olmoe_case(gen, config, control=None):
    return moe_case("olmoe", gen, config, control)


def qwen3_moe_case(gen, config, control=None):
    return moe_case("qwen3_moe", gen, config, control)


# ---------------------------------------------------------------------------

GEMMA = dict(activation="gelu_tanh_glu", norm_weight_offset=1.0)
# Gemma 2: every other layer slides, soft-capped logits; Gemma 3: layers 0, 1 and 3 of 4 slide (pattern 3, which
# its config allows; Gemma 3 ships 6), rotating with rope_local_base_freq, per-head QK norm.
GEMMA2_WINDOW = dict(GEMMA, norm_placement="sandwich", head_dim=32, query_pre_attn_scalar=48.0,
                     sliding_window=4, sliding_window_pattern=2, attn_logit_softcapping=1.0)
GEMMA3_WINDOW = dict(GEMMA, norm_placement="sandwich", head_dim=32, query_pre_attn_scalar=24.0, qk_norm="head",
                     num_layers=4, rope_theta=1e6, rope_local_base_freq=10000.0, sliding_window=4,
                     sliding_window_pattern=3)

# Mixtures of experts: 8 experts of width 48 (Mixtral renormalizes the top-2 weights); Qwen2-MoE with 6 of
# width 32, unnormalized, and a shared expert of width 80; OLMoE with 4 of width 40 and the full QK norm.
MIXTRAL = dict(num_experts=8, num_experts_per_tok=2, norm_topk_prob=True, moe_intermediate_size=48,
               rope_theta=1e6, norm_eps=1e-5)
QWEN2_MOE = dict(num_experts=6, num_experts_per_tok=2, moe_intermediate_size=32,
                 shared_expert_intermediate_size=80, qkv_bias=True, rope_theta=1e6)
OLMOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=40, qk_norm="full", norm_eps=1e-5)
# Qwen3-MoE: 6 experts of width 32, top-2 renormalized, the per-head QK norm, no shared expert.
QWEN3_MOE = dict(num_experts=6, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
                 qk_norm="head", qkv_bias=True, rope_theta=1e6)

# LongRoPE's per-frequency factors for head_dim 16, shaped like Phi-3's: near 1
# for the high frequencies, growing toward the low ones.
LONGROPE_SHORT = [1.0, 1.0, 1.05, 1.1, 1.3, 1.6, 2.0, 2.4]
LONGROPE_LONG = [1.0, 1.2, 1.8, 3.0, 5.5, 9.0, 14.0, 20.0]
ENCODER = dict(norm="layer", norm_eps=1e-5, num_kv_heads=4, rope_theta=0.0, qkv_bias=True, o_bias=True,
               mlp_bias=True)
OPT = dict(ENCODER, activation="relu")
OLMO2 = dict(norm_placement="output", qk_norm="full", norm_eps=1e-6, rope_theta=5e5)
QWEN3 = dict(qk_norm="head", qkv_bias=True)
# GPT-NeoX (Pythia): two input norms, a quarter of each head rotary; Phi-2: one shared norm, half rotary, GQA.
NEOX = dict(norm="layer", norm_eps=1e-5, num_kv_heads=4, rope_dim=4, activation="gelu", qkv_bias=True, o_bias=True,
            mlp_bias=True, parallel_residual=True, parallel_norms=2)
PHI2 = dict(norm="layer", norm_eps=1e-5, rope_dim=8, activation="gelu_tanh", qkv_bias=True, o_bias=True,
            mlp_bias=True, parallel_residual=True)
# Falcon: the new decoder architecture with GQA and two norms (Falcon-40B/180B) or one, the old multi-query one
# (Falcon-7B) and the old multi-head one.
FALCON = dict(norm="layer", norm_eps=1e-5, activation="gelu", parallel_residual=True)
FALCON_NEW = dict(FALCON, parallel_norms=2, qkv_bias=True, o_bias=True, mlp_bias=True)
# GPT-J: one shared norm, interleaved rotary on half of each head, MLP biases, MHA; Cohere: one shared norm
# without bias, interleaved rotary on whole heads, GQA, attention biases.
GPTJ = dict(norm="layer", norm_eps=1e-5, num_kv_heads=4, rope_dim=8, rope_interleave=True, activation="gelu_tanh",
            mlp_bias=True, parallel_residual=True)
COHERE = dict(norm="layer", norm_eps=1e-5, rope_interleave=True, qkv_bias=True, o_bias=True, rope_theta=1e6,
              parallel_residual=True)
CASES = {
    # torch.nn.TransformerEncoderLayer
    "encoder_pre_gelu": ("encoder", base_config(**ENCODER, norm_placement="pre", activation="gelu")),
    "encoder_post_relu": ("encoder", base_config(**ENCODER, norm_placement="post", activation="relu",
                                                 final_norm=False)),
    "encoder_pre_relu_bf16": ("encoder", base_config(**ENCODER, norm_placement="pre", activation="relu",
                                                     dtype="bf16")),
    "encoder_post_gelu_f16": ("encoder", base_config(**ENCODER, norm_placement="post", activation="gelu",
                                                     dtype="f16", final_norm=False)),
    # Llama/Qwen2 style: RMSNorm, GQA, RoPE, SwiGLU, QKV bias
    "qwen2_f32": ("decoder", base_config(qkv_bias=True, rope_theta=1e6)),
    "qwen2_f16": ("decoder", base_config(qkv_bias=True, rope_theta=1e6, dtype="f16")),
    "qwen2_bf16": ("decoder", base_config(qkv_bias=True, rope_theta=1e6, dtype="bf16")),
    "llama_mqa_partial_rope": ("decoder", base_config(num_kv_heads=1, rope_dim=8, num_layers=3)),
    "pre_no_final_norm_gelu_tanh": ("decoder", base_config(final_norm=False, activation="gelu_tanh", mlp_bias=True)),
    # the other placements and residual variants (plain torch); the ones that name gemma2, granite or mimi take
    # the layers of that model from transformers
    "post_rms_relu": ("decoder", base_config(norm_placement="post", activation="relu", o_bias=True)),
    "post_layer_final_norm": ("decoder", base_config(norm_placement="post", norm="layer", activation="gelu")),
    "sandwich_geglu": ("gemma2", base_config(norm_placement="sandwich", activation="gelu_glu")),
    "sandwich_layer_bf16": ("decoder", base_config(norm_placement="sandwich", norm="layer", dtype="bf16")),
    "deepnorm_layer": ("decoder", base_config(norm_placement="deepnorm", norm="layer", residual_scale=deepnet_alpha(2),
                                              activation="gelu", final_norm=False)),
    "deepnorm_f16": ("decoder", base_config(norm_placement="deepnorm", num_layers=3, residual_scale=deepnet_alpha(3),
                                            dtype="f16")),
    "pre_branch_scale": ("granite", base_config(branch_scale=0.5, qkv_bias=True, o_bias=True, mlp_bias=True)),
    "pre_branch_scale_bf16": ("granite", base_config(branch_scale=0.5, dtype="bf16")),
    "pre_layer_scale": ("mimi", base_config(norm="layer", norm_eps=1e-5, activation="gelu", layer_scale=True,
                                            final_norm=False, qkv_bias=True, o_bias=True)),
    "pre_layer_scale_f16": ("mimi", base_config(norm="layer", norm_eps=1e-5, activation="gelu", layer_scale=True,
                                                final_norm=False, dtype="f16")),
    # No published model puts LayerScale or a branch scale behind a post norm: this case's reference is the plain
    # torch decoder written from rill.h's description of the post placement, so it checks rill against its own
    # header (the post path's gains and branch scale), not against a model.
    "post_layer_scale_branch": ("decoder", base_config(norm_placement="post", layer_scale=True, branch_scale=0.7)),
    "sandwich_layer_scale_f16": ("gemma2", base_config(norm_placement="sandwich", layer_scale=True, dtype="f16")),
    # OPT (transformers' OPTModel, learned positions zeroed): pre with a final norm (OPT-125m and larger) and post
    # without one (OPT-350m)
    "opt_pre_relu": ("opt", base_config(**OPT, num_layers=3)),
    "opt_post_relu_f16": ("opt", base_config(**OPT, norm_placement="post", final_norm=False, dtype="f16")),
    # the QK norm, and the output placement
    "olmo2_f32": ("olmo2", base_config(**OLMO2, num_layers=3)),
    "olmo2_layer_scale_bf16": ("olmo2", base_config(**OLMO2, layer_scale=True, branch_scale=0.5, dtype="bf16")),
    "qwen3_f32": ("qwen3", base_config(**QWEN3, rope_theta=1e6)),
    "qwen3_bf16": ("qwen3", base_config(**QWEN3, num_layers=3, dtype="bf16")),
    # Whole Gemma and Gemma 2 models (transformers); head_dim 24 or 32 with hidden_size 64 and 4 query heads
    "gemma_f32": ("gemma", base_config(**GEMMA, num_layers=3, head_dim=24)),
    "gemma_bf16": ("gemma", base_config(**GEMMA, head_dim=24, dtype="bf16")),
    "gemma2_query_scalar_f32": ("gemma", base_config(**GEMMA, norm_placement="sandwich", head_dim=32,
                                                     query_pre_attn_scalar=48.0)),
    "gemma2_query_scalar_f16": ("gemma", base_config(**GEMMA, norm_placement="sandwich", num_layers=3, head_dim=32,
                                                     query_pre_attn_scalar=48.0, dtype="f16")),
    # parallel attention + MLP and fused checkpoint tensors (transformers' GPT-NeoX, Phi, Phi-3)
    "neox_parallel": ("neox", base_config(**NEOX)),
    "neox_parallel_f16": ("neox", base_config(**NEOX, dtype="f16", num_layers=3)),
    "phi2_parallel": ("phi", base_config(**PHI2)),
    "phi2_parallel_f16": ("phi", base_config(**PHI2, dtype="f16")),
    "falcon_new_gqa": ("falcon_new", base_config(**FALCON_NEW)),
    "falcon_new_one_norm_f16": ("falcon_new", base_config(**{**FALCON_NEW, "parallel_norms": 1}, dtype="f16",
                                                          num_layers=3)),
    "falcon_old_mqa_f16": ("falcon_old", base_config(**FALCON, num_kv_heads=1, dtype="f16")),
    "falcon_old_mha": ("falcon_old", base_config(**FALCON, num_kv_heads=4, qkv_bias=True, o_bias=True,
                                                 mlp_bias=True, rope_theta=1e6)),
    "gptj_parallel": ("gptj", base_config(**GPTJ)),
    "gptj_parallel_f16": ("gptj", base_config(**GPTJ, dtype="f16", num_layers=3)),
    "cohere_parallel": ("cohere", base_config(**COHERE)),
    "cohere_parallel_bf16": ("cohere", base_config(**COHERE, dtype="bf16", num_layers=3)),
    # Command R+: Cohere with a LayerNorm over each head of q and k, a weight per head (qknorm group)
    "cohere_qk_norm": ("cohere_qk_norm", base_config(**COHERE, qk_norm="head_weights")),
    "cohere_qk_norm_f16": ("cohere_qk_norm", base_config(**COHERE, qk_norm="head_weights", dtype="f16")),
    "phi3_fused": ("phi3", base_config(norm_eps=1e-5)),
    "phi3_fused_bf16": ("phi3", base_config(norm_eps=1e-5, dtype="bf16", num_kv_heads=1, num_layers=3)),
    # sliding windows (9 tokens, windows of 3 and 4) and soft-capping (transformers' Mistral, Gemma 2; Gemma 3)
    "mistral_window_f32": ("mistral", base_config(sliding_window=4)),
    "mistral_window_bf16": ("mistral", base_config(sliding_window=3, num_layers=3, dtype="bf16")),
    "gemma2_window_softcap_f32": ("gemma_window", base_config(**GEMMA2_WINDOW)),
    "gemma2_window_softcap_f16": ("gemma_window", base_config(**{**GEMMA2_WINDOW, "sliding_window": 3},
                                                              num_layers=3, dtype="f16")),
    "gemma3_local_f32": ("gemma_window", base_config(**GEMMA3_WINDOW)),
    "gemma3_local_bf16": ("gemma_window", base_config(**{**GEMMA3_WINDOW, "sliding_window": 3}, dtype="bf16")),
    "qwen2_max_window_layers": ("qwen2_window", base_config(qkv_bias=True, rope_theta=1e6, num_layers=3,
                                                            sliding_window=3, max_window_layers=1)),
    # RoPE scaling over 16 tokens (CASE_TOKENS), at sizes where it matters within them.
    "llama31_llama3": ("rope", base_config(rope_theta=500000.0, rope_scaling=dict(
        rope_type="llama3", factor=8.0, original_max_position_embeddings=16, low_freq_factor=1.0,
        high_freq_factor=4.0))),
    "llama32_llama3_bf16": ("rope", base_config(rope_theta=500000.0, num_layers=3, dtype="bf16", rope_scaling=dict(
        rope_type="llama3", factor=32.0, original_max_position_embeddings=32, low_freq_factor=1.0,
        high_freq_factor=4.0))),
    "llama_linear": ("rope", base_config(rope_scaling=dict(rope_type="linear", factor=4.0))),
    "llama_dynamic": ("rope", base_config(max_position_embeddings=8, rope_scaling=dict(rope_type="dynamic",
                                                                                      factor=4.0))),
    "llama_dynamic_f16": ("rope", base_config(max_position_embeddings=8, dtype="f16", num_kv_heads=1,
                                              rope_scaling=dict(rope_type="dynamic", factor=2.0))),
    "qwen2_yarn": ("rope", base_config(qkv_bias=True, rope_theta=1e6, max_position_embeddings=256,
                                       rope_scaling=dict(rope_type="yarn", factor=4.0))),
    "qwen2_yarn_bf16": ("rope", base_config(qkv_bias=True, rope_theta=10000.0, max_position_embeddings=64,
                                            dtype="bf16", rope_scaling=dict(rope_type="yarn", factor=8.0,
                                                                            beta_fast=16.0, beta_slow=2.0))),
    "phi3_longrope_short": ("rope", base_config(norm_eps=1e-5, max_position_embeddings=128, rope_scaling=dict(
        rope_type="longrope", original_max_position_embeddings=32, short_factor=LONGROPE_SHORT,
        long_factor=LONGROPE_LONG))),
    "phi3_longrope_long": ("rope", base_config(norm_eps=1e-5, max_position_embeddings=128, rope_scaling=dict(
        rope_type="longrope", original_max_position_embeddings=8, short_factor=LONGROPE_SHORT,
        long_factor=LONGROPE_LONG))),
    "phi3_longrope_long_f16": ("rope", base_config(norm_eps=1e-5, max_position_embeddings=64, dtype="f16",
                                                   rope_scaling=dict(rope_type="longrope",
                                                                     original_max_position_embeddings=12,
                                                                     short_factor=LONGROPE_SHORT,
                                                                     long_factor=LONGROPE_LONG))),
    "smollm3_nope": ("rope", base_config(num_layers=4, rope_theta=5e6, no_rope_layer_interval=2)),
    "smollm3_nope_yarn_bf16": ("rope", base_config(num_layers=4, no_rope_layer_interval=4, dtype="bf16",
                                                   max_position_embeddings=32,
                                                   rope_scaling=dict(rope_type="yarn", factor=2.0))),
    # mixtures of experts, top-2 (transformers' Mixtral, Qwen2-MoE, OLMoE; Qwen3-MoE from Qwen2-MoE)
    "mixtral_moe": ("mixtral", base_config(**MIXTRAL)),
    "mixtral_moe_bf16": ("mixtral", base_config(**MIXTRAL, dtype="bf16")),
    "qwen2_moe_shared": ("qwen2_moe", base_config(**QWEN2_MOE)),
    "qwen2_moe_shared_f16": ("qwen2_moe", base_config(**QWEN2_MOE, dtype="f16")),
    "olmoe": ("olmoe", base_config(**OLMOE)),
    "qwen3_moe": ("qwen3_moe", base_config(**QWEN3_MOE)),
    # layers 0, 2 and 3 dense (decoder_sparse_step 2 leaves 0 and 2, mlp_only_layers adds 3), layer 1 sparse
    "qwen2_moe_dense_layers": ("qwen2_moe", base_config(**QWEN2_MOE, num_layers=4, decoder_sparse_step=2,
                                                        mlp_only_layers=[3])),
    "qwen2_moe_dense_layers_f16": ("qwen2_moe", base_config(**QWEN2_MOE, num_layers=3, mlp_only_layers=[0],
                                                            dtype="f16")),
}
BUILDERS = {"encoder": encoder_case, "decoder": decoder_case, "gemma2": gemma2_case, "granite": granite_case,
            "mimi": mimi_case, "opt": opt_case,
            "olmo2": olmo2_case, "qwen3": qwen3_case, "gemma": gemma_case, "neox": neox_case,
            "phi": phi_case, "phi3": phi3_case, "mistral": mistral_case, "gemma_window": gemma_window_case,
            "rope": rope_case, "mixtral": mixtral_case, "qwen2_moe": qwen2_moe_case, "olmoe": olmoe_case,
            "gptj": gptj_case, "cohere": cohere_case, "cohere_qk_norm": cohere_case,
            "falcon_new": falcon_new_case, "falcon_old": falcon_old_case, "qwen3_moe": qwen3_moe_case,
            "qwen2_window": qwen2_window_case}
TRANSFORMERS = ("gemma2", "granite", "mimi", "opt")  # the builders that need transformers (--venv)
QK_NORM = ("olmo2", "qwen3", "cohere_qk_norm")  # the qknorm group's builders, which need transformers too
GEMMA_FAMILY = ("gemma",)  # the gemma group's builder, which needs transformers too
PARALLEL = ("neox", "phi", "phi3", "gptj", "cohere", "falcon_new", "falcon_old")  # the parallel group's builders, which need transformers too
WINDOW = ("mistral", "gemma_window", "qwen2_window")  # the window group's builders, which need transformers too
ROPE = ("rope",)  # the rope group's builder, which needs transformers too
MOE = ("mixtral", "qwen2_moe", "olmoe", "qwen3_moe")  # the moe group's builders, which need transformers too
CASE_TOKENS = {"rope": 16}  # tokens per sequence where a builder needs more than 9
# The controls of a builder's features, beside CONTROLS.
FEATURE_CONTROLS = {"olmo2": {**QK_NORM_CONTROLS, **OUTPUT_CONTROLS}, "qwen3": QK_NORM_CONTROLS,
                    "gemma": GEMMA_CONTROLS, "neox": {**SEQUENTIAL_CONTROLS, **SPLIT_CONTROLS},
                    "phi": SEQUENTIAL_CONTROLS, "phi3": SPLIT_CONTROLS,
                    "gptj": {**SEQUENTIAL_CONTROLS, **INTERLEAVE_CONTROLS},
                    "cohere": {**SEQUENTIAL_CONTROLS, **INTERLEAVE_CONTROLS},
                    "cohere_qk_norm": {**QK_NORM_CONTROLS, **QK_LAYER_NORM_CONTROLS, **INTERLEAVE_CONTROLS},
                    "falcon_new": {**SEQUENTIAL_CONTROLS, **SPLIT_CONTROLS},
                    "falcon_old": {**SEQUENTIAL_CONTROLS, **SPLIT_CONTROLS}, "mistral": WINDOW_CONTROLS,
                    "gemma_window": {**GEMMA_CONTROLS, **WINDOW_CONTROLS},
                    "qwen2_window": {**WINDOW_CONTROLS, **MAX_WINDOW_LAYERS_CONTROLS},
                    "rope": {**ROPE_CONTROLS, **LONGROPE_CONTROLS, **NOPE_CONTROLS},
                    "mixtral": MOE_CONTROLS,
                    "qwen2_moe": {**MOE_CONTROLS, **SHARED_EXPERT_CONTROLS, **DENSE_LAYER_CONTROLS},
                    "olmoe": {**MOE_CONTROLS, **QK_NORM_CONTROLS},
                    "qwen3_moe": {**MOE_CONTROLS, **QK_NORM_CONTROLS}}
GROUPS = {
    "encoder": [n for n in CASES if n.startswith("encoder")],
    "llama": ["qwen2_f32", "qwen2_f16", "qwen2_bf16", "llama_mqa_partial_rope", "pre_no_final_norm_gelu_tanh"],
    "placements": [n for n in CASES if not n.startswith(("encoder", "qwen2", "llama", "pre_no"))
                   and CASES[n][0] not in TRANSFORMERS + QK_NORM + GEMMA_FAMILY + PARALLEL + WINDOW + ROPE + MOE],
    "transformers": [n for n in CASES if CASES[n][0] in TRANSFORMERS],
    "qknorm": [n for n in CASES if CASES[n][0] in QK_NORM],
    "gemma": [n for n in CASES if CASES[n][0] in GEMMA_FAMILY],
    "parallel": [n for n in CASES if CASES[n][0] in PARALLEL],
    "window": [n for n in CASES if CASES[n][0] in WINDOW],
    "rope": [n for n in CASES if CASES[n][0] in ROPE],
    "moe": [n for n in CASES if CASES[n][0] in MOE],
}


class Skip(Exception):
    pass


def run_rill(rill, args):
    proc = subprocess.run([rill, "run", *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def check_case(name, rill, backend, workdir, seed):
    kind, config = CASES[name]
    build = BUILDERS[kind]
    gen = torch.Generator().manual_seed(seed)
    weights, reference = build(gen, config)
    dtype = config["dtype"]
    # Weights go to the file in the model dtype for one case in two and as f32
    # otherwise, so that both the direct and the converting load are exercised.
    file_dtype = TORCH_DTYPES[dtype] if seed % 2 == 0 else torch.float32
    case_dir = os.path.join(workdir, name)
    os.makedirs(case_dir, exist_ok=True)
    paths = {k: os.path.join(case_dir, f) for k, f in
             dict(config="model.toml", weights="w.safetensors", input="x.npy").items()}
    save_file({k: v.to(file_dtype).contiguous() for k, v in weights.items()}, paths["weights"])
    with open(paths["config"], "w") as f:
        f.write(toml_text(config, backend))
    batch, tokens = 2, CASE_TOKENS.get(kind, 9)
    x = torch.randn((batch, tokens, config["hidden_size"]), generator=gen, dtype=torch.float64)
    np.save(paths["input"], x.numpy().astype(np.float32))
    x_model = rounded(x.to(torch.float32), dtype)
    # The same seed draws the same weights; only the reference differs.
    controls = {**CONTROLS, **FEATURE_CONTROLS.get(kind, {})}
    wrong = {control: build(torch.Generator().manual_seed(seed), config, control)[1] for control in controls}
    wrong = {control: ref for control, ref in wrong.items() if ref is not None}

    def outputs(ref, decode_from):
        """ref's output for rill run's mode: a stepwise reference (stepwise_reference) runs the mode's spans."""
        return (ref(x_model, decode_from) if getattr(ref, "stepwise", False) else ref(x_model)).numpy()

    failures = []
    for label, decode_from in (("prefill", None), ("prefill+decode", 4), ("decode only", 0)):
        extra = [] if decode_from is None else ["--decode-from", str(decode_from)]
        expected = outputs(reference, decode_from)
        out = os.path.join(case_dir, f"y_{label.replace(' ', '_').replace('+', '_')}.npy")
        code, log = run_rill(rill, ["--config", paths["config"], "--weights", paths["weights"], "--input",
                                    paths["input"], "--output", out] + extra)
        if code != 0 and ("RILL_ERROR_BACKEND_UNAVAILABLE" in log or
                          # optional ops on a plugin backend; the CPU backend must run every layer
                          "RILL_ERROR_UNSUPPORTED" in log and backend != "cpu"):
            raise Skip(f"the {backend} backend cannot run the layers: {log.strip()}")
        if code != 0:
            failures.append(f"{label}: rill run failed ({code}): {log.strip()}")
            continue
        got = np.load(out)
        result = compare(got, expected, dtype, "layers")
        print(f"  {name:28s} {dtype:4s} {label:15s} {result} {'ok' if result.ok else 'FAIL'}")
        if not result.ok:
            failures.append(f"{label}: {result}")
        for control, wrong_reference in wrong.items():
            caught = compare(got, outputs(wrong_reference, decode_from), dtype, "layers")
            if caught.ok:
                failures.append(f"{label}: negative control passed, {controls[control]}: {caught}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rill", required=True, help="the rill executable")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--group", choices=sorted(GROUPS), action="append",
                        help="run only these groups of cases (default: all)")
    parser.add_argument("--case", action="append", help="run only these cases")
    parser.add_argument("--venv", help="a virtual environment made with --system-site-packages from this "
                        "interpreter, holding transformers (see reference_venv.cmake)")
    args = parser.parse_args()
    if args.venv:  # its packages, beside this interpreter's own
        sys.path += glob.glob(os.path.join(args.venv, "lib", "python*", "site-packages"))
    names = args.case or [n for g in (args.group or sorted(GROUPS)) for n in GROUPS[g]]
    torch.set_num_threads(2)
    failed = []
    skipped = None
    with tempfile.TemporaryDirectory(prefix="rill-layer-") as workdir:
        for seed, name in enumerate(names):
            try:
                problems = check_case(name, args.rill, args.backend, workdir, seed)
            except Skip as why:
                skipped = why
                break
            failed += [f"{name}: {p}" for p in problems]
    return conclude(failed, skipped, args.backend, f"{len(names)}/{len(names)} cases passed on {args.backend}")


if __name__ == "__main__":
    sys.exit(main())
