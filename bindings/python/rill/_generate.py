"""Generation: the sampler's settings and sessions (rill_session) that
generate tokens from a language model, step by step or as a stream."""

import ctypes
import enum
import weakref

import numpy as np

from ._core import Owned, destroy_after_sync, int32_array
from ._library import TOKEN_FN, SamplerParams, SessionOptions, c_int32_p, check, lib
from .errors import InvalidArgumentError

SAMPLING = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty",
            "seed")


class StopReason(enum.IntEnum):
    """rill_stop_reason: why a step returned."""

    NONE = 0
    EOS = 1
    STRING = 2
    MAX_NEW_TOKENS = 3
    CAPACITY = 4
    CANCELLED = 5
    CALLBACK = 6


class Session(Owned):
    """One conversation with a language model (rill_session): its tokens, a KV
    cache, a sampler and the stops. Keeps its model (and tokenizer) alive;
    closed with either.

    lm: a rill.LanguageModel. tokenizer: a rill.Tokenizer for text prompts,
    the text of new tokens and stop strings, or None (ids only). capacity,
    max_new_tokens (0 = no budget), prefill_chunk: as rill_session_options,
    None for the defaults. stop: stop strings. Sampling keywords
    (temperature, top_k, top_p, min_p, repetition_penalty, presence_penalty,
    frequency_penalty, seed) override the model's generation_config.json."""

    _argument, _class_name = "session", "rill.Session"

    def __init__(self, lm, tokenizer=None, capacity=None, max_new_tokens=0, prefill_chunk=None, stop=(),
                 **sampling):
        options = SessionOptions()
        lib().rill_session_options_init(ctypes.byref(options), lm.handle)
        if capacity is not None:
            options.capacity = capacity
        if prefill_chunk is not None:
            options.prefill_chunk = prefill_chunk
        options.max_new_tokens = max_new_tokens
        for name, value in sampling.items():
            if name not in SAMPLING:
                raise InvalidArgumentError("{}: expected one of {}, got an unknown keyword".format(name, ", ".join(SAMPLING)))
            setattr(options.sampler, name, value)
        handle = ctypes.c_void_p()
        check(lib().rill_session_create(lm.handle, ctypes.byref(options), ctypes.byref(handle)))
        self._lm = lm
        self._handle = handle.value
        self._finalizer = weakref.finalize(self, destroy_after_sync, lib(), "rill_session_destroy",
                                           lm._context._handle, handle.value)
        lm._children.add(self)
        self._pending = []
        self._on_token = TOKEN_FN(self._collect)
        self._tokenizer = tokenizer
        if tokenizer is not None:
            check(lib().rill_session_set_tokenizer(self._handle, tokenizer.handle))
            tokenizer._children.add(self)
        for text in stop:
            self.add_stop_string(text)

    def _collect(self, _user, token, text, length):
        self._pending.append((token, ctypes.string_at(text, length).decode("utf-8") if text else None))
        return 0

    def _text_call(self, name, text, *extra):
        if not isinstance(text, str):
            raise InvalidArgumentError("text: expected a str, got {}".format(type(text).__name__))
        data = text.encode("utf-8", "surrogatepass")
        check(getattr(lib(), name)(self.handle, data, len(data), *extra))

    def append_text(self, text, add_special_tokens=False):
        """Encodes text with the tokenizer (special tokens: as a first prompt
        wants them) and appends it."""
        self._text_call("rill_session_append_text", text, int(bool(add_special_tokens)))

    def set_text(self, text, add_special_tokens=True):
        """Encodes text and replaces the conversation with it, keeping the cached prefix it shares."""
        self._text_call("rill_session_set_text", text, int(bool(add_special_tokens)))

    def add_stop_string(self, text):
        """Ends generation (StopReason.STRING) where the text contains it; it never comes out."""
        self._text_call("rill_session_add_stop_string", text)

    def clear_stop_strings(self):
        check(lib().rill_session_clear_stop_strings(self.handle))

    def _ids_call(self, name, ids):
        ids = list(ids)
        array = int32_array(ids if ids else np.zeros(0, dtype=np.int32), "ids")
        check(getattr(lib(), name)(self.handle, array.ctypes.data_as(c_int32_p), array.size))

    def append_ids(self, ids):
        """Appends token ids; the next step runs only them."""
        self._ids_call("rill_session_append_ids", ids)

    def set_ids(self, ids):
        """Replaces the conversation, keeping the cached prefix it shares."""
        self._ids_call("rill_session_set_ids", ids)

    def set_eos_ids(self, ids):
        """Replaces the end-of-sequence ids ([] for none)."""
        self._ids_call("rill_session_set_eos_ids", ids)

    def set_sampler(self, **sampling):
        """Replaces the sampling settings (unnamed ones: rill_sampler_params_init's) and reseeds."""
        check(lib().rill_session_set_sampler(self.handle, ctypes.byref(SamplerParams(**sampling))))

    def rewind(self, length):
        """Keeps the first length tokens."""
        check(lib().rill_session_rewind(self.handle, int(length)))

    def cancel(self):
        """Makes the running (or next) step return StopReason.CANCELLED. Safe from any thread."""
        lib().rill_session_cancel(self.handle)

    @property
    def ids(self):
        """The conversation's token ids."""
        count = ctypes.c_size_t()
        if lib().rill_session_get_ids(self.handle, None, 0, ctypes.byref(count)) == 0:
            return []
        out = (ctypes.c_int32 * count.value)()
        check(lib().rill_session_get_ids(self.handle, out, count.value, ctypes.byref(count)))
        return list(out)

    def step(self, max_forwards=1):
        """Runs at most max_forwards forward passes. Returns the new tokens as
        (id, text or None without a tokenizer) pairs and the StopReason."""
        reason = ctypes.c_int()
        self._pending = []
        check(lib().rill_session_step(self.handle, int(max_forwards), self._on_token, None, None,
                                      ctypes.byref(reason)))
        return self._pending, StopReason(reason.value)

    def stream(self):
        """Yields (id, text or None) for each new token until a stop; the stop
        reason is then in self.stop_reason."""
        self.stop_reason = StopReason.NONE
        while True:
            tokens, reason = self.step(1)
            yield from tokens
            if reason != StopReason.NONE:
                self.stop_reason = reason
                return


def prompt_session(lm, tokenizer, prompt, max_new_tokens, stop, sampling):
    """A session with prompt appended: a str (encoded with special tokens) or token ids."""
    session = Session(lm, tokenizer=tokenizer, max_new_tokens=max_new_tokens, stop=stop, **sampling)
    if isinstance(prompt, str):
        if tokenizer is None:
            raise InvalidArgumentError("prompt: a text prompt needs the folder's tokenizer.json; pass token ids")
        session.append_text(prompt, add_special_tokens=True)
    else:
        session.append_ids(prompt)
    return session
