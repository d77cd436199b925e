"""Language models from Hugging Face folders (rill_lm_* in rill.h):
rill.Model.load(path) and the logits of token ids."""

import ctypes
import os
import weakref

import numpy as np

from ._core import Context, DType, Owned, as_dtype, destroy_after_sync, int32_array
from ._library import LmInfo, LmLoadOptions, c_float_p, c_int32_p, check, lib
from .errors import InvalidArgumentError


class LanguageModel(Owned):
    """A decoder stack with its embedding, final norm and LM head, loaded from
    a Hugging Face model folder (rill_lm). Made by rill.Model.load(path) or
    rill.LanguageModel.load(path). Keeps its context alive; a context it
    made itself is closed with it, and so are its KV caches.

    Attributes from the folder: vocab_size, hidden_size, num_layers,
    max_position_embeddings, dtype, bos_token_id (None when absent),
    eos_token_ids, model_type, and generation_defaults (generation_config.json's
    do_sample, temperature, top_k, top_p, min_p, repetition_penalty). The
    properties weight_bytes and weight_bytes_mapped say how much memory the
    weights take and how much of it is the model file's map."""

    _argument, _class_name = "lm", "rill.LanguageModel"

    def __init__(self, context, path, dtype=None, weight_format=None, copy_weights=False):
        if not isinstance(context, Context):
            raise InvalidArgumentError("context: expected a rill.Context, got {}".format(type(context).__name__))
        options = LmLoadOptions()
        lib().rill_lm_load_options_init(ctypes.byref(options))
        if dtype is not None:
            options.override_dtype = 1
            options.dtype = int(as_dtype(dtype))
        if weight_format is not None:
            options.weight_format = int(as_dtype(weight_format))
        options.copy_weights = 1 if copy_weights else 0
        handle = ctypes.c_void_p()
        check(lib().rill_lm_load(context.handle, os.fsencode(path), ctypes.byref(options), ctypes.byref(handle)))
        self._context = context
        self._handle = handle.value
        self._children = weakref.WeakSet()  # its KV caches and sessions
        self.path = os.fspath(path)
        self._tokenizer = None
        self._finalizer = weakref.finalize(self, destroy_after_sync, lib(), "rill_lm_destroy", context._handle,
                                           handle.value)
        context._children.add(self)
        self._owns_context = False
        info = self._info()
        self.vocab_size = int(info.vocab_size)
        self.hidden_size = int(info.hidden_size)
        self.num_layers = int(info.num_layers)
        self.max_position_embeddings = int(info.max_position_embeddings)
        self.dtype = DType(info.dtype)
        self.bos_token_id = None if info.bos_token_id < 0 else int(info.bos_token_id)
        self.eos_token_ids = [int(info.eos_token_ids[i]) for i in range(info.eos_token_count)]
        self.model_type = info.model_type.decode("utf-8")
        self.generation_defaults = dict(do_sample=bool(info.do_sample), temperature=float(info.temperature),
                                        top_k=int(info.top_k), top_p=float(info.top_p), min_p=float(info.min_p),
                                        repetition_penalty=float(info.repetition_penalty))

    def _info(self):
        info = LmInfo()
        info.struct_size = ctypes.sizeof(LmInfo)
        check(lib().rill_lm_get_info(self._handle, ctypes.byref(info)))
        return info

    @property
    def weight_bytes(self):
        """Bytes of the weights as the backend holds them (rill_lm_info.weight_bytes)."""
        return int(self._info().weight_bytes)

    @property
    def weight_bytes_mapped(self):
        """Of weight_bytes, those read in place from the model file's memory map."""
        return int(self._info().weight_bytes_mapped)

    @classmethod
    def load(cls, path, backend=None, dtype=None, context=None, weight_format=None, copy_weights=False):
        """Loads the folder at path. backend: "cpu", "vulkan", "cuda", "auto" or
        None (the library's default), for a context made here and closed with
        the model; or context: a rill.Context to load onto (then not backend).
        dtype: "f32", "f16", "bf16" or None (the checkpoint's torch_dtype).
        weight_format: "q8_0", "q4_0", "q5_0", "q5_1", "q4_k", "q5_k" or "q6_k" to quantize the
        weight matrices as they load, or None (rill_lm_load_options.weight_format).
        copy_weights: True to copy the files' tensors rather than read them in place from
        their maps (rill_lm_load_options.copy_weights)."""
        if context is not None and backend is not None:
            raise InvalidArgumentError("backend: give backend or context, not both")
        owned = context is None
        if owned:
            if backend is not None and not isinstance(backend, str):
                raise InvalidArgumentError("backend: expected a str, got {!r}".format(backend))
            context = Context('[runtime]\nbackend = "{}"\n'.format(backend) if backend else None)
        try:
            model = cls(context, path, dtype, weight_format, copy_weights)
        except BaseException:
            if owned:
                context.close()
            raise
        # Dropped without close(), the model is destroyed before the context it
        # alone holds; close() closes both at once.
        model._owns_context = owned
        return model

    @property
    def context(self):
        return self._context

    def _stack_handle(self):
        """The decoder stack (rill_lm_model), for KV caches."""
        return lib().rill_lm_model(self.handle)

    def kv_cache(self, batch, capacity):
        """A new KV cache of the model's decoder stack for batch sequences of up
        to capacity tokens."""
        from ._model import KVCache
        return KVCache(self, batch, capacity)

    def logits(self, ids, cache=None, last_only=False):
        """float32 logits of token ids: ids [T] gives [T, vocab] ([vocab] with
        last_only), ids [B, T] gives [B, T, vocab] ([B, vocab]). cache: a KV
        cache of this model (kv_cache) whose sequences the ids continue, or
        None for one prefill without memory."""
        arr = np.asarray(ids)
        if arr.ndim not in (1, 2) or arr.size == 0:
            raise InvalidArgumentError("ids: expected a non-empty [T] or [B, T] array of ids, got shape {}".format(
                arr.shape))
        batch, tokens = (1, arr.shape[0]) if arr.ndim == 1 else arr.shape
        flat = int32_array(arr, "ids")
        cache_handle = None
        if cache is not None:
            if getattr(cache, "_model", None) is not self:
                raise InvalidArgumentError("cache: expected a KV cache of this model (its kv_cache())")
            cache_handle = cache.handle
        rows = batch if last_only else batch * tokens
        out = np.empty((rows, self.vocab_size), dtype=np.float32)
        check(lib().rill_lm_logits(self.handle, cache_handle, batch, tokens, flat.ctypes.data_as(c_int32_p),
                                   1 if last_only else 0, out.ctypes.data_as(c_float_p), out.size))
        if arr.ndim == 1:
            return out[0] if last_only else out
        return out if last_only else out.reshape(batch, tokens, self.vocab_size)

    @property
    def tokenizer(self):
        """The folder's tokenizer.json as a rill.Tokenizer (loaded on first use), or None without one."""
        if self._tokenizer is None and os.path.isfile(os.path.join(self.path, "tokenizer.json")):
            from ._tokenizer import Tokenizer
            self._tokenizer = Tokenizer(self.path)
        return self._tokenizer

    def session(self, max_new_tokens=0, stop=(), **options):
        """A new rill.Session (one conversation) with the folder's tokenizer;
        options: capacity, prefill_chunk and the sampling keywords."""
        from ._generate import Session
        return Session(self, tokenizer=self.tokenizer, max_new_tokens=max_new_tokens, stop=stop, **options)

    def generate(self, prompt, max_new_tokens=256, stop=(), **sampling):
        """The text generated after prompt (a str, or a list of token ids),
        until an end-of-sequence id, a stop string or max_new_tokens. Sampling
        keywords (temperature=0 is greedy, top_k, top_p, min_p,
        repetition_penalty, presence_penalty, frequency_penalty, seed) override
        generation_config.json. Needs the folder's tokenizer."""
        return "".join(self.stream(prompt, max_new_tokens, stop, **sampling))

    def generate_ids(self, prompt, max_new_tokens=256, stop=(), **sampling):
        """As generate, but the new token ids (a list); needs no tokenizer for an ids prompt."""
        from ._generate import prompt_session
        with prompt_session(self, None if not isinstance(prompt, str) else self.tokenizer, prompt,
                            max_new_tokens, stop, sampling) as session:
            return [token for token, _ in session.stream()]

    def stream(self, prompt, max_new_tokens=256, stop=(), **sampling):
        """Yields the generated text piece by piece (never half a character), as generate."""
        from ._generate import prompt_session
        if self.tokenizer is None:
            raise InvalidArgumentError("stream: the folder {} has no tokenizer.json; use generate_ids".format(self.path))
        with prompt_session(self, self.tokenizer, prompt, max_new_tokens, stop, sampling) as session:
            for _, text in session.stream():
                if text:
                    yield text

    def close(self):
        owns, self._owns_context = self._owns_context, False  # the context closes its children: this once
        super().close()
        if owns:
            self._context.close()

    def __repr__(self):
        return "<rill.LanguageModel {} vocab={} dtype={}>".format(self.model_type, self.vocab_size,
                                                                  self.dtype.name.lower())
