#!/usr/bin/env python3
"""A session's text (rill_session_set_tokenizer and what it enables) and
`rill generate --prompt`, on a random-weight transformers model with a
byte-level BPE tokenizer trained by PyPI tokenizers inside the test.

Checks, against transformers' greedy ids decoded by PyPI tokenizers:
  * `rill generate --prompt TEXT --temperature 0` prints the decoded text of
    transformers' greedy ids for the tokenizer's encoding of TEXT;
  * the streamed pieces are whole UTF-8 (the corpus has many multi-byte
    characters, split over tokens) and join to that text;
  * a stop string taken from the middle of that text ends the step with
    RILL_STOP_STRING, and the pieces join to exactly the text before it (none
    of the stop string ever came out);
  * a stop string that begins like the text but never completes holds that
    text back only until it cannot match, or until the token budget ends the
    generation: the pieces join to the whole text.

Exit codes: 0 passed, 1 failed, 77 skipped (no transformers or tokenizers in --venv).
"""
import argparse
import copy
import ctypes
import os
import subprocess
import sys
import tempfile

SKIP = 77
try:
    import torch
except ImportError as missing:
    print(f"skipped: {missing}")
    sys.exit(SKIP)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "bindings", "python"))
sys.path.insert(0, os.path.join(HERE, os.pardir, "torch"))
from rill import _library  # noqa: E402
from hf_generate import check, expect, hf_greedy, import_references  # noqa: E402

NEW_TOKENS = 40
CORPUS = [
    "Le cœur a ses raisons que la raison ne connaît point.",
    "Ünïcödé wörds — ñandú, straße, façade, naïve café.",
    "東京は日本の首都です。猫が好きです。",
    "Привет, как дела? Всё хорошо, спасибо.",
    "🙂 emoji 🚀 rockets 🌍 worlds 🎉 parties",
    "The quick brown fox jumps over the lazy dog 12345 times.",
    "Ελληνικά γράμματα: αβγδε, and Hindi: नमस्ते दुनिया",
] * 20
PROMPT = "Le cœur a ses 🙂 東京"


def train_tokenizer(folder, tokenizers):
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=400, special_tokens=["<s>", "</s>"],
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = tokenizers.processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tok.save(os.path.join(folder, "tokenizer.json"))
    return tok


def session_pieces(lib, lm, tokenizer, prompt, stops=(), max_new=NEW_TOKENS):
    """(pieces, reason) of one greedy generation through the session."""
    o = _library.SessionOptions()
    lib.rill_session_options_init(ctypes.byref(o), lm)
    o.sampler.temperature = 0.0
    o.max_new_tokens = max_new
    o.capacity = 128
    s = ctypes.c_void_p()
    check(lib, lib.rill_session_create(lm, ctypes.byref(o), ctypes.byref(s)))
    pieces = []

    def on_token(_user, _token, text, length):
        pieces.append(ctypes.string_at(text, length))
        return 0
    fn = _library.TOKEN_FN(on_token)
    try:
        check(lib, lib.rill_session_set_tokenizer(s, tokenizer))
        check(lib, lib.rill_session_set_eos_ids(s, None, 0))
        for stop in stops:
            b = stop.encode()
            check(lib, lib.rill_session_add_stop_string(s, b, len(b)))
        b = prompt.encode()
        check(lib, lib.rill_session_append_text(s, b, len(b), 1))
        reason = ctypes.c_int()
        while True:
            check(lib, lib.rill_session_step(s, 3, fn, None, None, ctypes.byref(reason)))
            if reason.value != 0:
                return pieces, reason.value
    finally:
        lib.rill_session_destroy(s)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rill", required=True, help="the rill tool")
    parser.add_argument("--library", required=True, help="librill")
    parser.add_argument("--venv", required=True, help="the reference venv holding transformers and tokenizers")
    args = parser.parse_args()
    found = import_references(args.venv, "tokenizers")
    if found is None:
        return SKIP
    transformers, tokenizers = found
    import lm_reference
    lib = _library.load_library(args.library)
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        tok = train_tokenizer(folder, tokenizers)
        sizes = dict(lm_reference.SIZES, vocab_size=tok.get_vocab_size(), max_position_embeddings=128,
                     bos_token_id=0, eos_token_id=1)
        config = transformers.LlamaConfig(**sizes)
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config)
        lm_reference.randomize(model, torch.Generator().manual_seed(5))
        reference = copy.deepcopy(model).to(torch.float64)
        reference.generation_config.eos_token_id = None
        reference.generation_config.pad_token_id = 0
        prompt_ids = tok.encode(PROMPT).ids
        new = hf_greedy(reference, prompt_ids, NEW_TOKENS)
        text = tok.decode(new, skip_special_tokens=True)
        print(f"  reference: {len(prompt_ids)} prompt ids, {NEW_TOKENS} new, text {text!r}")
        # An end-of-sequence id those tokens never use, so that rill also runs all of them.
        model.config.eos_token_id = model.generation_config.eos_token_id = next(
            i for i in range(2, config.vocab_size) if i not in new)
        model.save_pretrained(folder)

        proc = subprocess.run([args.rill, "generate", "--model", folder, "--prompt", PROMPT, "--temperature", "0",
                               "--max-new-tokens", str(NEW_TOKENS), "--backend", "cpu"], capture_output=True)
        got = proc.stdout.decode("utf-8", "replace")
        expect(failures, "rill generate --prompt prints transformers' greedy text",
               proc.returncode == 0 and got == text + "\n", f"exit {proc.returncode}: {got!r} "
               f"{proc.stderr.decode()!r} vs {text!r}")

        ctx, lm, tokenizer = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        check(lib, lib.rill_context_create(b'[runtime]\nbackend = "cpu"\n', ctypes.byref(ctx)))
        check(lib, lib.rill_lm_load(ctx, folder.encode(), None, ctypes.byref(lm)))
        check(lib, lib.rill_tokenizer_load(folder.encode(), ctypes.byref(tokenizer)))
        try:
            pieces, reason = session_pieces(lib, lm, tokenizer, PROMPT)
            whole = True
            for p in pieces:
                try:
                    p.decode("utf-8", "strict")
                except UnicodeDecodeError:
                    whole = False
            expect(failures, "every streamed piece is whole UTF-8", whole, str(pieces))
            joined = b"".join(pieces).decode("utf-8", "replace")
            expect(failures, "the pieces join to the decoded text", joined == text and reason == 3,
                   f"{joined!r} vs {text!r} (reason {reason})")

            # A stop string of three characters from the middle, none of them U+FFFD.
            start = next(i for i in range(len(text) // 2, len(text) - 3) if "\ufffd" not in text[i:i + 3])
            stop = text[start:start + 3]
            pieces, reason = session_pieces(lib, lm, tokenizer, PROMPT, stops=[stop])
            joined = b"".join(pieces).decode("utf-8", "replace")
            expect(failures, f"stop string {stop!r}: the text before it, RILL_STOP_STRING",
                   joined == text[:text.index(stop)] and reason == 2, f"{joined!r} (reason {reason})")

            never = stop[:2] + "\u2603never"
            pieces, reason = session_pieces(lib, lm, tokenizer, PROMPT, stops=[never])
            joined = b"".join(pieces).decode("utf-8", "replace")
            held = sum(1 for p in pieces if p == b"")
            expect(failures, f"a stop string that never completes ({never!r}) holds text back, then lets it out",
                   joined == text and reason == 3 and held > 0, f"{joined!r} (reason {reason}, {held} empty pieces)")

            tail = text[-2:] + "\u2603never"  # the text ends in its beginning: held until the budget ends it
            pieces, reason = session_pieces(lib, lm, tokenizer, PROMPT, stops=[tail])
            joined = b"".join(pieces).decode("utf-8", "replace")
            expect(failures, "text held back at the end comes out when the budget ends the generation",
                   joined == text and reason == 3, f"{joined!r} (reason {reason})")
        finally:
            lib.rill_tokenizer_destroy(tokenizer)
            lib.rill_lm_destroy(lm)
            lib.rill_context_destroy(ctx)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
