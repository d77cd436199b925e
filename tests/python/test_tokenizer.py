"""rill.Tokenizer and rill.Detokenizer: the binding's calls, buffers and
errors, on a small hand-written tokenizer.json. The encodings themselves are
compared with PyPI tokenizers in tests/tokenizer/tokenizer_reference.py."""
import json

import pytest

import rill

TOKENIZER = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": 3, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True}],
    "normalizer": None, "pre_tokenizer": None,
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [3], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "byte_fallback": True,
              "vocab": {"a": 0, "b": 1, "ab": 2, "<s>": 3, "<0xC3>": 4, "<0xA9>": 5, "<0x00>": 6},
              "merges": ["a b"]},
}


@pytest.fixture
def tokenizer(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps(TOKENIZER), encoding="utf-8")
    with rill.Tokenizer(tmp_path) as tok:
        yield tok


def test_encode_decode_and_lookups(tokenizer):
    assert tokenizer.vocab_size == 7
    assert tokenizer.encode("ab\x00a\u00e9") == [3, 2, 6, 0, 4, 5]
    assert tokenizer.encode("ab", add_special_tokens=False) == [2]
    assert tokenizer.decode([3, 2, 6, 0]) == "<s>ab\x00a"  # U+0000 inside the text survives
    assert tokenizer.decode([3, 2, 6, 0], skip_special_tokens=True) == "ab\x00a"
    assert tokenizer.token_to_id("<s>") == 3
    with pytest.raises(rill.NotFoundError, match="zz"):
        tokenizer.token_to_id("zz")


def test_stream_holds_bytes_until_the_character_is_whole(tokenizer):
    assert list(tokenizer.stream([3, 4, 5, 2], skip_special_tokens=True)) == ["", "", "", "\u00e9ab", ""]
    with tokenizer.detokenizer() as detok:
        assert detok.push(4) == ""
        assert detok.flush() == "\ufffd"


def test_errors_name_the_argument(tokenizer, tmp_path):
    with pytest.raises(rill.InvalidArgumentError, match=r"ids\[1\].*vocab_size 7"):
        tokenizer.decode([0, 7])
    with pytest.raises(rill.InvalidArgumentError, match="text"):
        tokenizer.encode(b"ab")
    with pytest.raises(rill.IoError, match="cannot read .*missing"):
        rill.Tokenizer(tmp_path / "missing")
    (tmp_path / "bad.json").write_text(json.dumps(dict(TOKENIZER, decoder={"type": "WordPiece"})), encoding="utf-8")
    with pytest.raises(rill.ConfigError, match=r"decoder\.type.*WordPiece"):
        rill.Tokenizer(tmp_path / "bad.json")
    tokenizer.close()
    with pytest.raises(rill.InvalidArgumentError, match="closed"):
        tokenizer.encode("a")
