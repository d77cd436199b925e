#!/usr/bin/env python3
"""Checks the tokenizer rill reads from a GGUF file's metadata against PyPI
tokenizers on the same vocabulary.

The byte-level BPE tokenizers of tests/tokenizer/tokenizer_reference.py
(GPT-2, Llama 3 and Qwen2 pre-tokenizers, trained there) are written as GGUF
tokenizer metadata with PyPI's gguf, as llama.cpp's convert_hf_to_gguf.py
writes them (tokens by id, token types with the special tokens as CONTROL
and other added tokens as USER_DEFINED,
merges as "left right", tokenizer.ggml.pre gpt-2 / llama-bpe / qwen2,
add_bos_token where the tokenizer adds BOS). rill loads the .gguf file and
must encode (with and without special tokens) and decode every corpus text
exactly as tokenizers does: 0 differences.

Negative control: the Llama 3 vocabulary written with the qwen2 pre-tokenizer
name must differ. Refusals: a SentencePiece vocabulary (tokenizer.ggml.model
"llama") and an unknown pre-tokenizer are refused by name.

  gguf_tokenizer_reference.py --library build/lib/librill.so --bindings bindings/python --venv VENV
Exit codes: 0 passed, 1 failed, 77 skipped (tokenizers or gguf missing).
"""
import argparse
import glob
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "tokenizer"))
sys.path.insert(0, os.path.join(HERE, os.pardir, "torch"))
from outcome import SKIP, conclude  # noqa: E402
from tokenizer_reference import CORPUS, build_tokenizers, scrambled_texts  # noqa: E402

# tokenizer_reference's kinds and the pre-tokenizer name llama.cpp gives each.
KINDS = {"gpt2": "gpt-2", "llama3": "llama-bpe", "qwen2": "qwen2"}


def add_tokenizer(gguf, w, tk, data, pre, model="gpt2", bos_id=True):
    """data's vocabulary as GGUF metadata on writer w; returns the tokenizers reference for it. Added
    tokens that strip spaces or match single words (which GGUF's token types cannot carry) are left out
    of both. bos_id: write the BOS id (else the caller writes it)."""
    data = dict(data, added_tokens=[t for t in data.get("added_tokens", [])
                                    if not (t["lstrip"] or t["rstrip"] or t["single_word"])])
    ref = tk.Tokenizer.from_str(json.dumps(data))
    vocab = ref.get_vocab(with_added_tokens=True)
    tokens = [None] * (max(vocab.values()) + 1)
    for token, i in vocab.items():
        tokens[i] = token
    added = {t["id"]: t["special"] for t in data["added_tokens"]}
    types = [gguf.TokenType.NORMAL if i not in added else
             gguf.TokenType.CONTROL if added[i] else gguf.TokenType.USER_DEFINED for i in range(len(tokens))]
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    w.add_tokenizer_model(model)
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    bos = ref.encode("", add_special_tokens=True).ids
    if bos:  # a tokenizer that adds BOS (Llama 3's template)
        if bos_id:
            w.add_bos_token_id(bos[0])
        w.add_add_bos_token(True)
    return ref


def write_gguf(gguf, path, tk, data, pre, model="gpt2"):
    w = gguf.GGUFWriter(path, "llama")
    ref = add_tokenizer(gguf, w, tk, data, pre, model)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ref


def differences(rill, ref, path, name, quiet=False):
    mine = rill.Tokenizer(path)
    count = 0
    for text in CORPUS + scrambled_texts(150):
        for special in (True, False):
            expected = ref.encode(text, add_special_tokens=special).ids
            got = mine.encode(text, add_special_tokens=special)
            checks = [("encode", expected, got)]
            if got == expected:
                for skip in (False, True):
                    checks.append((f"decode(skip={skip})", ref.decode(expected, skip_special_tokens=skip),
                                   mine.decode(expected, skip_special_tokens=skip)))
            for check, want, have in checks:
                if want != have:
                    count += 1
                    if count == 1 and not quiet:
                        print(f"  {name} {check} (special={special}) first difference on {text!r}\n"
                              f"    tokenizers: {want!r}\n    rill:       {have!r}")
    mine.close()
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="librill.so")
    parser.add_argument("--bindings", required=True, help="bindings/python")
    parser.add_argument("--venv", help="the reference venv (tests/torch/reference_venv.cmake)")
    args = parser.parse_args()
    if args.venv:
        sys.path += glob.glob(os.path.join(args.venv, "lib", "python*", "site-packages"))
    try:
        import gguf
        import tokenizers as tk
    except ImportError as missing:
        print(f"skipped: {missing}")
        return SKIP
    if not os.path.exists(args.library):
        print(f"skipped: {args.library} does not exist")
        return SKIP
    os.environ["RILL_LIBRARY"] = args.library
    sys.path.insert(0, args.bindings)
    import rill

    kinds = build_tokenizers(tk)
    failed = []
    with tempfile.TemporaryDirectory(prefix="rill-gguf-tok-") as folder:
        for kind, pre in KINDS.items():
            path = os.path.join(folder, kind + ".gguf")
            ref = write_gguf(gguf, path, tk, kinds[kind], pre)
            n = differences(rill, ref, path, kind)
            print(f"  {kind:6s} (tokenizer.ggml.pre {pre}): {n} differences")
            if n:
                failed.append(f"{kind}: {n} differences from tokenizers")

        path = os.path.join(folder, "control.gguf")
        ref = write_gguf(gguf, path, tk, kinds["llama3"], "qwen2")
        n = differences(rill, ref, path, "control", quiet=True)
        print(f"  negative control: Llama 3's vocabulary with the qwen2 pre-tokenizer: {n} differences")
        if n == 0:
            failed.append("negative control: a wrong pre-tokenizer made no difference")

        for label, pre, model, expected in (
                ("SentencePiece vocabulary", "default", "llama", "'tokenizer.ggml.model': \"llama\" is not supported"),
                ("unknown pre-tokenizer", "chameleon", "gpt2", "'tokenizer.ggml.pre': \"chameleon\" is not supported")):
            path = os.path.join(folder, "refused.gguf")
            write_gguf(gguf, path, tk, kinds["gpt2"], pre, model)
            try:
                rill.Tokenizer(path).close()
                failed.append(f"{label}: loaded, expected a refusal")
            except rill.RillError as e:
                ok = expected in str(e)
                print(f"  refused: {label}: {'ok' if ok else 'FAIL'}: {e}")
                if not ok:
                    failed.append(f"{label}: expected {expected!r} in {e}")
    return conclude(failed, None, "cpu", f"{len(KINDS)}/{len(KINDS)} GGUF vocabularies match tokenizers")


if __name__ == "__main__":
    sys.exit(main())
