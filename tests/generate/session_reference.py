#!/usr/bin/env python3
"""The generation session (rill.h, "Generation sessions") on a random-weight
transformers model, greedy, against transformers' own greedy ids.

Checks, each against generate(do_sample=False) in float64 on the same weights:
  * chunked prefill: with prefill_chunk 3 an 8-token prompt takes three
    one-forward steps before the first token; the tokens match;
  * a bounded step: step(5) returns 5 tokens and RILL_STOP_NONE;
  * stops: max_new_tokens, an end-of-sequence id, the callback's nonzero
    return, the capacity (then appending is an error naming the capacity);
  * rewind, then generating again, gives transformers' continuation;
  * set_ids with a prompt sharing a prefix with the cached tokens runs only
    the new suffix (with prefill_chunk 1, one step per new token), and
    continues as transformers does from the whole sequence;
  * cancel from another thread ends the running step with RILL_STOP_CANCELLED;
  * the same seed samples the same tokens; argument errors are named.

Exit codes: 0 passed, 1 failed, 77 skipped (no transformers in --venv).
"""
import argparse
import ctypes
import os
import sys
import tempfile
import threading

SKIP = 77
try:
    import numpy as np
    import torch
except ImportError as missing:
    print(f"skipped: {missing}")
    sys.exit(SKIP)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "bindings", "python"))
sys.path.insert(0, os.path.join(HERE, os.pardir, "torch"))
from rill import _library  # noqa: E402
from hf_generate import check, expect, hf_greedy, import_transformers  # noqa: E402

PROMPT = [3, 17, 42, 5, 88, 9, 61, 23]
STOP = {"NONE": 0, "EOS": 1, "STRING": 2, "MAX_NEW_TOKENS": 3, "CAPACITY": 4, "CANCELLED": 5, "CALLBACK": 6}


class Session:
    def __init__(self, lib, lm, **options):
        self.lib = lib
        o = _library.SessionOptions()
        lib.rill_session_options_init(ctypes.byref(o), lm)
        for k, v in options.items():
            if k == "sampler":
                for sk, sv in v.items():
                    setattr(o.sampler, sk, sv)
            else:
                setattr(o, k, v)
        o.sampler.temperature = options.get("sampler", {}).get("temperature", 0.0)
        self.handle = ctypes.c_void_p()
        check(lib, lib.rill_session_create(lm, ctypes.byref(o), ctypes.byref(self.handle)))
        self.tokens = []
        self.stop_after = None
        self.on_token_hook = None
        self._fn = _library.TOKEN_FN(self._on_token)

    def _on_token(self, _user, token, _text, _len):
        self.tokens.append(token)
        if self.on_token_hook:
            self.on_token_hook(len(self.tokens))
        return 1 if self.stop_after is not None and len(self.tokens) >= self.stop_after else 0

    def ids_call(self, name, ids):
        a = (ctypes.c_int32 * len(ids))(*ids)
        return getattr(self.lib, name)(self.handle, a, len(ids))

    def step(self, max_forwards):
        generated, reason = ctypes.c_int32(), ctypes.c_int()
        check(self.lib, self.lib.rill_session_step(self.handle, max_forwards, self._fn, None, ctypes.byref(generated),
                                                   ctypes.byref(reason)))
        return generated.value, reason.value

    def run(self, max_forwards=1000):
        """Steps until a stop; returns (tokens of this run, reason)."""
        start = len(self.tokens)
        while True:
            _, reason = self.step(max_forwards)
            if reason != STOP["NONE"]:
                return self.tokens[start:], reason

    def ids(self):
        count = ctypes.c_size_t()
        self.lib.rill_session_get_ids(self.handle, None, 0, ctypes.byref(count))
        out = (ctypes.c_int32 * count.value)()
        check(self.lib, self.lib.rill_session_get_ids(self.handle, out, count.value, ctypes.byref(count)))
        return list(out)

    def __del__(self):
        self.lib.rill_session_destroy(self.handle)


def checks(lib, lm, model, failures):
    ref = hf_greedy(model, PROMPT, 24)

    s = Session(lib, lm, prefill_chunk=3, max_new_tokens=0, capacity=64)
    check(lib, s.ids_call("rill_session_append_ids", PROMPT))
    firsts = [s.step(1) for _ in range(3)]
    expect(failures, "chunked prefill: 3 steps of one forward before the first token",
           [g for g, _ in firsts] == [0, 0, 1], str(firsts))
    generated, reason = s.step(5)
    expect(failures, "step(5) returns 5 tokens, RILL_STOP_NONE", (generated, reason) == (5, 0), str((generated, reason)))
    expect(failures, "greedy tokens equal transformers'", s.tokens == ref[:6], f"{s.tokens} vs {ref[:6]}")

    s = Session(lib, lm, max_new_tokens=4, capacity=64)
    check(lib, s.ids_call("rill_session_append_ids", PROMPT))
    got, reason = s.run()
    expect(failures, "max_new_tokens 4", (got, reason) == (ref[:4], STOP["MAX_NEW_TOKENS"]), str((got, reason)))
    got, reason = s.run()  # a later step goes on, with a fresh budget
    expect(failures, "a step after the budget goes on", (got, reason) == (ref[4:8], STOP["MAX_NEW_TOKENS"]),
           str((got, reason)))

    eos = next(t for i, t in enumerate(ref) if i >= 2 and t not in ref[:i])
    s = Session(lib, lm, capacity=64)
    check(lib, s.ids_call("rill_session_set_eos_ids", [eos]))
    check(lib, s.ids_call("rill_session_append_ids", PROMPT))
    got, reason = s.run()
    expect(failures, "EOS id stops after it", (got, reason) == (ref[:ref.index(eos) + 1], STOP["EOS"]),
           str((got, reason)))

    s = Session(lib, lm, capacity=64)
    check(lib, s.ids_call("rill_session_set_eos_ids", []))
    s.stop_after = 2
    check(lib, s.ids_call("rill_session_append_ids", PROMPT))
    got, reason = s.run()
    expect(failures, "callback's nonzero return", (got, reason) == (ref[:2], STOP["CALLBACK"]), str((got, reason)))

    s = Session(lib, lm, capacity=12)
    check(lib, s.ids_call("rill_session_set_eos_ids", []))
    check(lib, s.ids_call("rill_session_append_ids", PROMPT))
    got, reason = s.run()
    expect(failures, "capacity 12 stops after 4 tokens", (got, reason) == (ref[:4], STOP["CAPACITY"]),
           str((got, reason)))
    status = s.ids_call("rill_session_append_ids", [1])
    message = lib.rill_last_error().decode()
    expect(failures, "appending past the capacity names it", status == 1 and "capacity of 12" in message, message)

    # Rewind, then generate again.
    s = Session(lib, lm, capacity=64)
    check(lib, s.ids_call("rill_session_set_eos_ids", []))
    check(lib, s.ids_call("rill_session_append_ids", PROMPT))
    s.step(10)
    check(lib, lib.rill_session_rewind(s.handle, len(PROMPT) + 3))
    expect(failures, "rewind keeps the first tokens", s.ids() == PROMPT + ref[:3], str(s.ids()))
    s.tokens = []
    s.step(5)
    expect(failures, "generation after rewind continues as transformers", s.tokens == ref[3:8],
           f"{s.tokens} vs {ref[3:8]}")

    # A second turn: the whole conversation again, with a new suffix.
    s = Session(lib, lm, capacity=64, prefill_chunk=1)
    check(lib, s.ids_call("rill_session_set_eos_ids", []))
    check(lib, s.ids_call("rill_session_append_ids", PROMPT))
    s.run_steps = 0
    while not s.tokens:
        s.step(1)
    s.step(4)  # five generated, the last one not yet run through the model
    turn = PROMPT + ref[:5] + [7, 8, 9]
    check(lib, s.ids_call("rill_session_set_ids", turn))
    s.tokens = []
    steps = 0
    while not s.tokens:
        s.step(1)
        steps += 1
    expect(failures, "set_ids runs only the new suffix (4 tokens: 1 generated, 3 new)", steps == 4, f"{steps} steps")
    s.step(4)
    cont = hf_greedy(model, turn, 5)
    expect(failures, "the second turn continues as transformers", s.tokens == cont, f"{s.tokens} vs {cont}")

    # Cancel from another thread, while a step runs.
    s = Session(lib, lm, capacity=64)
    check(lib, s.ids_call("rill_session_set_eos_ids", []))
    check(lib, s.ids_call("rill_session_append_ids", PROMPT))

    def cancel_at(n):
        if n == 3:
            t = threading.Thread(target=lib.rill_session_cancel, args=(s.handle,))
            t.start()
            t.join()
    s.on_token_hook = cancel_at
    generated, reason = s.step(1000)
    expect(failures, "cancel from another thread", (generated, reason) == (3, STOP["CANCELLED"]),
           str((generated, reason)))

    # Sampling: the same seed, the same tokens.
    runs = []
    for _ in range(2):
        s = Session(lib, lm, capacity=64, max_new_tokens=16, sampler={"temperature": 1.0, "seed": 5})
        check(lib, s.ids_call("rill_session_set_eos_ids", []))
        check(lib, s.ids_call("rill_session_append_ids", PROMPT))
        runs.append(s.run()[0])
    expect(failures, "the same seed samples the same tokens", runs[0] == runs[1], str(runs))
    expect(failures, "sampling differs from greedy", runs[0] != ref[:16], str(runs[0]))

    # Argument errors.
    s = Session(lib, lm, capacity=64)
    generated, reason = ctypes.c_int32(), ctypes.c_int()
    status = lib.rill_session_step(s.handle, 1, s._fn, None, ctypes.byref(generated), ctypes.byref(reason))
    message = lib.rill_last_error().decode()
    expect(failures, "step on an empty conversation", status == 1 and "empty conversation" in message, message)
    status = s.ids_call("rill_session_append_ids", [1, 96])
    message = lib.rill_last_error().decode()
    expect(failures, "an id outside the vocabulary", status == 1 and "[0, 95], got 96 at 1" in message, message)
    status = lib.rill_session_rewind(s.handle, 1)
    message = lib.rill_last_error().decode()
    expect(failures, "rewind past the length", status == 1 and "length: expected 0 to 0" in message, message)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="librill")
    parser.add_argument("--venv", required=True, help="the reference venv holding transformers")
    args = parser.parse_args()
    transformers = import_transformers(args.venv)
    if transformers is None:
        return SKIP
    import lm_reference
    lib = _library.load_library(args.library)
    config = transformers.LlamaConfig(**lm_reference.SIZES)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    lm_reference.randomize(model, torch.Generator().manual_seed(11))
    model = model.to(torch.float64)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        model.to(torch.float32).save_pretrained(folder)
        model = model.to(torch.float64)
        ctx, lm = ctypes.c_void_p(), ctypes.c_void_p()
        check(lib, lib.rill_context_create(b'[runtime]\nbackend = "cpu"\n', ctypes.byref(ctx)))
        check(lib, lib.rill_lm_load(ctx, folder.encode(), None, ctypes.byref(lm)))
        try:
            checks(lib, lm, model, failures)
        finally:
            import gc
            gc.collect()
            lib.rill_lm_destroy(lm)
            lib.rill_context_destroy(ctx)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
