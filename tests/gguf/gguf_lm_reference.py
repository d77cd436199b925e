#!/usr/bin/env python3
"""Checks `rill logits --model FILE.gguf` against transformers.

Each case builds a random-weight model from a transformers config class (the
sizes and weights of tests/torch/lm_reference.py), writes it as a GGUF file
with PyPI's gguf (GGUFWriter, with the metadata keys and tensor names
llama.cpp's convert_hf_to_gguf.py gives them, q/k rows permuted for the llama
architecture, Gemma's norm weights stored as 1 + w and Phi-3's fused qkv and
gate/up tensors kept as it does), in f32 and in f16 (matrices f16, norms f32,
as the converter's f16 output), and compares rill's logits at every position with
the model's own logits computed by transformers in float64 on the weights as
the file holds them (rounded to f16 for the f16 file). Limits are
tests/python/tolerance.py's "lm" profile. Each file is loaded again with
--copy-weights: rill logits must then report nothing read in place from the
file, where the default load read some, and write the same logits bit for bit.

`rill generate --model FILE.gguf --prompt TEXT` (greedy) on one file that also
holds a Llama 3 tokenizer (tests/tokenizer's, as GGUF metadata) must give the
token ids transformers' generate gives from the prompt tokenizers encodes.

Qwen3 (architecture qwen3; transformers 4.47.1 has none) is transformers'
Qwen2 model without its attention biases and with Qwen3's per-head QK norm
added behind q_proj and k_proj, after Qwen3's published modelling code.

Gemma 3 (architecture gemma3; not in transformers 4.47.1 either) is
transformers' Gemma 2 model with Gemma 3's layer pattern, local RoPE theta,
per-head QK norm and no soft-caps; gemma3_scaled adds linear RoPE scaling
(rope.scaling.type/factor) on the global layers, with transformers' own
scaled frequencies (ROPE_INIT_FUNCTIONS).

Negative controls: a llama file written without the q/k permutation, gemma
and gemma2 files with their norms as w instead of 1 + w, qwen3 and gemma3
files with their q and k norms swapped, a gemma3 file saying every second
layer is global, and the scaled gemma3 file without its scaling keys, must
fail the comparison.
Refusals: an architecture rill does not map, a tensor of a block type rill
does not run (Q4_1), an architecture key rill does not implement and gemma3's
yarn scaling are each refused by name.

Exit codes: 0 all passed, 1 a failure, 77 skipped (torch, transformers or
gguf missing).
"""
import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "torch"))
from outcome import SKIP, conclude  # noqa: E402
from reference_imports import require, use_test_folders  # noqa: E402

use_test_folders("tokenizer", "generate")
np, torch = require("numpy", "torch")

from lm_reference import SIZES, TOKENS, randomize, reference_logits, rounded_copy, run_logits  # noqa: E402
from tolerance import check, check_control  # noqa: E402

# name: (config class, config keys beyond SIZES, GGUF architecture)
CASES = {
    "llama": ("LlamaConfig", dict(rope_theta=500000.0, rms_norm_eps=1e-5), "llama"),
    "llama_tied": ("LlamaConfig", dict(tie_word_embeddings=True), "llama"),
    "qwen2": ("Qwen2Config", dict(rope_theta=1e6), "qwen2"),
    # transformers 4.47.1 has no Qwen3: Qwen2's model with Qwen3's additions (see qwen3_from_qwen2).
    "qwen3": ("Qwen2Config", dict(rope_theta=1e6), "qwen3"),
    "gemma": ("GemmaConfig", dict(head_dim=12, num_key_value_heads=1), "gemma"),
    "phi3": ("Phi3Config", dict(), "phi3"),
    # query_pre_attn_scalar = head_dim: GGUF does not carry it; rill (as llama.cpp) assumes it.
    "gemma2": ("Gemma2Config", dict(head_dim=8, query_pre_attn_scalar=8, sliding_window=4,
                                    attn_logit_softcapping=2.0, final_logit_softcapping=3.0), "gemma2"),
    # transformers 4.47.1 has no Gemma 3: Gemma 2's model with Gemma 3's changes (see gemma3_from_gemma2); six
    # layers, so that the sixth is global, as llama.cpp fixes the pattern for gemma3 files.
    "gemma3": ("Gemma2Config", dict(head_dim=8, query_pre_attn_scalar=8, sliding_window=4, num_hidden_layers=6,
                                    rope_theta=1e6, attn_logit_softcapping=None, final_logit_softcapping=None),
               "gemma3"),
    # Gemma 3 4B and larger: linear RoPE scaling, which Hugging Face's code applies to the global layers only.
    "gemma3_scaled": ("Gemma2Config", dict(head_dim=8, query_pre_attn_scalar=8, sliding_window=4, num_hidden_layers=6,
                                           rope_theta=1e6, attn_logit_softcapping=None, final_logit_softcapping=None,
                                           rope_scaling={"rope_type": "linear", "factor": 8.0}),
                      "gemma3"),
}

# Hugging Face's names (after "model.layers.{i}.") and GGUF's.
LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.weight": "attn_k.weight", "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "self_attn.qkv_proj.weight": "attn_qkv.weight", "mlp.gate_up_proj.weight": "ffn_up.weight",  # Phi-3's fused
    # Qwen3's and Gemma 3's per-head norms (HeadNormed wraps q_proj and k_proj).
    "self_attn.q_proj.proj.weight": "attn_q.weight", "self_attn.q_proj.norm": "attn_q_norm.weight",
    "self_attn.k_proj.proj.weight": "attn_k.weight", "self_attn.k_proj.norm": "attn_k_norm.weight",
    "self_attn.q_proj.proj.bias": "attn_q.bias", "self_attn.k_proj.proj.bias": "attn_k.bias",  # Qwen3's, zero
}
# Gemma 2's sandwich norms: its names where they differ from LAYER_NAMES.
GEMMA2_NAMES = {  # also Gemma 3's
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
}
GLOBAL_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                "lm_head.weight": "output.weight"}


class HeadNormed(torch.nn.Module):
    """Qwen3's and Gemma 3's q_norm / k_norm behind a projection: their
    published modelling code (Qwen3Attention, transformers 4.51; Gemma3Attention,
    4.50) normalizes each head of q and of k, RMSNorm over head_dim with
    rms_norm_eps and a weight w of head_dim (Gemma 3: scaling by 1 + w), before
    RoPE."""

    def __init__(self, proj, eps, head_dim, gen, offset=0.0):
        super().__init__()
        self.proj, self.eps, self.head_dim, self.offset = proj, eps, head_dim, offset
        # Gains (offset + w) near 1, as randomize draws the other norms' gains.
        self.norm = torch.nn.Parameter(1.0 - offset + 0.2 * torch.randn(head_dim, generator=gen))

    def forward(self, x):
        # In the model's dtype (float64 here), where both RMSNorms compute in float32.
        y = self.proj(x)
        h = y.view(*y.shape[:-1], -1, self.head_dim)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * (self.offset + self.norm)).reshape(y.shape)


def qwen3_from_qwen2(model, gen):
    """Qwen3 as Qwen2's model: no attention biases (Qwen3's attention_bias
    default, the biases zeroed here and left out of the file) and the per-head
    QK norm (HeadNormed)."""
    c = model.config
    head_dim = c.hidden_size // c.num_attention_heads
    with torch.no_grad():
        for layer in model.model.layers:
            attn = layer.self_attn
            for proj in (attn.q_proj, attn.k_proj, attn.v_proj):
                proj.bias.zero_()
            attn.q_proj = HeadNormed(attn.q_proj, c.rms_norm_eps, head_dim, gen)
            attn.k_proj = HeadNormed(attn.k_proj, c.rms_norm_eps, head_dim, gen)


def gemma3_from_gemma2(model, gen):
    """Gemma 3 as Gemma 2's model, after Gemma 3's published modelling code:
    layer i is global when (i + 1) % 6 == 0 and slides otherwise, the sliding
    layers rotate with theta 10000 (rope_local_base_freq; the global ones with
    rope_theta), q and k get the per-head QK norm with 1 + w weights, no
    soft-caps (in the config). The norm weights w are drawn near 0 (gains near
    1): with randomize's gains near 2, six sandwich layers amplify float32
    rounding past the limits (NMSE 4e-12, f16 6e-5), a property of that
    weight draw, not of rill (two such layers: 2e-13)."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.gemma2.modeling_gemma2 import Gemma2RotaryEmbedding
    c = model.config
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.sub_(1.0)
    for i, layer in enumerate(model.model.layers):
        attn = layer.self_attn
        layer.is_sliding = (i + 1) % 6 != 0
        if layer.is_sliding:
            attn.rotary_emb = Gemma2RotaryEmbedding(c.head_dim, max_position_embeddings=c.max_position_embeddings,
                                                    base=10000.0)
        elif getattr(c, "rope_scaling", None):  # transformers' own scaled frequencies, global layers only
            attn.rotary_emb.inv_freq = ROPE_INIT_FUNCTIONS[c.rope_scaling["rope_type"]](c, None)[0]
        attn.q_proj = HeadNormed(attn.q_proj, c.rms_norm_eps, c.head_dim, gen, offset=1.0)
        attn.k_proj = HeadNormed(attn.k_proj, c.rms_norm_eps, c.head_dim, gen, offset=1.0)


def permute(w, heads):
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's rows (2, half) stored as (half, 2)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_name(name, arch):
    if name in GLOBAL_NAMES:
        return GLOBAL_NAMES[name]
    parts = name.split(".")
    assert parts[:2] == ["model", "layers"], name
    suffix = ".".join(parts[3:])
    return f"blk.{parts[2]}." + (GEMMA2_NAMES.get(suffix) if arch in ("gemma2", "gemma3") and suffix in GEMMA2_NAMES
                                 else LAYER_NAMES[suffix])


def write_gguf(gguf, path, model, arch, storage, permuted=True, offset_norms=True, extra=None, quantize=None,
               swap_qk_norms=False, scaling=True):
    """model as convert_hf_to_gguf.py would write it; extra(writer) adds keys; quantize(gguf_name, data)
    gives (blocks, GGMLQuantizationType) for a tensor to write quantized, or None to write it as storage;
    swap_qk_norms (a control) writes Qwen3's q_norm as attn_k_norm and k_norm as attn_q_norm; scaling=False
    (a control) leaves Gemma 3's rope scaling out."""
    c = model.config
    w = gguf.GGUFWriter(path, arch)
    w.add_name("random")
    w.add_block_count(c.num_hidden_layers)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_rope_freq_base(c.rope_theta)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if storage == "f32" else gguf.LlamaFileType.MOSTLY_F16)
    if arch == "llama":
        w.add_vocab_size(c.vocab_size)
        w.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
    if arch == "phi3":
        w.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
        w.add_sliding_window(c.sliding_window or 0)
        w.add_rope_scaling_orig_ctx_len(c.original_max_position_embeddings)
    if arch in ("gemma", "gemma2", "gemma3", "qwen3"):  # Qwen3's config.json names head_dim, written too
        head_dim = c.hidden_size // c.num_attention_heads if arch == "qwen3" else c.head_dim
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if arch == "gemma3":
        w.add_sliding_window(c.sliding_window)
        if scaling and getattr(c, "rope_scaling", None):
            w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
            w.add_rope_scaling_factor(c.rope_scaling["factor"])
    if arch == "gemma2":
        w.add_attn_logit_softcapping(c.attn_logit_softcapping)
        w.add_final_logit_softcapping(c.final_logit_softcapping)
        w.add_sliding_window(c.sliding_window)
    w.add_bos_token_id(c.bos_token_id)
    w.add_eos_token_id(c.eos_token_id)
    if extra:
        extra(w)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and c.tie_word_embeddings or arch == "qwen3" and name.endswith(".bias"):
            continue
        data = tensor.to(torch.float32).numpy()
        if arch == "llama" and permuted and name.endswith("q_proj.weight"):
            data = permute(data, c.num_attention_heads)
        if arch == "llama" and permuted and name.endswith("k_proj.weight"):
            data = permute(data, c.num_key_value_heads)
        if arch.startswith("gemma") and offset_norms and name.endswith(("norm.weight", "_proj.norm")):
            data = data + 1  # the converter stores Gemma's 1 + w, for llama.cpp's plain RMSNorm
        gname = gguf_name(name, arch)
        if swap_qk_norms and gname.endswith("_norm.weight") and ".attn_" in gname:
            gname = gname.replace("attn_q_", "attn_x_").replace("attn_k_", "attn_q_").replace("attn_x_", "attn_k_")
        blocks = quantize(gname, data) if quantize else None
        if blocks is not None:
            w.add_tensor(gname, blocks[0], raw_dtype=blocks[1])
            continue
        if storage == "f16" and data.ndim == 2:
            data = data.astype(np.float16)
        w.add_tensor(gname, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def make_model(transformers, name, seed, **overrides):
    class_name, keys, arch = CASES[name]
    config = getattr(transformers, class_name)(**{**SIZES, **keys, **overrides})
    config._attn_implementation = "eager"
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    randomize(model, gen)
    if arch == "qwen3":
        qwen3_from_qwen2(model, gen)
    if arch == "gemma3":
        gemma3_from_gemma2(model, gen)
    if config.tie_word_embeddings:
        model.tie_weights()
    model.eval()
    ids = torch.randint(0, config.vocab_size, (TOKENS,), generator=gen).tolist()
    return model, arch, ids


def mapped_bytes(log):
    """What `rill logits` reports read in place from the file, or None."""
    found = re.search(r"\((\d+) read in place from the file\)", log)
    return int(found.group(1)) if found else None


def check_copied_load(rill, path, ids, out, log, label):
    """`rill logits --copy-weights`: nothing read in place, where the default
    load (its output out, its log) read some; the same logits, bit for bit."""
    copied = out + ".copied.npy"
    code, copied_log = run_logits(rill, path, ids, copied, "cpu", None, None, ["--copy-weights"])
    in_place, none = mapped_bytes(log), mapped_bytes(copied_log)
    ok = code == 0 and bool(in_place) and none == 0 and np.array_equal(np.load(copied), np.load(out))
    print(f"  {label} --copy-weights: {none} bytes read in place (default load: {in_place}), "
          f"{'the same logits' if ok else 'FAIL'}")
    return [] if ok else [f"{label} --copy-weights ({code}): {none} bytes in place against the default's "
                          f"{in_place}, or other logits: {copied_log.strip()}"]


def check_case(gguf, transformers, rill, workdir, name, seed):
    model, arch, ids = make_model(transformers, name, seed)
    failures = []
    for storage in ("f32", "f16"):
        path = os.path.join(workdir, f"{name}_{storage}.gguf")
        write_gguf(gguf, path, model, arch, storage)
        expected = reference_logits(rounded_copy(model, storage), ids)
        for label, decode_from in (("prefill", None), ("prefill+decode", 5)):
            out = os.path.join(workdir, f"{name}_{storage}_{decode_from}.npy")
            code, log = run_logits(rill, path, ids, out, "cpu", None, decode_from)
            if code != 0:
                failures.append(f"{storage} {label}: rill logits failed ({code}): {log.strip()}")
                continue
            check(failures, f"{name:12s} {storage:4s} {label:15s}", np.load(out), expected, storage, "lm")
            if decode_from is None:
                failures += check_copied_load(rill, path, ids, out, log, f"{name:12s} {storage:4s}")
    # The negative controls: the file as the converter would not write it.
    controls = {"llama": [("q/k not permuted in the file", dict(permuted=False))],
                "gemma": [("norms stored as w, not 1 + w", dict(offset_norms=False))],
                "gemma2": [("norms stored as w, not 1 + w", dict(offset_norms=False))],
                "qwen3": [("q and k norms swapped", dict(swap_qk_norms=True))],
                "gemma3": [("q and k norms swapped", dict(swap_qk_norms=True)),
                           ("every 2nd layer global (sliding_window_pattern 2)",
                            dict(extra=lambda w: w.add_sliding_window_pattern(2)))]}.get(arch, [])
    if name == "gemma3_scaled":
        controls.append(("rope scaling left out of the file", dict(scaling=False)))
    for label, how in controls:
        path = os.path.join(workdir, f"{name}_control.gguf")
        write_gguf(gguf, path, model, arch, "f32", **how)
        out = os.path.join(workdir, f"{name}_control.npy")
        code, log = run_logits(rill, path, ids, out, "cpu", None, None)
        if code != 0:
            failures.append(f"control ({label}): rill logits failed ({code}): {log.strip()}")
        else:
            check_control(failures, f"{name:12s} control: {label}", np.load(out), reference_logits(model, ids), "f32",
                          "lm")
    return failures


def check_refusals(gguf, transformers, rill, workdir):
    model, _, ids = make_model(transformers, "llama", 0)
    cases = [
        ("unknown architecture", dict(arch="olmo"),
         ["RILL_ERROR_UNSUPPORTED", 'architecture "olmo" is not supported']),
        ("unsupported block type", dict(arch="llama", quantize=lambda name, data: (
            gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q4_1), gguf.GGMLQuantizationType.Q4_1)
            if name == "blk.0.ffn_up.weight" else None),
         ["RILL_ERROR_UNSUPPORTED", "tensor 'blk.0.ffn_up.weight' has type Q4_1"]),
        ("rope scaling", dict(arch="llama", extra=lambda w: w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)),
         ["RILL_ERROR_UNSUPPORTED", "metadata 'llama.rope.scaling.type'"]),
        ("gemma3 yarn rope scaling", dict(arch="gemma3", case="gemma3", extra=lambda w: w.add_rope_scaling_type(
            gguf.RopeScalingType.YARN)), ["RILL_ERROR_UNSUPPORTED", "metadata 'gemma3.rope.scaling.type'"]),
    ]
    failures = []
    for label, kw, parts in cases:
        path = os.path.join(workdir, f"refused_{label.replace(' ', '_')}.gguf")
        source = make_model(transformers, kw.pop("case"), 0)[0] if "case" in kw else model
        write_gguf(gguf, path, source, kw.pop("arch"), "f32", **kw)
        code, log = run_logits(rill, path, ids, os.path.join(workdir, "refused.npy"), "cpu", None, None)
        missing = [p for p in parts if p not in log]
        print(f"  refused: {label}: {'ok' if code != 0 and not missing else 'FAIL'}: {log.strip()}")
        if code == 0 or missing:
            failures.append(f"{label}: expected a refusal naming {parts}, got ({code}) {log.strip()}")
    return failures


def check_generate(gguf, transformers, rill, workdir):
    """One file with the model and its tokenizer through `rill generate`, greedy."""
    import tokenizers as tk
    from gguf_tokenizer_reference import add_tokenizer
    from hf_generate import hf_greedy
    from tokenizer_reference import build_tokenizers
    data = build_tokenizers(tk)["llama3"]
    vocab = tk.Tokenizer.from_str(json.dumps(data)).get_vocab(with_added_tokens=True)
    bos, eos = vocab["<|begin_of_text|>"], vocab["<|end_of_text|>"]
    model, arch, _ = make_model(transformers, "llama", 7, vocab_size=max(vocab.values()) + 1, bos_token_id=bos,
                                eos_token_id=eos, pad_token_id=eos)
    path = os.path.join(workdir, "generate.gguf")
    refs = []
    write_gguf(gguf, path, model, arch, "f32",
               extra=lambda w: refs.append(add_tokenizer(gguf, w, tk, data, "llama-bpe", bos_id=False)))
    prompt = "Hello, world! The quick brown fox"
    ids = refs[0].encode(prompt).ids
    expected = hf_greedy(copy.deepcopy(model).to(torch.float64), ids, 12)
    if eos in expected:  # rill stops there
        expected = expected[:expected.index(eos) + 1]
    failures = []
    # The file's tensors read in place from its map (the default), then copied.
    for flags in ([], ["--copy-weights"]):
        proc = subprocess.run([rill, "generate", "--model", path, "--prompt", prompt, "--max-new-tokens", "12",
                               "--temperature", "0", "--backend", "cpu", "--print-ids", *flags],
                              capture_output=True, text=True)
        got = [int(t) for t in proc.stdout.split()] if proc.returncode == 0 else None
        print(f"  generate {' '.join(flags)}: prompt {ids}\n    transformers {expected}\n    rill         {got} "
              f"{'ok' if got == expected else 'FAIL'}")
        if got != expected:
            failures.append(f"rill generate {' '.join(flags)} gave {got} ({proc.returncode}: {proc.stderr.strip()}), "
                            f"transformers {expected}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rill", required=True, help="the rill executable")
    parser.add_argument("--venv", help="the reference venv (tests/torch/reference_venv.cmake)")
    args = parser.parse_args()
    from hf_generate import import_references  # transformers from the venv, generate() usable
    found = import_references(args.venv or "", "gguf")
    if found is None:
        return SKIP
    transformers, gguf = found
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(2)
    failed = []
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="rill-gguf-") as workdir:
        for seed, name in enumerate(CASES):
            failed += [f"{name}: {p}" for p in check_case(gguf, transformers, args.rill, workdir, name, seed)]
        failed += check_refusals(gguf, transformers, args.rill, workdir)
        failed += check_generate(gguf, transformers, args.rill, workdir)
    return conclude(failed, None, "cpu", f"{len(CASES)}/{len(CASES)} GGUF cases passed in {time.time() - start:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
