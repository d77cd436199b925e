#!/usr/bin/env python3
"""`rill quantize` from a Hugging Face folder, against independent references.

A random model of each family `rill quantize` converts (llama, saved in
shards, qwen2, qwen3, gemma, gemma2, gemma3, phi3) made by transformers
(gguf_quant_reference's sizes, so most matrices hold whole K-format blocks;
Qwen3 and Gemma 3 as gguf_lm_reference builds them, saved under their
published names), each with a byte-level BPE tokenizer.json trained by PyPI
tokenizers (tokenizer_reference's Llama 3 and Qwen2 tokenizers), is quantized
straight from its folder. Checks:

- PyPI gguf's GGUFReader reads the file. Its architecture keys equal those
  gguf_lm_reference's writer (llama.cpp's converter, through PyPI gguf)
  writes for the same model, and its tensors (names, shapes, types, bytes)
  equal `rill quantize` of that writer's f32 file: the names, llama's q/k
  row permutation, Gemma's 1 + w norms and Phi-3's fused matrices are
  llama.cpp's.
- The file's logits (rill_lm_load, prefill and prefill+decode) against
  transformers on gguf's dequantization of the blocks, with
  gguf_quant_reference's limits (tolerance.py's "quant_lm").
- The tokenizer in the file encodes and decodes tokenizer_reference's corpus
  as PyPI tokenizers does with the tokenizer.json: 0 differences.
- A bf16 qwen2 folder with rows of 160 and a vocabulary larger than its
  tokenizer, as q4_k_m: llama.cpp's fallbacks where K blocks do not fit a
  row (q5_0 for q4_k, q8_0 for q6_k), the mix
  elsewhere, norms and biases in f32, the token list padded to the
  vocabulary; its logits as above.
- SentencePiece BPE tokenizer.json files as transformers' Llama and Gemma
  converters write them (gguf_tokenizer_reference's stand-ins for a
  SentencePiece model), quantized in the llama and gemma folders: the GGUF
  tokenizer (model "llama", scores) encodes and decodes the corpus as
  tokenizers does: 0 differences.
- Refusals, each naming the problem and leaving no output file: a folder
  without config.json, an unsupported model_type, a missing shard, a
  Unigram tokenizer.json, a byte-fallback BPE trained by tokenizers (its
  merges are not every split) and a Metaspace pre-tokenizer.

Negative controls: the tensors compared with `rill quantize` of a file
written without the family's convention (llama's q/k permutation, Gemma's
1 + w norms, Qwen3's and Gemma 3's q and k norms in place) must differ; the
4-bit files' logits against transformers on the unquantized weights must
fail the limit; the
tokenizer written with the qwen2 pre-tokenizer name for the Llama 3 data
must differ from tokenizers; the SentencePiece tokenizer.json with its
merges reversed must differ too.

Exit codes: 0 passed, 1 a failure, 77 skipped (torch, transformers, gguf,
tokenizers or the binding missing).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "torch"))
from outcome import SKIP, conclude  # noqa: E402
from reference_imports import require, use_test_folders  # noqa: E402

use_test_folders("tokenizer")
np, torch = require("numpy", "torch")

from gguf_lm_reference import make_model, write_gguf  # noqa: E402
from gguf_quant_reference import WIDE, Quantizer, block_format, check_logits  # noqa: E402

# (tokenizer_reference kind, the pre-tokenizer llama.cpp names, rill quantize --type, shard size, config keys
# beyond gguf_lm_reference's case, the control: gguf_lm_reference's writer without the family's convention)
CASES = {
    "llama": ("llama3", "llama-bpe", "q4_k_m", "300KB", {}, ("q/k permutation", dict(permuted=False))),
    "qwen2": ("qwen2", "qwen2", "q8_0", None, {}, None),
    "qwen3": ("qwen2", "qwen2", "q8_0", None, {}, ("q and k norms swapped", dict(swap_qk_norms=True))),
    "gemma": ("qwen2", "qwen2", "q8_0", None, dict(head_dim=64), ("norms as w, not 1 + w", dict(offset_norms=False))),
    "gemma2": ("qwen2", "qwen2", "q8_0", None, {}, ("norms as w, not 1 + w", dict(offset_norms=False))),
    "gemma3": ("qwen2", "qwen2", "q8_0", None, {}, ("q and k norms swapped", dict(swap_qk_norms=True))),
    "phi3": ("qwen2", "qwen2", "q4_k_m", None, {}, None),  # its control: the 4-bit logits against unquantized
}
# transformers 4.47.1 has neither Qwen3 nor Gemma 3: gguf_lm_reference builds them from Qwen2's and Gemma 2's
# models; their folders get the published model_type and tensor names (q_norm, k_norm; no Qwen3 biases).
PUBLISHED = {"qwen3": dict(model_type="qwen3", architectures=["Qwen3ForCausalLM"]),
             "gemma3": dict(model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], sliding_window_pattern=6,
                            rope_local_base_freq=10000.0)}


def quantize(args, model_path, out, fmt):
    return subprocess.run([args.rill, "quantize", "--model", model_path, "--output", out, "--type", fmt],
                          capture_output=True, text=True)


def save_published(model, arch, folder):
    """model (gguf_lm_reference's Qwen3 or Gemma 3) as a folder of the published family."""
    from safetensors.torch import save_file
    tensors = {}
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and model.config.tie_word_embeddings or arch == "qwen3" and name.endswith(".bias"):
            continue
        name = name.replace("_proj.proj.", "_proj.")
        for p in ("q", "k"):
            name = name.replace(f"self_attn.{p}_proj.norm", f"self_attn.{p}_norm.weight")
        tensors[name] = tensor.contiguous()
    os.makedirs(folder)
    save_file(tensors, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    config = dict(model.config.to_dict(), **PUBLISHED[arch])
    if arch == "qwen3":
        config["head_dim"] = config["hidden_size"] // config["num_attention_heads"]
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)


def make_folder(transformers, tk, trained, workdir, arch, seed):
    kind, _, _, shard, keys, _ = CASES[arch]
    data = trained[kind]
    vocab = tk.Tokenizer.from_str(json.dumps(data)).get_vocab(with_added_tokens=True)
    model, _, ids = make_model(transformers, arch, seed, vocab_size=max(vocab.values()) + 1, **WIDE, **keys)
    folder = os.path.join(workdir, f"{arch}_hf")
    if arch in PUBLISHED:
        save_published(model, arch, folder)
    else:
        model.save_pretrained(folder, safe_serialization=True, **({"max_shard_size": shard} if shard else {}))
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(data, f)
    return model, ids, folder, data


def tensors_of(reader):
    return {t.name: (t.tensor_type, tuple(int(d) for d in t.shape), bytes(np.asarray(t.data).tobytes()))
            for t in reader.tensors}


def arch_keys(reader, arch):
    return {k: [bytes(f.parts[i]) for i in f.data] for k, f in reader.fields.items() if k.startswith(arch + ".")}


def check_case(args, gguf, rill, transformers, tk, trained, quantizer, workdir, arch, seed):
    from gguf_tokenizer_reference import differences
    _, pre, fmt, _, _, control = CASES[arch]
    label = f"hf {arch} {fmt}"
    model, ids, folder, data = make_folder(transformers, tk, trained, workdir, arch, seed)
    out = os.path.join(workdir, f"{arch}_{fmt}.gguf")
    start = time.time()
    proc = quantize(args, folder, out, fmt)
    if proc.returncode != 0:
        return [f"{label}: rill quantize failed ({proc.returncode}): {proc.stderr.strip()}"], folder
    print(f"  {label}: quantized in {time.time() - start:.2f} s: {proc.stderr.strip()}")
    failures = []
    written = gguf.GGUFReader(out)

    # The same model through llama.cpp's conventions (PyPI gguf's writer), then rill quantize.
    def via_writer(name, **convention):
        f32 = os.path.join(workdir, f"{arch}_{name}_f32.gguf")
        write_gguf(gguf, f32, model, arch, "f32", **convention)
        q = os.path.join(workdir, f"{arch}_{name}_{fmt}.gguf")
        p = quantize(args, f32, q, fmt)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        return gguf.GGUFReader(f32), gguf.GGUFReader(q)

    reference_f32, reference = via_writer("writer")
    mine, theirs = arch_keys(written, arch), arch_keys(reference_f32, arch)
    differing = sorted(k for k in theirs if mine.get(k) != theirs[k])
    if differing:
        failures.append(f"{label}: architecture keys differ from gguf's writer: {differing}")
    same = tensors_of(written) == tensors_of(reference)
    if not same:
        failures.append(f"{label}: tensors differ from rill quantize of gguf's writer's file")
    print(f"  {label}: {len(written.tensors)} tensors {'equal' if same else 'DIFFER from'} gguf's writer's "
          f"({len(theirs)} architecture keys, {len(differing)} differ)")
    if control:  # the comparison sees the family's convention
        what, convention = control
        _, wrong = via_writer("control", **convention)
        caught = tensors_of(written) != tensors_of(wrong)
        print(f"  {label}: control: a file with {what} {'differs (ok)' if caught else 'EQUAL'}")
        if not caught:
            failures.append(f"{label}: control: the tensors equal those of a file with {what}")

    failures += check_logits(args, rill, out, label, model, arch, fmt, quantizer, ids)

    ref = tk.Tokenizer.from_str(json.dumps(data))
    count = differences(rill, ref, out, label)
    print(f"  {label}: tokenizer against tokenizers: {count} differences")
    if count:
        failures.append(f"{label}: the tokenizer differs from tokenizers in {count} checks")
    if arch == "llama":  # control: the Llama 3 data under Qwen2's pre-tokenizer
        bad = os.path.join(workdir, "llama_bad_pre")
        shutil.copytree(folder, bad)
        edited = dict(data, normalizer=trained["qwen2"]["normalizer"], pre_tokenizer=trained["qwen2"]["pre_tokenizer"])
        edited["model"] = dict(data["model"], ignore_merges=False)
        with open(os.path.join(bad, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(edited, f)
        bad_out = os.path.join(workdir, "llama_bad_pre.gguf")
        p = quantize(args, bad, bad_out, "q8_0")
        wrong = differences(rill, ref, bad_out, label + " control", quiet=True) if p.returncode == 0 else 0
        print(f"  {label}: control: written as qwen2's pre-tokenizer: {wrong} differences")
        if wrong == 0:
            failures.append(f"{label}: control: qwen2's pre-tokenizer gave no differences ({p.stderr.strip()})")
    return failures, folder


def check_narrow_bf16(args, gguf, rill, transformers, tk, trained, quantizer, workdir, seed):
    """A bf16 qwen2 folder with rows of 160 (not whole 256-blocks, as Qwen2-0.5B's 896) and a vocabulary
    larger than its tokenizer, as q4_k_m: matrices whose rows do not hold whole K blocks get llama.cpp's
    fallback (q5_0 for q4_k, q8_0 for q6_k), the others follow the mix; norms and biases are f32; the token
    list is padded to the vocabulary."""
    label = "hf qwen2 bf16 narrow q4_k_m"
    data = trained["qwen2"]
    vocab = tk.Tokenizer.from_str(json.dumps(data)).get_vocab(with_added_tokens=True)
    vocab_size = max(vocab.values()) + 1 + 5
    model, _, ids = make_model(transformers, "qwen2", seed, vocab_size=vocab_size, hidden_size=160,
                               intermediate_size=512)
    model = model.to(torch.bfloat16)
    folder = os.path.join(workdir, "qwen2_bf16_hf")
    model.save_pretrained(folder, safe_serialization=True)
    model = model.to(torch.float32)  # the bf16 values, exactly, for the reference
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(data, f)
    out = os.path.join(workdir, "qwen2_bf16_q4_k_m.gguf")
    proc = quantize(args, folder, out, "q4_k_m")
    if proc.returncode != 0:
        return [f"{label}: rill quantize failed ({proc.returncode}): {proc.stderr.strip()}"]
    print(f"  {label}: {proc.stderr.strip()}")
    failures = []
    reader = gguf.GGUFReader(out)
    layers = model.config.num_hidden_layers
    wrong = []
    for t in reader.tensors:
        shape = [int(d) for d in t.shape]
        expected = "F32" if len(shape) == 1 else block_format("q4_k_m", t.name, layers, shape[0]).upper()
        if t.tensor_type.name != expected:
            wrong.append(f"{t.name} {shape}: {t.tensor_type.name}, expected {expected}")
    formats = sorted({t.tensor_type.name for t in reader.tensors})
    print(f"  {label}: tensor types {formats}, {len(wrong)} unexpected")
    if wrong:
        failures.append(f"{label}: tensor types: {wrong}")
    tokens = len(reader.fields["tokenizer.ggml.tokens"].data)
    print(f"  {label}: {tokens} tokens for a vocabulary of {vocab_size}")
    if tokens != vocab_size:
        failures.append(f"{label}: {tokens} tokens in the file, expected the vocabulary's {vocab_size}")
    failures += check_logits(args, rill, out, label, model, "qwen2", "q4_k_m", quantizer, ids, control=False)
    return failures


def refusal_failures(label, proc, out, expected):
    """rill quantize must exit 1 naming `expected` and leave no output file."""
    ok = proc.returncode == 1 and expected in proc.stderr and not os.path.exists(out)
    print(f"  refuses {label}: {'ok' if ok else 'FAIL'}: {proc.stderr.strip()}")
    if ok:
        return []
    return [f"refusal {label}: expected exit 1 naming {expected!r} and no {out}, got "
            f"({proc.returncode}) {proc.stderr.strip()}"]


def check_sentencepiece(args, rill, tk, trained, workdir, folders):
    """SentencePiece BPE tokenizer.json files, as transformers' LlamaConverter and GemmaConvert write them
    (gguf_tokenizer_reference's stand-ins for a SentencePiece model, Llama 2's layout with a space prefix
    and Gemma's without), in the llama and gemma folders: the GGUF tokenizer (model "llama", scores,
    types) encodes and decodes the corpus as tokenizers does with the tokenizer.json. Control: the
    merges in reverse order must differ; a BPE trained by tokenizers (not every split a merge) and a
    Metaspace pre-tokenizer are refused by name."""
    from gguf_tokenizer_reference import differences, sentencepiece_pieces, transformers_reference
    failures = []

    def quantize_with(name, arch, data):
        folder = os.path.join(workdir, f"spm_{name}")
        shutil.copytree(folders[arch], folder)
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(data, f)
        out = os.path.join(workdir, f"spm_{name}.gguf")
        return quantize(args, folder, out, "q8_0"), out

    for label, arch, gemma in (("llama2", "llama", False), ("gemma", "gemma", True)):
        ref = transformers_reference(sentencepiece_pieces(trained["llama2"], gemma), gemma, not gemma)
        data = json.loads(ref.backend_tokenizer.to_str())
        proc, out = quantize_with(label, arch, data)
        if proc.returncode != 0:
            failures.append(f"SentencePiece {label}: rill quantize failed: {proc.stderr.strip()}")
            continue
        count = differences(rill, ref, out, f"SentencePiece {label}")
        print(f"  SentencePiece {label} tokenizer.json ({len(data['model']['merges'])} merges): {count} differences")
        if count:
            failures.append(f"SentencePiece {label}: the tokenizer differs from tokenizers in {count} checks")
        if gemma:
            continue
        reversed_merges = dict(data, model=dict(data["model"], merges=data["model"]["merges"][::-1]))
        proc, out = quantize_with("reversed", arch, reversed_merges)
        wrong = differences(rill, ref, out, "control", quiet=True) if proc.returncode == 0 else 0
        print(f"  SentencePiece {label} control: merges reversed: {wrong} differences")
        if wrong == 0:
            failures.append(f"SentencePiece control: reversed merges gave no differences ({proc.stderr.strip()})")
    metaspace = dict(trained["llama2"], normalizer=None, pre_tokenizer=trained["metaspace"]["pre_tokenizer"])
    for name, data, expected in (("trained", trained["llama2"], "'model.merges'"),
                                 ("metaspace", metaspace, "'pre_tokenizer': expected null or a split")):
        proc, out = quantize_with(name, "llama", data)
        failures += refusal_failures(f"a SentencePiece tokenizer.json ({name})", proc, out, expected)
    return failures


def check_refusals(args, workdir, folder):
    """Bad folders are refused by name, and no output file is left."""
    failures = []

    def variant(name, edit):
        path = os.path.join(workdir, name)
        shutil.copytree(folder, path)
        edit(path)
        return path

    def set_type(path):
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
        config["model_type"] = "mistral"
        with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f)

    def drop_shard(path):
        index = json.load(open(os.path.join(path, "model.safetensors.index.json"), encoding="utf-8"))
        os.remove(os.path.join(path, sorted(set(index["weight_map"].values()))[-1]))

    def sentencepiece(path):
        with open(os.path.join(path, "tokenizer.json"), encoding="utf-8") as f:
            t = json.load(f)
        t["model"]["type"] = "Unigram"
        with open(os.path.join(path, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(t, f)

    cases = [("no config.json", lambda p: os.remove(os.path.join(p, "config.json")), "config.json: missing"),
             ("unsupported family", set_type, "\"mistral\" is not supported"),
             ("missing shard", drop_shard, "-of-0"),
             ("non-byte-level tokenizer", sentencepiece, "'model.type': expected \"BPE\"")]
    for i, (label, edit, expected) in enumerate(cases):
        path = variant(f"refuse_{i}", edit)
        out = os.path.join(workdir, f"refuse_{i}.gguf")
        failures += refusal_failures(label, quantize(args, path, out, "q8_0"), out, expected)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rill", required=True, help="the rill executable")
    parser.add_argument("--venv", help="the reference venv (tests/torch/reference_venv.cmake)")
    args = parser.parse_args()
    args.backend = "cpu"
    from hf_generate import import_references
    found = import_references(args.venv or "", "gguf", "rill")
    if found is None:
        return SKIP
    transformers, gguf, rill = found
    try:
        import tokenizers as tk
    except ImportError as missing:
        print(f"skipped: {missing}")
        return SKIP
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(2)
    failed = []
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="rill-quantize-hf-") as workdir, \
            rill.Context('[runtime]\nbackend = "cpu"\n') as ctx:
        from tokenizer_reference import build_tokenizers
        trained = build_tokenizers(tk)
        quantizer = Quantizer(gguf, rill, ctx)
        folders = {}
        for seed, arch in enumerate(CASES):
            f, folders[arch] = check_case(args, gguf, rill, transformers, tk, trained, quantizer, workdir, arch,
                                               30 + seed)
            failed += f
        failed += check_narrow_bf16(args, gguf, rill, transformers, tk, trained, quantizer, workdir, 40)
        failed += check_sentencepiece(args, rill, tk, trained, workdir, folders)
        failed += check_refusals(args, workdir, folders["llama"])
    return conclude(failed, None, "cpu", f"rill quantize from Hugging Face folders passed in {time.time() - start:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
