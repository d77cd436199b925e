"""Hugging Face tokenizers (rill_tokenizer) and streaming decode (rill_detokenizer)."""

import ctypes
import os
import weakref

from ._core import Owned
from ._library import check, lib
from .errors import InvalidArgumentError


def _as_ids(ids):
    ids = [int(i) for i in ids]
    return (ctypes.c_int32 * len(ids))(*ids), len(ids)


def _text_call(fn, size_counts_nul):
    """Runs fn(buf, size, out_size) once to learn the size and once to fill
    the buffer; returns the text (which may hold U+0000)."""
    size = ctypes.c_size_t(0)
    check(fn(None, 0, ctypes.byref(size)))
    buf = ctypes.create_string_buffer(size.value + 1)
    check(fn(buf, len(buf), ctypes.byref(size)))
    length = size.value - 1 if size_counts_nul else size.value
    return buf.raw[:length].decode("utf-8")


class Tokenizer(Owned):
    """A tokenizer.json (rill_tokenizer_load): path is the file or a folder
    holding it. Released by close(), a with block, or when collected.

        tok = rill.Tokenizer("models/demo")
        ids = tok.encode("Hello")            # with the special tokens the post-processor adds
        text = tok.decode(ids, skip_special_tokens=True)
        for piece in tok.stream(ids): print(piece, end="")
    """

    _argument, _class_name = "tokenizer", "rill.Tokenizer"

    def __init__(self, path):
        handle = ctypes.c_void_p()
        check(lib().rill_tokenizer_load(os.fsencode(path), ctypes.byref(handle)))
        self._handle = handle.value
        self._finalizer = weakref.finalize(self, lib().rill_tokenizer_destroy, handle.value)
        self._children = weakref.WeakSet()

    @property
    def vocab_size(self):
        """The largest id + 1, added tokens included."""
        out = ctypes.c_int32()
        check(lib().rill_tokenizer_vocab_size(self.handle, ctypes.byref(out)))
        return out.value

    def encode(self, text, add_special_tokens=True):
        """The ids of text (str) as a list of ints."""
        if not isinstance(text, str):
            raise InvalidArgumentError("text: expected a str, got {}".format(type(text).__name__))
        data = text.encode("utf-8", "surrogatepass")
        count = ctypes.c_size_t(0)
        check(lib().rill_tokenizer_encode(self.handle, data, len(data), int(bool(add_special_tokens)), None, 0,
                                          ctypes.byref(count)))
        ids = (ctypes.c_int32 * count.value)()
        check(lib().rill_tokenizer_encode(self.handle, data, len(data), int(bool(add_special_tokens)), ids,
                                          count.value, ctypes.byref(count)))
        return list(ids)

    def decode(self, ids, skip_special_tokens=False):
        """The text of ids (an iterable of ints)."""
        array, count = _as_ids(ids)
        skip = int(bool(skip_special_tokens))
        return _text_call(lambda buf, size, out: lib().rill_tokenizer_decode(self.handle, array, count, skip, buf,
                                                                            size, out), True)

    def token_to_id(self, token):
        """The id of a token string; raises rill.NotFoundError when absent."""
        out = ctypes.c_int32()
        check(lib().rill_tokenizer_token_to_id(self.handle, token.encode("utf-8"), ctypes.byref(out)))
        return out.value

    def detokenizer(self, skip_special_tokens=False):
        """A Detokenizer for decoding one id at a time."""
        return Detokenizer(self, skip_special_tokens)

    def stream(self, ids, skip_special_tokens=False):
        """Yields the text each id completes (possibly ""), then what the end
        of the stream releases; the pieces join to decode(ids)."""
        with Detokenizer(self, skip_special_tokens) as detokenizer:
            for i in ids:
                yield detokenizer.push(i)
            yield detokenizer.flush()


class Detokenizer(Owned):
    """Streaming decode (rill_detokenizer): push(id) returns the text that
    became complete, never half a character; flush() ends the stream."""

    _argument, _class_name = "detokenizer", "rill.Detokenizer"

    def __init__(self, tokenizer, skip_special_tokens=False):
        handle = ctypes.c_void_p()
        check(lib().rill_detokenizer_create(tokenizer.handle, int(bool(skip_special_tokens)), ctypes.byref(handle)))
        self._handle = handle.value
        self._finalizer = weakref.finalize(self, lib().rill_detokenizer_destroy, handle.value)
        self._tokenizer = tokenizer  # kept alive while this detokenizer is
        tokenizer._children.add(self)

    def push(self, token_id):
        return _text_call(lambda buf, size, out: lib().rill_detokenizer_push(self.handle, int(token_id), buf, size,
                                                                            out), False)

    def flush(self):
        return _text_call(lambda buf, size, out: lib().rill_detokenizer_flush(self.handle, buf, size, out), False)
