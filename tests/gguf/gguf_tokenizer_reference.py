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

SentencePiece BPE vocabularies (tokenizer.ggml.model "llama"): pieces with
scores and types from tokenizer_reference's Llama 2 style tokenizer, in Llama
2's layout and in Gemma's (add_space_prefix false, turn markers, the tab
piece), written as llama.cpp's converter writes them; the reference is
transformers' own LlamaConverter / GemmaConvert (merges from the scores) and
LlamaTokenizerFast / GemmaTokenizerFast, fed by stand-ins for the
SentencePiece model file. 0 differences.

Negative controls: the Llama 3 vocabulary written with the qwen2 pre-tokenizer
name, the SentencePiece scores negated, and the Gemma vocabulary under
general.architecture llama must each differ. Refusals: a SentencePiece
vocabulary without scores, an unknown vocabulary kind and an unknown
pre-tokenizer are refused by name.

  gguf_tokenizer_reference.py --library build/lib/librill.so --bindings bindings/python --venv VENV
Exit codes: 0 passed, 1 failed, 77 skipped (tokenizers, transformers or gguf missing).
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "torch"))
from outcome import SKIP, conclude  # noqa: E402
from reference_imports import require, use_test_folders, use_venv  # noqa: E402

use_test_folders("tokenizer")
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


# SentencePiece token types (the same numbers in GGUF's tokenizer.ggml.token_type).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def sentencepiece_pieces(data, gemma):
    """A SentencePiece BPE vocabulary from tokenizer_reference's Llama 2 style
    tokenizer: [(piece, score, type)] by id. Scores fall with the id, as
    SentencePiece's BPE trainer gives them; specials and bytes score 0. The
    Gemma layout renames the first three pieces and adds <unk>, the turn
    markers and a tab run; Gemma's converter calls <0x09> "\\t", so a trained
    "\\t" piece becomes an unused one, as Gemma's vocabulary has them."""
    vocab = data["model"]["vocab"]
    pieces = [None] * (max(vocab.values()) + 1)
    for piece, i in vocab.items():
        pieces[i] = piece
    specials = ["<pad>", "<eos>", "<bos>"] if gemma else ["<unk>", "<s>", "</s>"]
    out = []
    for i, piece in enumerate(pieces):
        if i < 3:
            out.append((specials[i], 0.0, UNKNOWN if specials[i] == "<unk>" else CONTROL))
        elif gemma and piece == "\t":
            out.append(("<unused0>", 0.0, UNUSED))
        elif piece.startswith("<0x") and len(piece) == 6:
            out.append((piece, 0.0, BYTE))
        else:
            out.append((piece, float(-i), NORMAL))
    out.append(("<tool>", 0.0, USER_DEFINED))
    if gemma:
        out += [("<unk>", 0.0, UNKNOWN), ("<start_of_turn>", 0.0, USER_DEFINED), ("<end_of_turn>", 0.0, USER_DEFINED)]
        if "\t\t" not in pieces:
            out.append(("\t\t", -1.0, NORMAL))
    return out


def transformers_reference(pieces, gemma, add_space_prefix):
    """transformers' own converter (LlamaConverter or GemmaConvert) and fast
    tokenizer class on pieces. Only the SentencePiece file is stood in for:
    the converter reads the pieces from stand-ins of the protobuf model and of
    SentencePieceProcessor (which need the sentencepiece and protobuf packages)."""
    import importlib
    from types import SimpleNamespace as NS
    # The module, not transformers' function of the same name (which `import ... as` may give).
    cst = importlib.import_module("transformers.convert_slow_tokenizer")
    from transformers import GemmaTokenizerFast, LlamaTokenizerFast

    proto = NS(pieces=[NS(piece=p, score=s, type=t) for p, s, t in pieces],
               trainer_spec=NS(model_type=2, unk_piece="<unk>", byte_fallback=True, unk_id=0),
               normalizer_spec=NS(precompiled_charsmap=b"", add_dummy_prefix=add_space_prefix))
    processor = NS(id_to_piece=lambda i: pieces[i][0], GetPieceSize=lambda: len(pieces))
    extractor_class = cst.GemmaSentencePieceExtractor if gemma else cst.SentencePieceExtractor
    converter_class = cst.GemmaConvert if gemma else cst.LlamaConverter

    def extractor(_vocab_file):
        e = extractor_class.__new__(extractor_class)
        e.sp = processor
        return e

    specials = dict(pad_token="<pad>", eos_token="<eos>", bos_token="<bos>") if gemma else \
        dict(eos_token="</s>", bos_token="<s>")
    original = NS(vocab_file=None, legacy=True, add_prefix_space=add_space_prefix,
                  convert_ids_to_tokens=lambda i: pieces[i][0], **specials)
    converter = converter_class.__new__(converter_class)
    converter.original_tokenizer, converter.proto, converter.SpmExtractor = original, proto, extractor
    fast_class = GemmaTokenizerFast if gemma else LlamaTokenizerFast
    return fast_class(tokenizer_object=converter.converted(), unk_token="<unk>", add_bos_token=True,
                      add_eos_token=False, **specials)


def write_sentencepiece_gguf(gguf, path, pieces, gemma, add_space_prefix, scores=None, arch=None):
    """pieces as llama.cpp's converter writes a SentencePiece vocabulary."""
    w = gguf.GGUFWriter(path, arch or ("gemma" if gemma else "llama"))
    w.add_tokenizer_model("llama")
    w.add_token_list([p for p, _, _ in pieces])
    w.add_token_scores(scores if scores is not None else [s for _, s, _ in pieces])
    w.add_token_types([t for _, _, t in pieces])
    names = [p for p, _, _ in pieces]
    w.add_bos_token_id(names.index("<bos>" if gemma else "<s>"))
    w.add_eos_token_id(names.index("<eos>" if gemma else "</s>"))
    w.add_unk_token_id(names.index("<unk>"))
    w.add_add_bos_token(True)
    w.add_add_space_prefix(add_space_prefix)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def differences(rill, ref, path, name, quiet=False):
    mine = rill.Tokenizer(path)
    count = 0
    for text in CORPUS + scrambled_texts(150):
        for special in (True, False):
            expected = ref.encode(text, add_special_tokens=special)
            expected = expected.ids if hasattr(expected, "ids") else expected
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
    use_venv(args.venv)
    gguf, tk, _ = require("gguf", "tokenizers", "transformers")  # transformers: the SentencePiece references
    if not os.path.exists(args.library):
        print(f"skipped: {args.library} does not exist")
        return SKIP
    os.environ["RILL_LIBRARY"] = args.library
    sys.path.insert(0, args.bindings)
    import rill

    kinds = build_tokenizers(tk)
    failed = []
    with tempfile.TemporaryDirectory(prefix="rill-gguf-tok-") as folder:
        for label, gemma, prefix in (("llama2", False, True), ("gemma", True, False), ("llama2-noprefix", False, False)):
            pieces = sentencepiece_pieces(kinds["llama2"], gemma)
            path = os.path.join(folder, label + ".gguf")
            write_sentencepiece_gguf(gguf, path, pieces, gemma, prefix)
            n = differences(rill, transformers_reference(pieces, gemma, prefix), path, label)
            print(f"  {label:6s} (SentencePiece, add_space_prefix {prefix}): {n} differences")
            if n:
                failed.append(f"{label}: {n} differences from transformers")
        pieces = sentencepiece_pieces(kinds["llama2"], False)
        path = os.path.join(folder, "spm-control.gguf")
        write_sentencepiece_gguf(gguf, path, pieces, False, True, scores=[-s for _, s, _ in pieces])
        n = differences(rill, transformers_reference(pieces, False, True), path, "spm-control", quiet=True)
        print(f"  negative control: the SentencePiece scores negated: {n} differences")
        if n == 0:
            failed.append("negative control: negated SentencePiece scores made no difference")
        pieces = sentencepiece_pieces(kinds["llama2"], True)
        path = os.path.join(folder, "gemma-control.gguf")
        write_sentencepiece_gguf(gguf, path, pieces, True, False, arch="llama")
        n = differences(rill, transformers_reference(pieces, True, False), path, "gemma-control", quiet=True)
        print(f"  negative control: the Gemma vocabulary under general.architecture llama: {n} differences")
        if n == 0:
            failed.append("negative control: Gemma's tab piece made no difference")

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
                ("SentencePiece vocabulary without scores", "default", "llama",
                 "'tokenizer.ggml.scores': required, but absent"),
                ("WordPiece vocabulary", "default", "bert", "'tokenizer.ggml.model': \"bert\" is not supported"),
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
    return conclude(failed, None, "cpu", f"{len(KINDS) + 3}/{len(KINDS) + 3} GGUF vocabularies match their references")


if __name__ == "__main__":
    sys.exit(main())
