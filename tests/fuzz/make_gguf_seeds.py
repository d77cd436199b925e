#!/usr/bin/env python3
"""Writes the seed corpora of the GGUF fuzz targets (tests/fuzz/corpus/gguf and
corpus/gguf_header). The gguf seeds are real GGUF files written by PyPI's gguf
package (GGUFWriter, as llama.cpp's converters use it), kept small: a one-layer
llama of width 8 in f32 and in f16 with a gpt2-style tokenizer, the same
llama with a SentencePiece vocabulary (tokenizer.ggml.model "llama": scores,
byte, unknown, control and user-defined pieces), a llama of width 32 whose
matrices and embedding are Q8_0 blocks, a v2 file, a file with
general.alignment 64, metadata of every value type and a Q8_0 tensor, and two
tokenizer-only files (byte-level BPE and SentencePiece). The gguf_header seeds are
inputs of the structure-aware target (gguf_header_fuzz.cpp): bytes of 1 choose
the expected value at every choice, so one_tensor and llama make well-formed
files (PyPI's gguf reads them; rill loads llama as a model) and
thirteen_tensors one that repeats a tensor name.

    python3 tests/fuzz/make_gguf_seeds.py    (needs: pip install gguf==0.19.0)

The output is deterministic; rerun it only when the seeds should change.
"""
import os
import struct
import sys

import numpy as np

import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
WIDTH, FF, VOCAB, HEADS = 8, 16, 16, 2


def llama_tensors(rng, width=WIDTH, ff=FF):
    """One-layer llama, names and shapes as convert_hf_to_gguf.py writes them (numpy order)."""
    shapes = {"token_embd.weight": (VOCAB, width), "output_norm.weight": (width,),
              "output.weight": (VOCAB, width), "blk.0.attn_norm.weight": (width,),
              "blk.0.attn_q.weight": (width, width), "blk.0.attn_k.weight": (width, width),
              "blk.0.attn_v.weight": (width, width), "blk.0.attn_output.weight": (width, width),
              "blk.0.ffn_norm.weight": (width,), "blk.0.ffn_gate.weight": (ff, width),
              "blk.0.ffn_up.weight": (ff, width), "blk.0.ffn_down.weight": (width, ff)}
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}


def add_llama_metadata(w, width=WIDTH, ff=FF):
    w.add_block_count(1)
    w.add_context_length(32)
    w.add_embedding_length(width)
    w.add_feed_forward_length(ff)
    w.add_head_count(HEADS)
    w.add_head_count_kv(HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def add_tokenizer(w):
    """A byte-level BPE vocabulary of VOCAB tokens with three merges."""
    tokens = ["<s>", "</s>", "a", "b", "c", "d", "e", "\u0120", "ab", "cd", "\u0120a", "f", "g", "h", "i", "j"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL] * 2 + [gguf.TokenType.NORMAL] * (VOCAB - 2))
    w.add_token_merges(["a b", "c d", "\u0120 a"])
    w.add_add_bos_token(True)


def add_sentencepiece_tokenizer(w):
    """A SentencePiece vocabulary of VOCAB pieces as llama.cpp's converter writes
    Llama 2's: unknown, control, byte and user-defined pieces, merges implied by
    the scores."""
    pieces = ["<unk>", "<s>", "</s>", "<0x0A>", "<0x20>", "\u2581", "a", "b", "c", "d", "\u2581a", "ab", "cd",
              "\u2581ab", "abcd", "<mask>"]
    t = gguf.TokenType
    types = [t.UNKNOWN, t.CONTROL, t.CONTROL, t.BYTE, t.BYTE] + [t.NORMAL] * 10 + [t.USER_DEFINED]
    scores = [0.0] * 5 + [-1.0 - i for i in range(10)] + [0.0]
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_add_space_prefix(True)
    w.add_add_bos_token(True)


def write(path, arch="llama", version=None, alignment=None, fill=None):
    w = gguf.GGUFWriter(path, arch)
    if alignment is not None:
        w.add_custom_alignment(alignment)
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if version is not None:
        # GGUFWriter writes version 3 only; version 2 has the same little-endian
        # layout, so only the header's version field differs.
        with open(path, "r+b") as f:
            f.seek(4)
            f.write(struct.pack("<I", version))


def llama(storage, tokenizer=add_tokenizer):
    """storage: how the matrices are kept, "f32", "f16" or "q8_0" (then the
    width is 32, one Q8_0 block per row); tokenizer: None or what adds it."""
    width = 32 if storage == "q8_0" else WIDTH
    ff = 32 if storage == "q8_0" else FF

    def fill(w):
        add_llama_metadata(w, width, ff)
        if tokenizer is not None:
            tokenizer(w)
        for name, data in llama_tensors(np.random.default_rng(0), width, ff).items():
            if storage == "f16" and data.ndim == 2:
                w.add_tensor(name, data.astype(np.float16))
            elif storage == "q8_0" and data.ndim == 2:
                q8 = gguf.GGMLQuantizationType.Q8_0
                w.add_tensor(name, gguf.quants.quantize(data, q8), raw_dtype=q8)
            else:
                w.add_tensor(name, data)
    return fill


def tokenizer_only(w):
    add_tokenizer(w)
    w.add_bos_token_id(0)


def sentencepiece_tokenizer_only(w):
    """A SentencePiece vocabulary (tokenizer.ggml.model "llama", as Llama 2's):
    scores instead of merges, unknown and control pieces, a user-defined piece
    and byte-fallback pieces."""
    T = gguf.TokenType
    # The byte pieces sit at ids the seeds' llama draws often (the fault test
    # streams its text through this vocabulary).
    pieces = [("<unk>", 0.0, T.UNKNOWN), ("<s>", 0.0, T.CONTROL), ("</s>", 0.0, T.CONTROL),
              ("\u2581", -1.0, T.NORMAL), ("a", -2.0, T.NORMAL), ("b", -3.0, T.NORMAL),
              ("ab", -4.0, T.NORMAL), ("\u2581a", -5.0, T.NORMAL), ("<0xC3>", 0.0, T.BYTE),
              ("<0x0A>", 0.0, T.BYTE), ("\u2581ab", -6.0, T.NORMAL), ("<0xA9>", 0.0, T.BYTE),
              ("<tool>", 0.0, T.USER_DEFINED)]
    w.add_tokenizer_model("llama")
    w.add_token_list([p[0] for p in pieces])
    w.add_token_scores([p[1] for p in pieces])
    w.add_token_types([p[2] for p in pieces])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)


def every_value_type(w):
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 1.5)
    w.add_bool("test.bool", True)
    w.add_string("test.string", "caf\u00e9")
    w.add_uint64("test.u64", 2**63 + 5)
    w.add_int64("test.i64", -(2**62))
    w.add_float64("test.f64", -2.25)
    w.add_array("test.strings", ["x", "", "yz"])
    w.add_array("test.ints", [1, -2, 3])
    w.add_array("test.floats", [0.5, 1e30])
    w.add_array("test.empty", [])
    w.add_tensor("one", np.arange(3, dtype=np.float32))
    w.add_tensor("two", np.ones((2, 3, 1, 2), dtype=np.float16))
    q8 = np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32)
    w.add_tensor("q8_0", gguf.quants.quantize(q8, gguf.GGMLQuantizationType.Q8_0),
                 raw_dtype=gguf.GGMLQuantizationType.Q8_0)


def main():
    seeds = os.path.join(HERE, "corpus", "gguf")
    os.makedirs(seeds, exist_ok=True)
    write(os.path.join(seeds, "llama_f32.gguf"), fill=llama("f32"))
    write(os.path.join(seeds, "llama_f16.gguf"), fill=llama("f16"))
    write(os.path.join(seeds, "llama_v2_no_tokenizer.gguf"), version=2, fill=llama("f32", tokenizer=None))
    write(os.path.join(seeds, "llama_sentencepiece.gguf"), fill=llama("f32", tokenizer=add_sentencepiece_tokenizer))
    write(os.path.join(seeds, "llama_q8_0.gguf"), fill=llama("q8_0"))
    write(os.path.join(seeds, "values_align64.gguf"), arch="test", alignment=64, fill=every_value_type)
    write(os.path.join(seeds, "tokenizer_only.gguf"), fill=tokenizer_only)
    write(os.path.join(seeds, "sentencepiece_tokenizer_only.gguf"), fill=sentencepiece_tokenizer_only)

    header = os.path.join(HERE, "corpus", "gguf_header")
    os.makedirs(header, exist_ok=True)
    for name, first, length in [("empty", None, 0), ("one_tensor", 1, 512), ("llama", 12, 4096),
                                ("thirteen_tensors", 13, 4096)]:
        with open(os.path.join(header, name), "wb") as f:
            f.write(b"" if first is None else bytes([first]) + b"\x01" * (length - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
