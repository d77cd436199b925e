"""rill's sampler (rill.h, "Sampling") against independent references.

  * The distribution (rill_sampler_probabilities) against transformers' own
    logits processors, applied in generate()'s order: RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper,
    then softmax; presence and frequency penalties (not in transformers) by
    OpenAI's definition in numpy, between the repetition penalty and the
    temperature. Random logits, logits with ties, and edge values (top_k above
    the vocabulary, top_p = 1, min_p = 0, temperature 0).
  * The draws (rill_sampler_sample) against the distribution: a chi-square
    goodness-of-fit test at significance 1e-3 with a fixed seed. For a correct
    sampler a seed fails with probability 1e-3; the seeds here are fixed, so the
    test is deterministic and passes or fails every time.
  * Greedy draws (temperature 0) are the first largest logit, computed here
    with numpy, on rows with ties and -inf, with and without penalties.
  * The same seed draws the same tokens; another seed draws others.
  * Argument errors name the argument.

Exit codes: 0 passed, 1 failed, 77 skipped (no transformers in --venv).
"""
import argparse
import ctypes
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import tolerance  # noqa: E402


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
from rill import _library  # noqa: E402


def as_p(array, ctype):
    return array.ctypes.data_as(ctypes.POINTER(ctype)) if array.size else None


class Rill:
    """The sampler's C calls, as the Python binding declares them."""

    def __init__(self, path):
        self.lib = _library.load_library(path)

    def params(self, **fields):
        p = _library.SamplerParams()
        for name, value in fields.items():
            setattr(p, name, value)
        return p

    def error(self):
        return self.lib.rill_last_error().decode()

    def probabilities(self, params, logits, history, count=None):
        logits = np.ascontiguousarray(logits, dtype=np.float32)
        history = np.ascontiguousarray(history, dtype=np.int32)
        out = np.zeros(logits.size, dtype=np.float32)
        status = self.lib.rill_sampler_probabilities(
            ctypes.byref(params), as_p(logits, ctypes.c_float), logits.size, as_p(history, ctypes.c_int32),
            history.size, as_p(out, ctypes.c_float), logits.size if count is None else count)
        return status, out

    def draws(self, params, logits, history, n):
        sampler = ctypes.c_void_p()
        assert self.lib.rill_sampler_create(ctypes.byref(params), ctypes.byref(sampler)) == 0, self.error()
        logits = np.ascontiguousarray(logits, dtype=np.float32)
        history = np.ascontiguousarray(history, dtype=np.int32)
        token = ctypes.c_int32()
        out = np.empty(n, dtype=np.int64)
        try:
            for i in range(n):
                status = self.lib.rill_sampler_sample(sampler, as_p(logits, ctypes.c_float), logits.size,
                                                      as_p(history, ctypes.c_int32), history.size, ctypes.byref(token))
                assert status == 0, self.error()
                out[i] = token.value
        finally:
            self.lib.rill_sampler_destroy(sampler)
        return out


def reference(transformers, torch, logits, history, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
              repetition_penalty=1.0, presence_penalty=0.0, frequency_penalty=0.0):
    """transformers' processors in generate()'s order, float64."""
    g = transformers.generation.logits_process
    ids = torch.tensor(np.asarray(history, dtype=np.int64)[None, :])
    scores = torch.tensor(np.asarray(logits, dtype=np.float64)[None, :])
    if repetition_penalty != 1.0 and ids.numel():
        scores = g.RepetitionPenaltyLogitsProcessor(repetition_penalty)(ids, scores)
    if ids.numel():  # OpenAI: mu[j] - c[j] * frequency - (c[j] > 0) * presence
        counts = np.bincount(np.asarray(history), minlength=logits.size).astype(np.float64)
        scores = scores - torch.tensor(counts * frequency_penalty + (counts > 0) * presence_penalty)[None, :]
    if temperature == 0.0:
        out = np.zeros(logits.size)
        out[int(torch.argmax(scores[0]))] = 1.0
        return out
    scores = g.TemperatureLogitsWarper(temperature)(ids, scores)
    if top_k > 0:
        scores = g.TopKLogitsWarper(top_k)(ids, scores)
    if top_p < 1.0:
        scores = g.TopPLogitsWarper(top_p)(ids, scores)
    if min_p > 0.0:
        scores = g.MinPLogitsWarper(min_p)(ids, scores)
    return torch.softmax(scores, dim=-1)[0].numpy()


def cases(rng):
    """(name, logits, history, settings) for the distribution checks."""
    out = []
    settings = [
        {},
        {"temperature": 0.7},
        {"temperature": 1.3, "top_k": 5},
        {"top_p": 0.9},
        {"top_p": 0.5, "temperature": 0.8},
        {"min_p": 0.05},
        {"min_p": 0.3, "temperature": 1.5},
        {"repetition_penalty": 1.3},
        {"repetition_penalty": 0.8, "top_k": 10},
        {"presence_penalty": 0.5, "frequency_penalty": 0.25},
        {"repetition_penalty": 1.2, "presence_penalty": -0.3, "frequency_penalty": 0.4, "temperature": 0.9,
         "top_k": 20, "top_p": 0.95, "min_p": 0.02},
        {"temperature": 0.0},
        {"temperature": 0.0, "repetition_penalty": 1.5},
        # Edge values: every filter at its "off" end, and top_k at and above the vocabulary.
        {"top_k": 0, "top_p": 1.0, "min_p": 0.0},
        {"top_k": 64},
        {"top_k": 1000},
        {"top_k": 1},
        {"top_p": 1e-6},
        {"min_p": 1.0},
    ]
    for i, s in enumerate(settings):
        vocab = 64
        logits = rng.normal(0.0, 3.0, vocab)
        history = rng.integers(0, vocab, 12)
        out.append(("random %d %s" % (i, s), logits, history, s))
        # Ties: few distinct values, so top-k and top-p boundaries fall inside runs of equal logits.
        ties = rng.integers(-3, 4, vocab).astype(np.float64)
        out.append(("ties %d %s" % (i, s), ties, history, s))
    # A running sum exactly at 1 - top_p: four equal logits, top_p 0.75 keeps three.
    out.append(("exact top_p boundary", np.zeros(4), np.zeros(0, dtype=np.int64), {"top_p": 0.75}))
    # Ruled-out tokens (-inf) and a large logit spread.
    logits = rng.normal(0.0, 30.0, 32)
    logits[::3] = -np.inf
    out.append(("-inf and spread", logits, rng.integers(0, 32, 5), {"top_p": 0.8, "repetition_penalty": 1.1}))
    return out


def tie_difference(logits, kept_rill, kept_ref):
    """"" when the kept sets differ only in which of equal logits they keep, and rill keeps the lowest ids."""
    if not np.array_equal(np.sort(logits[kept_rill]), np.sort(logits[kept_ref])):
        return "kept tokens differ: rill %s, transformers %s" % (
            np.flatnonzero(kept_rill).tolist(), np.flatnonzero(kept_ref).tolist())
    for value in np.unique(logits[kept_rill ^ kept_ref]):
        tied = np.flatnonzero(logits == value)
        kept = np.flatnonzero(kept_rill & (logits == value))
        if not np.array_equal(kept, tied[:kept.size]):
            return "of the tokens tied at %g %s rill kept %s, not the lowest ids" % (value, tied.tolist(), kept.tolist())
    return ""


def check_distributions(rill, transformers, torch, rng, failures):
    worst = {}
    for name, logits, history, s in cases(rng):
        logits32 = np.asarray(logits, dtype=np.float32)
        status, got = rill.probabilities(rill.params(**s), logits32, history)
        if status != 0:
            failures.append("%s: status %d: %s" % (name, status, rill.error()))
            continue
        expected = reference(transformers, torch, logits32, history, **s)
        kept_rill, kept_ref = got > 0, expected > 0
        if not np.array_equal(kept_rill, kept_ref) and s.get("top_p", 1.0) < 1.0:
            # Which of equal logits top-p keeps, transformers leaves to torch's
            # unstable sort; rill keeps the lowest ids. Both keep the same values.
            problem = tie_difference(logits32, kept_rill, kept_ref)
            if problem:
                failures.append("%s: %s" % (name, problem))
                continue
            got, expected = np.sort(got), np.sort(expected)
        elif not np.array_equal(kept_rill, kept_ref):
            failures.append("%s: kept tokens differ: rill %s, transformers %s" % (
                name, np.flatnonzero(kept_rill).tolist(), np.flatnonzero(kept_ref).tolist()))
            continue
        c = tolerance.compare(got, expected, "f32", "sampler")
        key = name.split()[0]
        worst[key] = max(worst.get(key, (0, 0)), (c.nmse, c.worst))
        if not c.ok:
            failures.append("%s: %s" % (name, c))
    for key, (nmse, w) in sorted(worst.items()):
        print("distribution, %s cases: worst NMSE %.2e, worst element %.2e" % (key, nmse, w))


def chi_square_limit(df, z=3.0902):
    """The chi-square quantile at 1 - 1e-3 (z: the normal's), by Wilson and Hilferty."""
    return df * (1.0 - 2.0 / (9.0 * df) + z * np.sqrt(2.0 / (9.0 * df))) ** 3


def check_draws(rill, rng, failures):
    vocab, n = 24, 200000
    logits = rng.normal(0.0, 1.0, vocab).astype(np.float32)
    history = rng.integers(0, vocab, 6)
    for s in ({"seed": 7}, {"seed": 11, "temperature": 0.8, "top_k": 12, "repetition_penalty": 1.2},
              {"seed": 13, "top_p": 0.9, "min_p": 0.05}):
        params = rill.params(**s)
        _, probs = rill.probabilities(params, logits, history)
        draws = rill.draws(params, logits, history, n)
        counts = np.bincount(draws, minlength=vocab)
        if (counts[probs == 0] > 0).any():
            failures.append("draws %s: drew tokens of probability 0: %s" % (s, np.flatnonzero(counts * (probs == 0))))
            continue
        expected = probs.astype(np.float64) * n
        kept = expected > 0
        statistic = float((((counts - expected) ** 2)[kept] / expected[kept]).sum())
        limit = chi_square_limit(int(kept.sum()) - 1)
        print("draws %s: chi-square %.1f, limit %.1f (%d tokens, %d draws)" % (s, statistic, limit, kept.sum(), n))
        if statistic > limit:
            failures.append("draws %s: chi-square %.1f above %.1f" % (s, statistic, limit))


def check_greedy(rill, rng, failures):
    """rill_sampler_sample at temperature 0 against numpy's argmax (the first
    largest), penalties applied by their definitions (see the docstring)."""
    vocab = 1003  # not a multiple of 8: the last values are compared one by one
    logits = rng.normal(0.0, 1.0, vocab).astype(np.float32)
    logits[rng.integers(0, vocab, 50)] = -np.inf
    top = logits.max() + 1.0
    logits[[17, 400, 901]] = top  # three tokens tie for the largest
    history = np.array([17, 17, 400], dtype=np.int32)
    penalized = logits.astype(np.float64)
    penalized[17] = penalized[17] / 1.3 - 2 * 0.5 - 0.25
    penalized[400] = penalized[400] / 1.3 - 1 * 0.5 - 0.25
    for fields, row, expected in [
        ({}, logits, int(np.argmax(logits))),
        ({"repetition_penalty": 1.3, "frequency_penalty": 0.5, "presence_penalty": 0.25}, logits,
         int(np.argmax(penalized))),
        ({}, -np.abs(logits), int(np.argmax(-np.abs(logits)))),
        ({}, np.where(np.arange(vocab) == 1001, top + 1.0, logits).astype(np.float32), 1001),
    ]:
        got = rill.draws(rill.params(temperature=0.0, **fields), row, history, 3)
        print("greedy %s: drew %s, numpy's first largest %d" % (fields, got.tolist(), expected))
        if (got != expected).any():
            failures.append("greedy %s: drew %s, expected %d" % (fields, got.tolist(), expected))


def check_seeds(rill, rng, failures):
    logits = rng.normal(0.0, 1.0, 100).astype(np.float32)
    a = rill.draws(rill.params(seed=42), logits, [], 64)
    b = rill.draws(rill.params(seed=42), logits, [], 64)
    c = rill.draws(rill.params(seed=43), logits, [], 64)
    if not np.array_equal(a, b):
        failures.append("seed 42 twice drew different tokens")
    if np.array_equal(a, c):
        failures.append("seeds 42 and 43 drew the same 64 tokens")


def check_errors(rill, failures):
    logits = np.zeros(8, dtype=np.float32)
    for what, params, row, history, count in [
        ("params.top_p", rill.params(top_p=0.0), logits, [], None),
        ("params.temperature", rill.params(temperature=-1.0), logits, [], None),
        ("params.min_p", rill.params(min_p=1.5), logits, [], None),
        ("params.repetition_penalty", rill.params(repetition_penalty=0.0), logits, [], None),
        ("params.struct_size", rill.params(struct_size=0), logits, [], None),
        ("logits: expected finite values or -inf, got nan at 1", rill.params(),
         np.array([0, np.nan, 0], dtype=np.float32), [], None),
        ("logits: expected finite values or -inf, got inf at 2", rill.params(),
         np.array([0, -np.inf, np.inf, np.nan], dtype=np.float32), [], None),
        ("logits", rill.params(), np.full(4, -np.inf, dtype=np.float32), [], None),
        ("history", rill.params(), logits, [8], None),
        ("probability_count", rill.params(), logits, [], 7),
    ]:
        status, _ = rill.probabilities(params, row, history, count)
        if status != 1 or what not in rill.error():
            failures.append("expected INVALID_ARGUMENT naming %s, got status %d: %s" % (what, status, rill.error()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="librill")
    parser.add_argument("--venv", required=True, help="the reference venv holding transformers")
    args = parser.parse_args()
    sys.path += glob.glob(os.path.join(args.venv, "lib", "python*", "site-packages"))
    try:
        import torch
        import transformers
        import transformers.generation.logits_process  # noqa: F401
    except ImportError as e:
        print("skipped: no transformers (%s)" % e)
        return 77
    rill = Rill(args.library)
    rng = np.random.default_rng(2024)
    failures = []
    check_distributions(rill, transformers, torch, rng, failures)
    check_draws(rill, rng, failures)
    check_greedy(rill, rng, failures)
    check_seeds(rill, rng, failures)
    check_errors(rill, failures)
    for f in failures:
        print("FAIL", f)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
