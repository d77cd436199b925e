#!/usr/bin/env python3
"""Helpers for scripts/bench-llamacpp.sh and scripts/check-llamacpp.sh: the model files, waiting for
an idle machine, the table, llama.cpp's logits beside rill's.

  make SHAPE FOLDER_PREFIX REPO DTYPES
      writes a random-weight Hugging Face folder of SHAPE (see SHAPES) per dtype in DTYPES
      ("f32 f16 bf16" or part of it: FOLDER_PREFIX-f32, -f16, -bf16) with transformers, with the
      shape's tokenizer: models/fortune's of the REPO checkout for qwen2 shapes, a Llama-3-style
      byte-level BPE trained as tests/tokenizer/tokenizer_reference.py does for llama shapes.
      Existing folders are kept; the weights are the same whichever dtypes one asks for.
  unpermute-qk FOLDER OUT_FOLDER
      a copy of the llama FOLDER whose q_proj/k_proj rows are in llama.cpp's GGUF order, so that
      `rill quantize` of it writes a file without the q/k permutation (a negative control).
  ids SHAPE COUNT
      prints COUNT fixed token ids spread over the shape's vocabulary.
  title SHAPE
      prints the shape's name for the table's heading.
  convert LLAMA_CPP_DIR FOLDER OUT_GGUF OUTTYPE SHAPE
      converts FOLDER to GGUF with llama.cpp's own convert_hf_to_gguf.py.
  wait-idle MAX_SECONDS
      waits until the CPUs were at least 90 % idle over one second, at most MAX_SECONDS;
      prints the 1-minute load average.
  rill-stats STDERR_FILE DECODE_TOKENS
      prints the time to first token, prefill and decode tokens/s from `rill generate --stats`,
      checking that it decoded DECODE_TOKENS tokens (an end-of-sequence id stops it early).
  llama-bench-ts JSON_FILE
      prints llama-bench's prompt and generation tokens/s from its -o json output.
  table RESULTS_TSV
      prints the table of medians (and ranges) of the runs in RESULTS_TSV.
  compare RILL_NPY LLAMA_F32 FORMAT LABEL [--expect-miss]
      compares rill's logits (.npy [T, vocab]) with llama.cpp's (raw float32, T x vocab) against
      FORMAT's bounds (LIMITS); exits 1 on a miss (with --expect-miss: 1 unless it misses).

make, unpermute-qk and convert run in a venv with transformers 4.47.1,
tokenizers 0.21.4 and llama.cpp's converter requirements; compare needs numpy; the others need
only Python's standard library.
"""
import json
import os
import re
import shutil
import statistics
import time
import sys
from pathlib import Path

# family: the transformers class; config: its arguments; id_span: the ids the benchmark's prompt
# spreads over. Full vocabularies: the tokenizers are smaller, and the converter (or `rill
# quantize`) pads the GGUF vocabulary to vocab_size, so rill and llama.cpp run the same
# embedding and (tied) LM head. rope_scaling stays out of the Llama shape: `rill quantize`
# refuses it, and it changes no cost.
SHAPES = {
    "qwen2-0.5b": dict(family="qwen2", id_span=150000, title="Qwen2-0.5B shape", config=dict(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)),
    "llama-3.2-1b": dict(family="llama", id_span=128000, title="Llama-3.2-1B shape (no rope_scaling)", config=dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
        rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True)),
    # check-llamacpp.sh's small models: rows of whole 256-value K-format blocks.
    "tiny-qwen2": dict(family="qwen2", id_span=1000, title="small Qwen2", config=dict(
        vocab_size=1024, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, initializer_range=0.1)),
    "tiny-llama": dict(family="llama", id_span=1000, title="small Llama", config=dict(
        vocab_size=1024, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=512,
        rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True, initializer_range=0.1)),
    # Gemma's 1 + w norms, tanh GeGLU and scaled embedding; Gemma 2's sandwich norms, soft-caps and
    # a sliding window shorter than the check's ids; Phi-3's fused qkv and gate_up matrices.
    "tiny-gemma": dict(family="gemma", id_span=1000, title="small Gemma", config=dict(
        vocab_size=1024, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=64, max_position_embeddings=512,
        rms_norm_eps=1e-6, initializer_range=0.1)),
    "tiny-gemma2": dict(family="gemma2", id_span=1000, title="small Gemma 2", config=dict(
        vocab_size=1024, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, query_pre_attn_scalar=64,
        sliding_window=16, max_position_embeddings=512, rms_norm_eps=1e-6, initializer_range=0.1)),
    "tiny-phi3": dict(family="phi3", id_span=1000, title="small Phi-3", config=dict(
        vocab_size=1024, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
        original_max_position_embeddings=512, rms_norm_eps=1e-5, initializer_range=0.1, pad_token_id=0)),
    # Rows of 384 (as Qwen2-0.5B's 896, not whole 256-value blocks): the K mixes fall back to
    # Q5_0 / Q5_1 / Q8_0 for every matrix but ffn_down, as llama.cpp's quantizer does.
    "narrow-qwen2": dict(family="qwen2", id_span=1000, title="small Qwen2, rows of 384", config=dict(
        vocab_size=1024, hidden_size=384, intermediate_size=768, num_hidden_layers=2,
        num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=512,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, initializer_range=0.1)),
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
DTYPES = ("f32", "f16", "bf16")

# compare's bounds per format, rill against llama.cpp on the same file: NMSE over all logits,
# and the worst element's difference over the largest |logit| of llama.cpp's. Measured by
# check-llamacpp.sh (llama / qwen2): q8_0 NMSE 4.9e-4 / 4.4e-4, worst 3.1e-2 / 2.1e-2; q4_k_m
# NMSE 2.6e-3 / 2.4e-3, worst 6.9e-2 / 5.9e-2. That is the size of activation rounding, not
# of a misread weight: the rounding for the integer dot products differs between the two (at
# transformers' default init each is 3.6e-4 from the unquantized model's q8_0 logits and
# 1.5e-4 from the other), and these models' wider init (sharp attention) magnifies it. A file
# read without the q/k permutation gives NMSE 1.1.
LIMITS = {"q8_0": (2e-3, 0.1), "q4_k_m": (1e-2, 0.2), "q5_k_m": (1e-2, 0.2)}


def write_tokenizer(shape: str, folder: Path, repo: str) -> None:
    if SHAPES[shape]["family"] == "qwen2":
        for file in TOKENIZER_FILES:
            shutil.copy(Path(repo) / "models" / "fortune" / file, folder / file)
        return
    import tokenizers
    sys.path.insert(0, str(Path(repo) / "tests" / "tokenizer"))
    from tokenizer_reference import build_tokenizers
    with open(folder / "tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(build_tokenizers(tokenizers)["llama3"], f)


def make(shape: str, prefix: str, repo: str, dtypes: str) -> None:
    import torch
    import transformers

    wanted = dtypes.split()
    if not wanted or any(d not in DTYPES for d in wanted):
        sys.exit(f"make: DTYPES: expected some of {' '.join(DTYPES)}, got '{dtypes}'")
    if all((Path(f"{prefix}-{d}") / "tokenizer.json").exists() for d in wanted):
        return
    family = SHAPES[shape]["family"]
    config_class, model_class = {"qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
                                 "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
                                 "gemma": (transformers.GemmaConfig, transformers.GemmaForCausalLM),
                                 "gemma2": (transformers.Gemma2Config, transformers.Gemma2ForCausalLM),
                                 "phi3": (transformers.Phi3Config, transformers.Phi3ForCausalLM)}[family]
    torch.manual_seed(0)
    config = config_class(**SHAPES[shape]["config"], bos_token_id=0, eos_token_id=1, torch_dtype="float32")
    model = model_class(config).eval()
    # Each dtype is converted from the one before (f32, f16, bf16), as the first version of
    # this script did, so that folders made then and now hold the same weights.
    for name, dtype in zip(DTYPES, (torch.float32, torch.float16, torch.bfloat16)):
        model.to(dtype)
        folder = Path(f"{prefix}-{name}")
        if name not in wanted or (folder / "tokenizer.json").exists():  # written last
            continue
        model.save_pretrained(folder)
        write_tokenizer(shape, folder, repo)
        print(f"wrote {folder}")


def unpermute_qk(folder: str, out: str) -> None:
    from safetensors.torch import load_file, save_file

    source, target = Path(folder), Path(out)
    shutil.copytree(source, target)
    config = json.load(open(source / "config.json"))
    tensors = load_file(source / "model.safetensors")
    for name, heads in (("q_proj", config["num_attention_heads"]), ("k_proj", config["num_key_value_heads"])):
        for key in [k for k in tensors if k.endswith(f"{name}.weight")]:
            w = tensors[key]
            # `rill quantize` moves each head's rotary pair (i, i + d/2) to rows (2i, 2i + 1), as
            # llama.cpp's converter does; rows moved the other way first come out in Hugging
            # Face's order.
            half = w.shape[0] // heads // 2
            tensors[key] = w.reshape(heads, half, 2, -1).transpose(1, 2).reshape(w.shape).contiguous()
    save_file(tensors, target / "model.safetensors", metadata={"format": "pt"})
    print(f"wrote {target}")


def ids(shape: str, count: str) -> None:
    print(" ".join(str(2 + i * 7919 % SHAPES[shape]["id_span"]) for i in range(int(count))))


def compare(rill_npy: str, llama_f32: str, fmt: str, label: str, expect_miss: bool) -> None:
    import numpy as np

    rill = np.load(rill_npy).astype(np.float64)
    llama = np.fromfile(llama_f32, dtype=np.float32).astype(np.float64)
    if llama.size != rill.size:
        sys.exit(f"{label}: llama.cpp gave {llama.size} logits, rill {rill.shape}")
    llama = llama.reshape(rill.shape)
    nmse = float(np.sum((rill - llama) ** 2) / np.sum(llama ** 2))
    worst = float(np.max(np.abs(rill - llama)) / np.max(np.abs(llama)))
    nmse_limit, worst_limit = LIMITS[fmt]
    miss = nmse > nmse_limit or worst > worst_limit
    verdict = ("misses (ok, a control)" if miss else "PASSES (a control must miss)") if expect_miss else \
        ("MISSES" if miss else "ok")
    print(f"{label}: NMSE {nmse:.2e} (limit {nmse_limit:.0e}), worst element {worst:.2e} of the largest logit "
          f"(limit {worst_limit:.0e}), {rill.shape[0]} tokens x {rill.shape[1]}: {verdict}")
    if miss != expect_miss:
        sys.exit(1)


def convert(llama_cpp_dir: str, folder: str, out: str, outtype: str, shape: str) -> None:
    import torch

    # The converter names torch's fp8 and wide unsigned dtypes in tables for checkpoints
    # stored in them; older torch builds lack those names. These folders hold only
    # f32/f16/bf16 tensors, so placeholders for the missing names change nothing.
    for name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
        if not hasattr(torch, name):
            setattr(torch, name, torch.uint8)
    sys.path.insert(0, str(Path(llama_cpp_dir) / "gguf-py"))
    sys.path.insert(0, llama_cpp_dir)
    import convert_hf_to_gguf as converter

    # The converter identifies a BPE pre-tokenizer by hashing its output on a test text and
    # refuses unknown ones. The benchmark feeds token ids, never text, so the tokenizer only
    # has to load: label it as the family's.
    pre = "qwen2" if SHAPES[shape]["family"] == "qwen2" else "llama-bpe"
    converter.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
    sys.argv = ["convert_hf_to_gguf.py", folder, "--outfile", out, "--outtype", outtype]
    converter.main()


def cpu_times() -> tuple[int, int]:
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields)  # idle + iowait, all


def wait_idle(max_seconds: str) -> None:
    deadline = time.monotonic() + float(max_seconds)
    while True:
        idle0, all0 = cpu_times()
        time.sleep(1.0)
        idle1, all1 = cpu_times()
        if (idle1 - idle0) >= 0.9 * max(all1 - all0, 1) or time.monotonic() > deadline:
            break
    print(f"{os.getloadavg()[0]:.2f}")


def rill_stats(stderr_file: str, decode_tokens: str) -> None:
    text = open(stderr_file).read()
    match = re.search(r"^prompt: \d+ tokens, time to first token ([0-9.]+) s \(([0-9.]+) tokens/s\); "
                      r"decode: (\d+) tokens, ([0-9.]+) tokens/s$", text, re.MULTILINE)
    if match is None:
        sys.exit(f"rill generate printed no timings line:\n{text}")
    if match[3] != decode_tokens:
        sys.exit(f"rill generate decoded {match[3]} tokens, expected {decode_tokens}:\n{text}")
    print(match[1], match[2], match[4])


def llama_bench_ts(json_file: str) -> None:
    pp = tg = None
    for test in json.load(open(json_file)):
        if test["n_prompt"] > 0 and test["n_gen"] == 0:
            pp = test["avg_ts"]
        elif test["n_gen"] > 0 and test["n_prompt"] == 0:
            tg = test["avg_ts"]
    if pp is None or tg is None:
        sys.exit(f"{json_file}: expected a prompt test and a generation test")
    print(f"{pp:.3f} {tg:.3f}")


def table(results_tsv: str) -> None:
    """RESULTS_TSV lines: dtype threads engine prefill_ts decode_ts ttft_s load."""
    runs: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    loads: list[float] = []
    for line in open(results_tsv):
        dtype, threads, engine, prefill, decode, ttft, load = line.split()
        runs.setdefault((dtype, threads, engine), []).append((float(prefill), float(decode), float(ttft)))
        loads.append(float(load))

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"

    print("| dtype | threads | prefill tokens/s: rill / llama.cpp | ratio | decode tokens/s: rill / llama.cpp "
          "| ratio | rill time to first token |")
    print("|---|---|---|---|---|---|---|")
    for dtype, threads in dict.fromkeys((d, t) for d, t, _ in runs):
        rill, llama = runs.get((dtype, threads, "rill")), runs.get((dtype, threads, "llama.cpp"))
        if not rill or not llama:
            continue
        columns = [[r[i] for r in rill] for i in range(3)], [[r[i] for r in llama] for i in range(2)]
        (rill_pp, rill_tg, rill_ttft), (llama_pp, llama_tg) = columns
        print(f"| {dtype} | {threads} | {cell(rill_pp)} / {cell(llama_pp)} "
              f"| {statistics.median(rill_pp) / statistics.median(llama_pp):.2f}x "
              f"| {cell(rill_tg)} / {cell(llama_tg)} "
              f"| {statistics.median(rill_tg) / statistics.median(llama_tg):.2f}x "
              f"| {statistics.median(rill_ttft) * 1000:.0f} ms |")
    print(f"\nmedians of {len(rill)} runs each (range in parentheses); "
          f"1-minute load average before the runs: {min(loads):.2f} to {max(loads):.2f}")


def title(shape: str) -> None:
    print(SHAPES[shape]["title"])


# Each command: its function, its operand count and which operand names a shape (None: none does).
COMMANDS = {
    "make": (make, 4, 0),
    "unpermute-qk": (unpermute_qk, 2, None),
    "ids": (ids, 2, 0),
    "title": (title, 1, 0),
    "convert": (convert, 5, 4),
    "wait-idle": (wait_idle, 1, None),
    "rill-stats": (rill_stats, 2, None),
    "llama-bench-ts": (llama_bench_ts, 1, None),
    "table": (table, 1, None),
}


if __name__ == "__main__":
    command, operands = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if command in COMMANDS and len(operands) == COMMANDS[command][1]:
        function, _, shape_at = COMMANDS[command]
        if shape_at is not None and operands[shape_at] not in SHAPES:
            sys.exit(f"{command}: SHAPE: expected one of {', '.join(SHAPES)}, got {operands[shape_at]!r}")
        function(*operands)
    elif command == "compare" and len(operands) in (4, 5) and operands[2] in LIMITS and \
            operands[4:] in ([], ["--expect-miss"]):
        compare(*operands[:4], expect_miss=len(operands) == 5)
    else:
        sys.exit(__doc__)
