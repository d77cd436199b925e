#!/usr/bin/env python3
"""`rill generate` on the shipped demo model (models/fortune), greedy, against
transformers' LlamaForCausalLM.generate(do_sample=False) on the same folder:
the newly generated ids must be equal, token for token, which checks rill's
tokenizer, model loading, logits and greedy sampler end to end. Both run in
f32 (the f16 checkpoint widened exactly). Exit codes: 0 passed, 1 failed, 77 skipped
(torch or transformers missing, or the backend unavailable)."""
import argparse
import subprocess
import sys

from reference_imports import require, use_venv

PROMPTS = ("A fool and his money", "The best way to", "Never")
MAX_NEW_TOKENS = 32


def transformers_greedy(model_dir):
    """A function of a prompt giving transformers' new ids (the EOS included
    when it comes, as generate() returns it) and the smallest gap between the
    best and the second-best logit along the way: how close a tie came (a gap
    near f32 rounding would make an honest mismatch possible)."""
    import torch
    import transformers.generation.utils
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast
    # generate() imports torch.distributed.fsdp to ask whether the model is
    # FSDP-managed; that import fails with Debian's torch 1.13 on Python 3.11,
    # and nothing here is distributed.
    transformers.generation.utils.is_fsdp_managed_module = lambda module: False
    tok = PreTrainedTokenizerFast.from_pretrained(model_dir)
    model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()

    def greedy(prompt):
        enc = tok(prompt, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(enc.input_ids, attention_mask=enc.attention_mask, do_sample=False,
                                 max_new_tokens=MAX_NEW_TOKENS, pad_token_id=tok.eos_token_id,
                                 output_scores=True, return_dict_in_generate=True)
        top2 = [s[0].topk(2).values for s in out.scores]
        return out.sequences[0, enc.input_ids.shape[1]:].tolist(), min(float(t[0] - t[1]) for t in top2)
    return greedy


def rill_greedy(rill, model_dir, prompt, backend):
    cmd = [rill, "generate", "--model", model_dir, "--prompt", prompt, "--max-new-tokens", str(MAX_NEW_TOKENS),
           "--temperature", "0", "--backend", backend, "--dtype", "f32", "--print-ids"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return run, cmd


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rill", required=True)
    p.add_argument("--model", required=True, help="the demo model folder")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--venv", help="a venv made with --system-site-packages holding transformers")
    args = p.parse_args()
    use_venv(args.venv)
    require("torch", "transformers")

    reference = transformers_greedy(args.model)
    failures = 0
    for prompt in PROMPTS:
        want, gap = reference(prompt)
        run, cmd = rill_greedy(args.rill, args.model, prompt, args.backend)
        if run.returncode != 0:
            if "RILL_ERROR_BACKEND_UNAVAILABLE" in run.stdout + run.stderr:
                print(f"skipped: backend {args.backend}: {run.stderr.strip()}")
                return 77
            print(f"FAIL {prompt!r}: {' '.join(cmd)} exited {run.returncode}: {run.stderr.strip()}")
            failures += 1
            continue
        got = [int(t) for t in run.stdout.split()]
        ok = got == want
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {prompt!r}: {len(want)} ids, smallest top-2 logit gap {gap:.3g}")
        if not ok:
            print(f"  transformers {want}\n  rill         {got}")
    print(f"{len(PROMPTS) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
