"""Decoder stacks (rill_model) and their KV caches (rill_kv_cache)."""

import ctypes
import enum
import os
import weakref

import numpy as np

from ._core import Context, DType, Owned, as_dtype, destroy_after_sync, f32_to_bf16, inferred_dtype, int32_array
from ._library import ModelDesc, c_int32_p, check, lib
from .errors import DtypeError, InvalidArgumentError


class ActFn(enum.IntEnum):
    """rill_act_fn."""

    SILU = 0
    GELU = 1
    GELU_TANH = 2
    RELU = 3


class NormKind(enum.IntEnum):
    """rill_norm_kind."""

    RMS = 0
    LAYER = 1


class NormPlacement(enum.IntEnum):
    """rill_norm_placement."""

    PRE = 0
    POST = 1
    SANDWICH = 2
    DEEPNORM = 3
    OUTPUT = 4


class QkNorm(enum.IntEnum):
    """rill_qk_norm."""

    NONE = 0
    HEAD = 1
    FULL = 2
    HEAD_WEIGHTS = 3


class MlpActivation(enum.IntEnum):
    """rill_mlp_activation."""

    SILU_GLU = 0
    GELU_GLU = 1
    GELU = 2
    GELU_TANH = 3
    RELU = 4
    GELU_TANH_GLU = 5


def _weight_array(array, dtype):
    """(array, rill dtype) for set_weight: float32/float16 arrays as they are,
    uint16 bf16 bits with dtype='bf16', other floats with an explicit dtype."""
    arr = np.asarray(array)
    if dtype is None:
        return np.ascontiguousarray(arr), inferred_dtype(arr, "dtype=")
    kind = as_dtype(dtype)
    if kind == DType.BF16:
        if arr.dtype == np.uint16:
            return np.ascontiguousarray(arr), kind
        if arr.dtype.kind != "f":
            raise DtypeError("array: expected uint16 bfloat16 bits or a float array, got {}".format(arr.dtype))
        return f32_to_bf16(arr), kind
    if arr.dtype.kind != "f":
        raise DtypeError("array: expected a float array, got {}".format(arr.dtype))
    return np.ascontiguousarray(arr, dtype=np.float32 if kind == DType.F32 else np.float16), kind


class Model(Owned):
    """A decoder stack with its weights in one context (rill_model). Keeps its
    context alive; released by close(), a with block, or when collected.
    Its KV caches are closed with it."""

    _argument, _class_name = "model", "rill.Model"

    @staticmethod
    def load(path, backend=None, dtype=None, context=None, weight_format=None, copy_weights=False):
        """A language model from the Hugging Face folder or GGUF file at path: a
        rill.LanguageModel (see its load for the arguments)."""
        from ._lm import LanguageModel
        return LanguageModel.load(path, backend=backend, dtype=dtype, context=context, weight_format=weight_format,
                                  copy_weights=copy_weights)

    def __init__(self, context, desc):
        if not isinstance(context, Context):
            raise InvalidArgumentError("context: expected a rill.Context, got {}".format(type(context).__name__))
        if not isinstance(desc, ModelDesc):
            raise InvalidArgumentError("desc: expected a rill.ModelDesc, got {}".format(type(desc).__name__))
        handle = ctypes.c_void_p()
        check(lib().rill_model_create(context.handle, ctypes.byref(desc), ctypes.byref(handle)))
        self._context = context
        self._handle = handle.value
        self._children = weakref.WeakSet()  # its KV caches
        self.desc = ModelDesc.from_buffer_copy(desc)
        self._finalizer = weakref.finalize(self, destroy_after_sync, lib(), "rill_model_destroy", context._handle,
                                           handle.value)
        context._children.add(self)

    @property
    def context(self):
        return self._context

    def set_weight(self, name, array, dtype=None):
        """Sets one weight (a Hugging Face name, see rill.h) from an array of
        the weight's shape; the runtime converts it to the model dtype. dtype:
        the array's storage when it is not float32/float16 ('bf16' for uint16
        bits; float arrays are converted to it first)."""
        if not isinstance(name, str):
            raise InvalidArgumentError("name: expected a str, got {}".format(type(name).__name__))
        data, kind = _weight_array(array, dtype)
        shape = (ctypes.c_int64 * max(data.ndim, 1))(*data.shape)
        check(lib().rill_model_set_weight(self.handle, name.encode("utf-8"), int(kind), data.ndim, shape,
                                          data.ctypes.data, data.nbytes))

    def load_safetensors(self, path):
        check(lib().rill_model_load_safetensors(self.handle, os.fsencode(path)))

    def check_weights(self):
        check(lib().rill_model_check_weights(self.handle))

    def kv_cache(self, batch, capacity):
        """A new KV cache for batch sequences of up to capacity tokens."""
        return KVCache(self, batch, capacity)

    def forward(self, hidden, cache=None, positions=None):
        """Runs hidden [B, T, D] through the stack in place and returns it.
        cache: a KVCache of this model, or None for a plain causal prefill.
        positions: B*T ints (RoPE positions), or None for the defaults."""
        hidden_handle = self._context._arg(hidden, "hidden")
        cache_handle = None
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise InvalidArgumentError("cache: expected a rill.KVCache or None, got {}".format(
                    type(cache).__name__))
            if cache._model is not self:
                raise InvalidArgumentError("cache: the cache belongs to another model")
            cache_handle = cache.handle
        pos_ptr, pos_count, _keep = None, 0, None
        if positions is not None:
            _keep = int32_array(positions, "positions")
            pos_ptr, pos_count = _keep.ctypes.data_as(c_int32_p), _keep.size
        check(lib().rill_model_forward(self.handle, cache_handle, hidden_handle, pos_ptr, pos_count))
        return hidden


class KVCache(Owned):
    """Cached keys and values of every layer of a model (rill_kv_cache): of a
    rill.Model, or of a rill.LanguageModel's decoder stack. Keeps its model
    alive."""

    _argument, _class_name = "cache", "rill.KVCache"

    def __init__(self, model, batch, capacity):
        if isinstance(model, Model):
            stack = model.handle
        elif hasattr(model, "_stack_handle"):  # a rill.LanguageModel
            stack = model._stack_handle()
        else:
            raise InvalidArgumentError("model: expected a rill.Model or rill.LanguageModel, got {}".format(
                type(model).__name__))
        handle = ctypes.c_void_p()
        check(lib().rill_kv_cache_create(stack, _int32(batch, "batch"), _int32(capacity, "capacity"),
                                         ctypes.byref(handle)))
        self._model = model
        self._handle = handle.value
        self.batch = int(batch)
        self.capacity = int(capacity)
        self._finalizer = weakref.finalize(self, destroy_after_sync, lib(), "rill_kv_cache_destroy",
                                           model._context._handle, handle.value)
        model._children.add(self)

    def length(self, sequence):
        """Tokens cached for a sequence."""
        n = ctypes.c_int32()
        check(lib().rill_kv_cache_get_length(self.handle, _int32(sequence, "sequence"), ctypes.byref(n)))
        return int(n.value)

    def set_length(self, sequence, length):
        check(lib().rill_kv_cache_set_length(self.handle, _int32(sequence, "sequence"), _int32(length, "length")))


def _int32(value, argument):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError("{}: expected an int, got {!r}".format(argument, value))
    if not -2**31 <= int(value) < 2**31:
        raise InvalidArgumentError("{}: expected a value that fits int32, got {}".format(argument, value))
    return int(value)

