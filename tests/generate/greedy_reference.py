#!/usr/bin/env python3
"""Greedy `rill generate` against transformers' generate(do_sample=False).

Each case builds a random-weight model from a transformers config class (the
sizes and the randomization of tests/torch/lm_reference.py), asks
transformers for 32 greedy tokens after a fixed prompt (in float64, with its
end-of-sequence stopping turned off), then saves the model with save_pretrained
with an end-of-sequence id that those 32 tokens never use, so that rill also
runs all 32, and requires

    rill generate --model DIR --ids "..." --print-ids --temperature 0 --max-new-tokens 32

to print the same ids. The smallest gap between the two largest logits along
transformers' path is printed beside each case: the margin a rounding
difference would need to flip a token.

Negative control: the ids of the same model with its final norm dropped must
differ from rill's, or the case fails (the comparison could not tell).

Exit codes: 0 passed, 1 failed, 77 skipped (no transformers in --venv, or the
backend unavailable).
"""
import argparse
import os
import subprocess
import sys
import tempfile

SKIP = 77
NEW_TOKENS = 32
PROMPT = [3, 17, 42, 5, 88, 9, 61, 23]

try:
    import numpy as np  # noqa: F401
    import torch
except ImportError as missing:
    print(f"skipped: {missing}")
    sys.exit(SKIP)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "torch"))
from hf_generate import import_transformers  # noqa: E402

# name: (config class, config keys beyond lm_reference's SIZES)
CASES = {
    "llama": ("LlamaConfig", dict(rope_theta=500000.0)),
    "llama_tied": ("LlamaConfig", dict(tie_word_embeddings=True)),
    "qwen2": ("Qwen2Config", dict()),
    "mistral_window": ("MistralConfig", dict(sliding_window=4)),
}


def greedy(model, ids, drop_final_norm=False):
    """transformers' greedy ids (float64) and the smallest top-2 logit gap along them."""
    import copy
    m = copy.deepcopy(model).to(torch.float64)
    if drop_final_norm:
        m.model.norm = torch.nn.Identity()
    m.generation_config.eos_token_id = None
    m.generation_config.pad_token_id = 0
    with torch.no_grad():
        ids = torch.tensor([ids])  # attention_mask given: generate() would mask every pad_token_id in ids
        out = m.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=NEW_TOKENS,
                         min_new_tokens=NEW_TOKENS, output_scores=True, return_dict_in_generate=True)
    new = out.sequences[0, ids.shape[1]:].tolist()
    gaps = [float(torch.topk(s[0], 2).values[0] - torch.topk(s[0], 2).values[1]) for s in out.scores]
    return new, min(gaps)


def run_case(rill, backend, name, workdir, transformers, lm_reference):
    cls, keys = CASES[name]
    config = getattr(transformers, cls)(**lm_reference.SIZES, **keys)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).to(torch.float32)
    lm_reference.randomize(model, torch.Generator().manual_seed(sum(map(ord, name))))
    expected, gap = greedy(model, PROMPT)
    control, _ = greedy(model, PROMPT, drop_final_norm=True)
    unused = next(i for i in range(config.vocab_size - 1, -1, -1) if i not in expected)
    model.config.eos_token_id = unused
    model.generation_config.eos_token_id = unused
    folder = os.path.join(workdir, name)
    model.save_pretrained(folder)
    args = [rill, "generate", "--model", folder, "--ids", " ".join(map(str, PROMPT)), "--print-ids",
            "--temperature", "0", "--max-new-tokens", str(NEW_TOKENS), "--backend", backend]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        if "RILL_ERROR_BACKEND_UNAVAILABLE" in proc.stderr:
            raise Skip(proc.stderr.strip())
        return [f"{name}: rill generate exited {proc.returncode}: {proc.stderr.strip()}"]
    got = [int(t) for t in proc.stdout.split()]
    same = got == expected
    print(f"  {name:16s} {'same' if same else 'DIFFERENT'} {len(got)} ids, smallest top-2 gap {gap:.2e}, "
          f"control {'differs' if control != got else 'SAME'}")
    failures = []
    if not same:
        failures.append(f"{name}: rill {got}\n    transformers {expected}")
    if control == got:
        failures.append(f"{name}: the control (final norm dropped) gave rill's ids too: the check cannot fail")
    return failures


class Skip(Exception):
    pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rill", required=True, help="the rill tool")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--venv", required=True, help="the reference venv holding transformers")
    args = parser.parse_args()
    transformers = import_transformers(args.venv)
    if transformers is None:
        return SKIP
    import lm_reference
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        try:
            for name in CASES:
                failures += run_case(args.rill, args.backend, name, workdir, transformers, lm_reference)
        except Skip as why:
            print(f"skipped: {why}")
            return SKIP
    for f in failures:
        print("FAIL", f)
    print(f"{len(CASES)} cases, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
