#!/usr/bin/env python3
"""Quantized GGUF files through rill's C API, `rill generate` and `rill quantize`,
against transformers on the dequantized weights.

A random llama-shaped and a qwen2-shaped model (tests/torch/lm_reference.py's
weights, widened to 256 so every matrix holds whole K-format blocks) are
written with PyPI's gguf (gguf_lm_reference.py's writer, as llama.cpp's
converter names and permutes the tensors), every matrix in one block format:
Q8_0, Q4_0, Q5_0 (qwen2) and Q5_1 (llama) quantized by gguf.quants, Q4_K,
Q5_K and Q6_K by rill's own quantizer (gguf has none; through the Python
binding), and a mixed file as
llama.cpp's Q4_K_M writes one (Q4_K, with Q6_K for the output head and the
last layer's attn_v and ffn_down; norms and biases f32). The reference is
transformers in float64 on the weights gguf.quants.dequantize gives back, so
the only difference left is rill's 8-bit quantization of the activations
(docs/QUANTIZATION.md); the limit is tolerance.py's "quant_lm" profile.

Through the binding (rill_lm_load, rill_lm_logits): the logits of a prefill,
and of a prefill followed by one-token decode steps on a KV cache. Through
`rill generate --ids ... --temperature 0` (a Q4_K_M llama file that also
holds a Llama 3 tokenizer, as gguf_lm_reference.py's): each token rill
picks must be the reference's greedy choice, or within the limit's
worst-element margin of it.

`rill quantize IN OUT --format T` on an f32 file written by gguf: gguf's reader reads
the result, its metadata equals the input's (but general.file_type and
general.quantization_version), each matrix holds exactly the blocks of rill's
reference quantizer (so of gguf.quants' for Q8_0/Q4_0/Q5_0/Q5_1), vectors are copied,
gguf's dequantization of every block equals rill's bit for bit, and the file
runs against the reference as above. It must refuse to write over its input
and name a bad format. These checks run in the CPU registration only: the tool
takes no backend, and its files hold the same blocks as the files gguf writes,
which every backend's registration runs.

weight_format = q8_0 and q4_k (the binding's LanguageModel.load, and
`rill logits --weight-format`) on an f32 GGUF file and on the same model's
Hugging Face folder: the reference runs on gguf's dequantization of the blocks
rill's reference quantizer gives every matrix (embedding and head included).

Negative control: the logits of the 4-bit files against the reference on the
unquantized weights must fail the comparison (the limit sees a change of the
weights' blocks).

Exit codes: 0 passed, 1 a failure, 77 skipped (torch, transformers, gguf or the
binding missing, or the backend unavailable).
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "torch"))
from outcome import SKIP, conclude  # noqa: E402
from reference_imports import require, use_test_folders  # noqa: E402

use_test_folders("python")
np, torch = require("numpy", "torch")

from gguf_lm_reference import gguf_name, make_model, write_gguf  # noqa: E402  (its paths too)
from lm_reference import reference_logits  # noqa: E402
from tolerance import PROFILES, check, check_control  # noqa: E402

# Wider than lm_reference.SIZES: K-format rows are multiples of 256.
WIDE = dict(hidden_size=256, intermediate_size=512)
ARCHS = ("llama", "qwen2")
FORMATS = ("q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "q4_k_m")
# Q5_0 and Q5_1 (llama.cpp's fallbacks for rows that are not whole K blocks): one file each.
Q5_FILES = {"llama": "q5_1", "qwen2": "q5_0"}
# The format llama.cpp's quantizer (and `rill quantize`) gives a matrix whose rows are not whole
# 256-element blocks where a K format was asked for.
K_FALLBACK = {"q4_k": "q5_0", "q5_k": "q5_1", "q6_k": "q8_0"}
DECODE_FROM = 5


def block_format(fmt, name, layers, cols=None):
    """The format of GGUF tensor name, with rows of cols elements, in a file of fmt; None keeps it f32
    (norms, biases). `rill quantize` writes K_FALLBACK's format where 256-element blocks do not fit a row."""
    if not name.endswith(".weight") or "norm" in name:
        return None
    if fmt == "q4_k_m":
        last = f"blk.{layers - 1}."
        more_bits = name == "output.weight" or name in (last + "attn_v.weight", last + "ffn_down.weight")
        fmt = "q6_k" if more_bits else "q4_k"
    return K_FALLBACK.get(fmt, fmt) if cols is not None and cols % 256 else fmt


class Quantizer:
    """Blocks of one format: gguf.quants' quantizer where it has one, else rill's."""

    def __init__(self, gguf, rill, ctx):
        self.gguf, self.rill, self.ctx = gguf, rill, ctx

    def qtype(self, fmt):
        return getattr(self.gguf.GGMLQuantizationType, fmt.upper())

    def blocks(self, fmt, data):
        data = np.ascontiguousarray(data, dtype=np.float32)
        try:
            return self.gguf.quants.quantize(data, self.qtype(fmt))
        except NotImplementedError:
            t = self.ctx.empty(data.shape, getattr(self.rill.DType, fmt.upper()))
            t.write_f32(data)
            return t.read().reshape(data.shape[0], -1)

    def dequantize(self, fmt, blocks):
        """rill's dequantization of blocks [rows, row bytes]."""
        t = self.ctx.empty((blocks.shape[0], blocks.shape[1] // self.gguf.GGML_QUANT_SIZES[self.qtype(fmt)][1] *
                            self.gguf.GGML_QUANT_SIZES[self.qtype(fmt)][0]), getattr(self.rill.DType, fmt.upper()))
        t.write(np.ascontiguousarray(blocks))
        return t.read_f32()

    def round_trip(self, fmt, data):
        return self.gguf.quants.dequantize(self.blocks(fmt, data), self.qtype(fmt)).astype(np.float32)


def dequantized_copy(model, arch, fmt, quantizer):
    """model with every weight the file quantizes replaced by gguf's dequantization of its blocks."""
    m = copy.deepcopy(model)
    layers = model.config.num_hidden_layers
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name == "lm_head.weight" and m.config.tie_word_embeddings:
                continue
            f = block_format(fmt, gguf_name(name, arch), layers, p.shape[-1])
            if f is not None:
                p.copy_(torch.from_numpy(quantizer.round_trip(f, p.detach().numpy())))
    return m


def prefill_and_decode(rill, path, backend, ids):
    """rill's logits through the C API: one prefill, and a prefill then decode steps on a cache."""
    with rill.LanguageModel.load(path, backend=backend) as lm:
        prefill = lm.logits(ids)
        cache = lm.kv_cache(1, len(ids))
        steps = [lm.logits(ids[:DECODE_FROM], cache=cache)]
        steps += [lm.logits(ids[t:t + 1], cache=cache) for t in range(DECODE_FROM, len(ids))]
        return prefill, np.concatenate(steps)


def check_generate(args, gguf, transformers, quantizer, workdir, limit):
    """Greedy `rill generate` on a Q4_K_M llama file that holds a Llama 3 tokenizer (as gguf_lm_reference's
    generate check): each pick is the reference's argmax or within limit.worst * rms of it."""
    import tokenizers as tk
    from gguf_tokenizer_reference import add_tokenizer
    from tokenizer_reference import build_tokenizers
    data = build_tokenizers(tk)["llama3"]
    vocab = tk.Tokenizer.from_str(json.dumps(data)).get_vocab(with_added_tokens=True)
    bos, eos = vocab["<|begin_of_text|>"], vocab["<|end_of_text|>"]
    model, arch, ids = make_model(transformers, "llama", 7, vocab_size=max(vocab.values()) + 1, bos_token_id=bos,
                                  eos_token_id=eos, pad_token_id=eos, **WIDE)
    layers = model.config.num_hidden_layers

    def quantize(name, values):
        f = block_format("q4_k_m", name, layers)
        return None if f is None else (quantizer.blocks(f, values), quantizer.qtype(f))

    path = os.path.join(workdir, "generate_q4_k_m.gguf")
    write_gguf(gguf, path, model, arch, "f32", quantize=quantize,
               extra=lambda w: add_tokenizer(gguf, w, tk, data, "llama-bpe", bos_id=False))
    proc = subprocess.run([args.rill, "generate", "--model", path, "--ids", " ".join(map(str, ids)),
                           "--max-new-tokens", "6", "--temperature", "0", "--backend", args.backend, "--print-ids"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return [f"rill generate failed ({proc.returncode}): {proc.stderr.strip()}"]
    got = [int(t) for t in proc.stdout.split()]
    if not got:
        return ["rill generate printed no ids"]
    ref = reference_logits(dequantized_copy(model, arch, "q4_k_m", quantizer), ids + got)
    margin = limit.worst * np.sqrt((ref ** 2).mean())
    failures = []
    for i, token in enumerate(got):
        row = ref[len(ids) - 1 + i]
        if row[token] < row.max() - margin:
            failures.append(f"generated token {i} = {token}: reference logit {row[token]:.5f}, its best "
                            f"{row.max():.5f} (id {int(row.argmax())}), margin {margin:.5f}")
    below = max(float(ref[len(ids) - 1 + i].max() - ref[len(ids) - 1 + i][t]) for i, t in enumerate(got))
    print(f"  rill generate llama q4_k_m: {got}, largest shortfall from the reference's best {below:.5f} "
          f"(margin {margin:.5f}) {'ok' if not failures else 'FAIL'}")
    return failures


def check_logits(args, rill, path, label, model, arch, fmt, quantizer, ids, control=True):
    """rill's logits of the file at path against the reference on the weights its blocks hold; with
    control, a 4-bit file's logits must also fail against the unquantized weights."""
    expected = reference_logits(dequantized_copy(model, arch, fmt, quantizer), ids)
    try:
        prefill, decode = prefill_and_decode(rill, path, args.backend, ids)
    except rill.RillError as e:
        return [f"{label}: rill_lm_load/logits failed: {e}"]
    failures = []
    for mode, got in (("prefill", prefill), ("prefill+decode", decode)):
        check(failures, f"{label:28s} {mode:15s}", got, expected, "f32", "quant_lm")
    if control and fmt in ("q4_0", "q4_k", "q4_k_m"):
        check_control(failures, f"{label:28s} control: unquantized weights", prefill, reference_logits(model, ids),
                      "f32", "quant_lm")
    return failures


def check_file(args, gguf, rill, transformers, quantizer, workdir, arch, fmt, seed):
    """A file gguf writes with the blocks of fmt."""
    model, _, ids = make_model(transformers, arch, seed, **WIDE)
    layers = model.config.num_hidden_layers

    def quantize(name, data):
        f = block_format(fmt, name, layers)
        return None if f is None else (quantizer.blocks(f, data), quantizer.qtype(f))

    path = os.path.join(workdir, f"{arch}_{fmt}.gguf")
    write_gguf(gguf, path, model, arch, "f32", quantize=quantize)
    return check_logits(args, rill, path, f"gguf {arch} {fmt}", model, arch, fmt, quantizer, ids)


def check_rill_quantize(args, gguf, rill, transformers, quantizer, workdir, arch, fmt, seed):
    """`rill quantize IN OUT --format fmt` (the issue's form) on an f32 file: gguf reads the result, its metadata is the input's, each
    matrix holds the blocks rill's reference quantizer gives (bit for bit gguf's for Q8_0/Q4_0/Q5_0/Q5_1), gguf's
    dequantization of them equals rill's bit for bit, and the file runs against the reference."""
    model, _, ids = make_model(transformers, arch, seed, **WIDE)
    source = os.path.join(workdir, f"{arch}_f32_for_{fmt}.gguf")
    write_gguf(gguf, source, model, arch, "f32")
    path = os.path.join(workdir, f"{arch}_rill_{fmt}.gguf")
    label = f"rill quantize {arch} {fmt}"
    proc = subprocess.run([args.rill, "quantize", source, path, "--format", fmt], capture_output=True, text=True)
    if proc.returncode != 0:
        return [f"{label}: failed ({proc.returncode}): {proc.stderr.strip()}"]
    failures = []
    original, written = gguf.GGUFReader(source), gguf.GGUFReader(path)
    changed = {"general.file_type", "general.quantization_version"}
    keys = lambda r: {k: (f.types, [bytes(f.parts[i]) for i in f.data]) for k, f in r.fields.items()
                      if not k.startswith("GGUF.") and k not in changed}
    if keys(original) != keys(written):
        failures.append(f"{label}: metadata differs from the input's")
    inputs = {t.name: t for t in original.tensors}
    layers = model.config.num_hidden_layers
    for t in written.tensors:
        f = block_format(fmt, t.name, layers)
        data = np.asarray(inputs[t.name].data)
        if f is None:
            if not np.array_equal(np.asarray(t.data), data):
                failures.append(f"{label}: tensor {t.name} changed, expected a copy")
            continue
        blocks = np.asarray(t.data)
        if t.tensor_type != quantizer.qtype(f) or not np.array_equal(blocks, quantizer.blocks(f, data)):
            failures.append(f"{label}: tensor {t.name}: type {t.tensor_type.name}, expected {f.upper()} with the "
                            "reference quantizer's blocks")
            continue
        theirs = gguf.quants.dequantize(blocks, t.tensor_type).astype(np.float32)
        mine = quantizer.dequantize(f, blocks)
        if not np.array_equal(mine.view(np.uint32), theirs.view(np.uint32)):
            failures.append(f"{label}: tensor {t.name}: rill's dequantization differs from gguf's")
    print(f"  {label:28s} read by gguf: {len(written.tensors)} tensors, metadata kept, blocks "
          f"{'as the reference' if not failures else 'DIFFER'}")
    return failures + check_logits(args, rill, path, label, model, arch, fmt, quantizer, ids)


def check_weight_format(args, gguf, rill, transformers, quantizer, workdir, fmt, seed):
    """weight_format (through the binding's LanguageModel.load, and `rill logits --weight-format`) on an f32
    GGUF file and on a Hugging Face folder of the same model: every matrix quantized at load as rill's
    reference quantizer does it, against the reference on gguf's dequantization of those blocks."""
    model, arch, ids = make_model(transformers, "llama", seed, **WIDE)
    gguf_path = os.path.join(workdir, f"weight_format_{fmt}.gguf")
    write_gguf(gguf, gguf_path, model, arch, "f32")
    folder = os.path.join(workdir, f"weight_format_{fmt}")
    model.save_pretrained(folder, safe_serialization=True)
    expected = reference_logits(dequantized_copy(model, arch, fmt, quantizer), ids)
    failures = []
    for source, path in (("gguf", gguf_path), ("folder", folder)):
        label = f"weight_format {fmt} {source}"
        try:
            with rill.LanguageModel.load(path, backend=args.backend, weight_format=fmt) as lm:
                got = lm.logits(ids)
        except rill.RillError as e:
            failures.append(f"{label}: {e}")
            continue
        check(failures, f"{label:28s} {'C API':15s}", got, expected, "f32", "quant_lm")
        out = os.path.join(workdir, f"weight_format_{fmt}_{source}.npy")
        proc = subprocess.run([args.rill, "logits", "--model", path, "--ids", " ".join(map(str, ids)), "--output",
                               out, "--backend", args.backend, "--weight-format", fmt], capture_output=True, text=True)
        if proc.returncode != 0:
            failures.append(f"{label}: rill logits failed ({proc.returncode}): {proc.stderr.strip()}")
        else:
            check(failures, f"{label:28s} {'rill logits':15s}", np.load(out), expected, "f32", "quant_lm")
    return failures


def check_quantize_refusals(args, workdir):
    """rill quantize refuses to write over its input (naming the operands as given), names a bad format and an
    operand given twice."""
    failures = []
    source = next(os.path.join(workdir, f) for f in sorted(os.listdir(workdir)) if "_f32_for_" in f)
    model = ["--model", source]
    for label, argv, expected in (
            ("output is the input", model + ["--output", source, "--type", "q8_0"], f"--output {source} is --model's"),
            ("output is the input, by position", [source, source, "--format", "q8_0"], f"OUT {source} is IN's"),
            ("bad type", model + ["--output", source + ".out", "--type", "q3_k"], "--format"),
            ("IN twice", model + [source, source + ".out", "--format", "q8_0"], "IN given twice"),
            ("format twice", model + ["--output", source + ".out", "--format", "q8_0", "--type", "q4_0"],
             "--format given twice")):
        proc = subprocess.run([args.rill, "quantize"] + argv, capture_output=True, text=True)
        ok = proc.returncode != 0 and expected in proc.stderr
        print(f"  rill quantize refuses: {label}: {'ok' if ok else 'FAIL'}: {proc.stderr.strip()}")
        if not ok:
            failures.append(f"rill quantize {label}: expected a refusal naming {expected!r}, got ({proc.returncode}) "
                            f"{proc.stderr.strip()}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rill", required=True, help="the rill executable")
    parser.add_argument("--backend", default="cpu", help="the backend to run on")
    parser.add_argument("--venv", help="the reference venv (tests/torch/reference_venv.cmake)")
    args = parser.parse_args()
    from hf_generate import import_references
    found = import_references(args.venv or "", "gguf", "rill")
    if found is None:
        return SKIP
    transformers, gguf, rill = found
    try:
        rill.Context(f'[runtime]\nbackend = "{args.backend}"\n').close()
    except rill.BackendUnavailableError as missing:
        print(f"skipped: {missing}")
        return SKIP
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(2)
    failed = []
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="rill-gguf-quant-") as workdir, \
            rill.Context('[runtime]\nbackend = "cpu"\n') as ctx:
        quantizer = Quantizer(gguf, rill, ctx)
        for seed, arch in enumerate(ARCHS):
            for fmt in FORMATS + (Q5_FILES[arch],):
                failed += check_file(args, gguf, rill, transformers, quantizer, workdir, arch, fmt, seed)
            # `rill quantize` takes no backend, and the files it writes hold the blocks check_file's hold
            # (it checks so), whose logits check_file checks on every backend: once, on the CPU.
            if args.backend == "cpu":
                for fmt in FORMATS if arch == "llama" else ("q4_k_m",):
                    failed += check_rill_quantize(args, gguf, rill, transformers, quantizer, workdir, arch, fmt, seed)
        if args.backend == "cpu":
            failed += check_quantize_refusals(args, workdir)
        for seed, fmt in enumerate(("q8_0", "q4_k")):
            failed += check_weight_format(args, gguf, rill, transformers, quantizer, workdir, fmt, 20 + seed)
        failed += [f"generate: {f}" for f in
                   check_generate(args, gguf, transformers, quantizer, workdir, PROFILES["quant_lm"]["f32"])]
    return conclude(failed, None, args.backend, f"every quantized GGUF file passed in {time.time() - start:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
