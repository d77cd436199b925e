#!/usr/bin/env python3
"""Helpers for scripts/bench-llamacpp.sh: the model files, waiting for an idle machine, the table.

  make FOLDER_PREFIX TOKENIZER_FOLDER
      writes a random-weight Qwen2-0.5B-shaped Hugging Face folder in f32, f16 and bf16
      (FOLDER_PREFIX-f32, -f16, -bf16) with transformers, with the tokenizer files of
      TOKENIZER_FOLDER.
  convert LLAMA_CPP_DIR FOLDER OUT_GGUF OUTTYPE
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

make and convert run in a venv with transformers 4.47.1, tokenizers 0.21.4 and llama.cpp's
converter requirements; the others need only Python's standard library.
"""
import json
import os
import re
import shutil
import statistics
import time
import sys
from pathlib import Path

# Qwen2-0.5B's shape, its full vocabulary included: the tokenizer is smaller, and the
# converter pads the GGUF vocabulary to vocab_size, so rill and llama.cpp run the same
# embedding and (tied) LM head.
SHAPE = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
             num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
             rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def make(prefix: str, tokenizer_folder: str) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(**SHAPE, bos_token_id=0, eos_token_id=1, torch_dtype="float32")
    model = Qwen2ForCausalLM(config).eval()
    for name, dtype in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)):
        folder = Path(f"{prefix}-{name}")
        model.to(dtype).save_pretrained(folder)
        for file in TOKENIZER_FILES:
            shutil.copy(Path(tokenizer_folder) / file, folder / file)
        print(f"wrote {folder}")


def convert(llama_cpp_dir: str, folder: str, out: str, outtype: str) -> None:
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
    # has to load: label it as Qwen2's.
    converter.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"
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


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 6 and sys.argv[1] == "convert":
        convert(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "wait-idle":
        wait_idle(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "rill-stats":
        rill_stats(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "llama-bench-ts":
        llama_bench_ts(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
