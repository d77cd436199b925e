"""Contexts, tensors and operators over the C API, with numpy interop."""

import ctypes
import enum
import numbers
import os
import weakref

import numpy as np

from . import _library
from ._library import LOG_FN, check, lib, text
from .errors import DtypeError, InvalidArgumentError, ShapeError

MAX_DIMS = 4  # RILL_MAX_DIMS


class DType(enum.IntEnum):
    """rill_dtype. bf16 tensors exchange their bits with numpy as uint16;
    tensors of the block formats (Q8_0 ... Q5_1, weight-only, GGUF's
    layouts) exchange theirs as uint8 arrays of [N, bytes per row]."""

    F32 = 0
    F16 = 1
    BF16 = 2
    Q8_0 = 3
    Q4_0 = 4
    Q4_K = 5
    Q5_K = 6
    Q6_K = 7
    Q5_0 = 8
    Q5_1 = 9


class LogLevel(enum.IntEnum):
    """rill_log_level."""

    DEBUG = 0
    INFO = 1
    WARNING = 2
    ERROR = 3


# The numpy dtype that holds each storage format bit for bit.
_STORAGE = {DType.F32: np.dtype(np.float32), DType.F16: np.dtype(np.float16), DType.BF16: np.dtype(np.uint16)}
_STORAGE.update({d: np.dtype(np.uint8) for d in (DType.Q8_0, DType.Q4_0, DType.Q4_K, DType.Q5_K, DType.Q6_K,
                                              DType.Q5_0, DType.Q5_1)})
_NAMES = {"f32": DType.F32, "float32": DType.F32, "f16": DType.F16, "float16": DType.F16,
          "bf16": DType.BF16, "bfloat16": DType.BF16, "q8_0": DType.Q8_0, "q4_0": DType.Q4_0,
          "q4_k": DType.Q4_K, "q5_k": DType.Q5_K, "q6_k": DType.Q6_K,
          "q5_0": DType.Q5_0, "q5_1": DType.Q5_1}


def as_dtype(value, argument="dtype"):
    """A DType from a DType, its int value, a name ("f32", "f16", "bf16") or the
    numpy float32/float16 dtypes."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value.lower() in _NAMES:
        return _NAMES[value.lower()]
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        try:
            return DType(int(value))
        except ValueError:
            pass
    try:
        as_numpy = np.dtype(value)
    except TypeError:
        as_numpy = None
    if as_numpy == np.float32:
        return DType.F32
    if as_numpy == np.float16:
        return DType.F16
    raise DtypeError("{}: expected 'f32', 'f16', 'bf16' or a rill.DType, got {!r}".format(argument, value))


def inferred_dtype(arr, convert_hint):
    """The DType of a numpy array given without a dtype: float32 and float16
    arrays only. convert_hint: the dtype= values the error suggests."""
    if arr.dtype == np.float32:
        return DType.F32
    if arr.dtype == np.float16:
        return DType.F16
    if arr.dtype == np.uint16:
        raise DtypeError("array: a uint16 array is ambiguous; pass dtype='bf16' if it holds bfloat16 bits")
    raise DtypeError("array: expected float32 or float16 (or pass {} to convert), got {}".format(
        convert_hint, arr.dtype))


def storage_numpy_dtype(dtype):
    """The numpy dtype that holds a rill dtype's bits (uint16 for bf16)."""
    return _STORAGE[as_dtype(dtype)]


def f32_to_bf16(array):
    """float32 values -> bfloat16 bits (uint16), rounded to nearest even; NaN stays NaN."""
    a = np.ascontiguousarray(array, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def bf16_to_f32(bits):
    """bfloat16 bits (uint16) -> float32 values (exact)."""
    b = np.ascontiguousarray(bits)
    if b.dtype != np.uint16:
        raise DtypeError("bf16_to_f32: expected a uint16 array of bfloat16 bits, got {}".format(b.dtype))
    return (b.astype(np.uint32) << 16).view(np.float32)


def _finite(value, argument):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError("{}: expected a finite number, got {!r}".format(argument, value))
    return float(value)


def int32_array(values, argument):
    """A contiguous int32 array of integer values, refusing values int32 cannot hold."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise InvalidArgumentError("{}: expected integers, got an array of {}".format(argument, arr.dtype))
    if arr.size and (arr.min() < -2**31 or arr.max() >= 2**31):
        raise InvalidArgumentError("{}: expected values that fit int32, got range [{}, {}]".format(
            argument, arr.min(), arr.max()))
    return np.ascontiguousarray(arr.ravel(), dtype=np.int32)


def _handle_query(function, convert):
    """A read-only property: convert(lib().<function>(self.handle))."""
    return property(lambda self: convert(getattr(lib(), function)(self.handle)))


def _check_shape(shape, argument="shape"):
    try:
        items = tuple(shape)
    except TypeError:
        items = None
    if items is None or any(isinstance(d, bool) or not isinstance(d, numbers.Integral) for d in items):
        raise InvalidArgumentError("{}: expected a sequence of 1 to {} ints, got {!r}".format(
            argument, MAX_DIMS, shape))
    dims = tuple(int(d) for d in items)
    if not 1 <= len(dims) <= MAX_DIMS:
        raise InvalidArgumentError("{}: expected 1 to {} dims, got {} ({})".format(
            argument, MAX_DIMS, len(dims), dims))
    if any(d < 1 for d in dims):
        raise ShapeError("{}: every dim must be >= 1, got {}".format(argument, dims))
    return dims


# --------------------------------------------------------------------------
# Library-level functions
# --------------------------------------------------------------------------

def version_number():
    """rill_version_number() of the loaded librill: MAJOR*10000 + MINOR*100 + PATCH."""
    return int(lib().rill_version_number())


def version():
    """(major, minor, patch) of the loaded librill."""
    v = version_number()
    return (v // 10000, v // 100 % 100, v % 100)


def status_string(status):
    return text(lib().rill_status_string(int(status)))


def last_error():
    return text(lib().rill_last_error())


def dtype_size(dtype):
    """Bytes per element (0 for a block dtype or a value that is not a dtype, as in C)."""
    return int(lib().rill_dtype_size(int(dtype)))


def dtype_block_elements(dtype):
    """Elements per block: 32 or 256 for a block dtype, 1 for f32/f16/bf16, 0 for no dtype."""
    return int(lib().rill_dtype_block_elements(int(dtype)))


def dtype_block_bytes(dtype):
    """Bytes per block (the element size for f32/f16/bf16), 0 for no dtype."""
    return int(lib().rill_dtype_block_bytes(int(dtype)))


def dtype_name(dtype):
    return text(lib().rill_dtype_name(int(dtype)))


_log_callback = None  # keeps the ctypes trampoline alive while librill may call it


def set_log_callback(fn, min_level=LogLevel.INFO):
    """Routes librill's log messages to fn(level: LogLevel, message: str).
    fn None restores the default (stderr, per the RILL_LOG variable). fn may be
    called from any thread that uses rill; exceptions it raises are printed by
    ctypes and otherwise ignored."""
    global _log_callback
    if fn is None:
        trampoline = LOG_FN()
    else:
        if not callable(fn):
            raise InvalidArgumentError("fn: expected a callable or None, got {!r}".format(fn))

        def call(level, message, _user_data):
            fn(LogLevel(level) if level in LogLevel._value2member_map_ else level, text(message))

        trampoline = LOG_FN(call)
    try:
        level = LogLevel(min_level)
    except ValueError:
        raise InvalidArgumentError("min_level: expected a rill.LogLevel, got {!r}".format(min_level)) from None
    check(lib().rill_set_log_callback(trampoline, None, int(level)))
    _log_callback = trampoline if fn is not None else None


def _config_bytes(config):
    if config is None:
        return None
    if not isinstance(config, str):
        raise InvalidArgumentError("config: expected TOML text (str) or None, got {}".format(type(config).__name__))
    return config.encode("utf-8")


def info_report(config=None):
    """The report `rill info` prints: version, backends, availability, devices."""
    encoded = _config_bytes(config)
    required = ctypes.c_size_t(0)
    check(lib().rill_info_report(encoded, None, 0, ctypes.byref(required)))
    buf = ctypes.create_string_buffer(required.value)
    check(lib().rill_info_report(encoded, buf, required.value, ctypes.byref(required)))
    return text(buf.value)


# --------------------------------------------------------------------------
# Context
# --------------------------------------------------------------------------

def destroy_after_sync(library, destroy_name, ctx_handle, handle):
    """Destroys a tensor, model or KV cache with librill's function destroy_name."""
    # Work queued on a GPU backend may still read or write the object.
    library.rill_context_synchronize(ctx_handle)
    getattr(library, destroy_name)(handle)


class Owned:
    """What every wrapper of a C object shares: the raw handle while open,
    close() (which closes the wrapper's _children first) and use in a with
    block. A subclass sets _argument and _class_name, which name it in the
    error for a closed handle ("tensor: this rill.Tensor is closed"), and
    _handle and _finalizer (a weakref.finalize that destroys the object)."""

    _children = ()  # wrappers closed before this one (a WeakSet where there are any)

    @property
    def handle(self):
        """The raw C pointer (an int) for calls through rill.lib()."""
        if not self._finalizer.alive:
            raise InvalidArgumentError("{}: this {} is closed".format(self._argument, self._class_name))
        return self._handle

    @property
    def closed(self):
        return not self._finalizer.alive

    def close(self):
        """Closes what is still open in this object (a context's tensors and
        models, a model's KV caches), then the object itself."""
        for child in list(self._children):
            child.close()
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Context(Owned):
    """One backend device and its queue (rill_context). Use as a context
    manager or call close(); otherwise it is released when collected.
    config: TOML text (see rill.h) or None for the defaults."""

    _argument, _class_name = "context", "rill.Context"

    def __init__(self, config=None):
        encoded = _config_bytes(config)
        handle = ctypes.c_void_p()
        check(lib().rill_context_create(encoded, ctypes.byref(handle)))
        self._adopt(handle.value)

    @classmethod
    def from_file(cls, path):
        """A context from a TOML config file."""
        handle = ctypes.c_void_p()
        check(lib().rill_context_create_from_file(os.fsencode(path), ctypes.byref(handle)))
        self = cls.__new__(cls)
        self._adopt(handle.value)
        return self

    def _adopt(self, handle):
        self._handle = handle
        self._children = weakref.WeakSet()  # tensors and models, closed before the context
        self._finalizer = weakref.finalize(self, lib().rill_context_destroy, handle)

    def __repr__(self):
        if self.closed:
            return "<rill.Context closed>"
        return "<rill.Context backend={!r} device={!r}>".format(self.backend_name, self.device_name)

    backend_name = _handle_query("rill_context_backend_name", text)
    device_name = _handle_query("rill_context_device_name", text)
    selection_report = _handle_query("rill_context_selection_report", text)

    def synchronize(self):
        check(lib().rill_context_synchronize(self.handle))

    # -- tensors -----------------------------------------------------------

    def empty(self, shape, dtype=DType.F32):
        """A new tensor whose contents are undefined until written."""
        dims = _check_shape(shape)
        kind = as_dtype(dtype)
        c_shape = (ctypes.c_int64 * len(dims))(*dims)
        handle = ctypes.c_void_p()
        check(lib().rill_tensor_create(self.handle, int(kind), len(dims), c_shape, ctypes.byref(handle)))
        return Tensor._adopt(self, handle.value)

    def tensor(self, array, dtype=None):
        """A new tensor holding a copy of a numpy array (or anything
        np.asarray accepts). Without dtype, float32 arrays become f32 and
        float16 arrays f16; other arrays need dtype. dtype 'bf16' takes a
        uint16 array of bfloat16 bits as is, or converts float values."""
        arr = np.asarray(array)
        kind = inferred_dtype(arr, "dtype='f32', 'f16' or 'bf16'") if dtype is None else as_dtype(dtype)
        t = self.empty(arr.shape, kind)
        t.write(arr)
        return t

    def _arg(self, value, argument, optional=False):
        """The raw handle of a tensor argument, after checking it is an open
        Tensor of this context."""
        if value is None:
            if optional:
                return None
            raise InvalidArgumentError("{}: expected a rill.Tensor, got None".format(argument))
        if not isinstance(value, Tensor):
            raise InvalidArgumentError("{}: expected a rill.Tensor{}, got {}".format(
                argument, " or None" if optional else "", type(value).__name__))
        if value.closed:
            raise InvalidArgumentError("{}: the tensor is closed".format(argument))
        if value._context is not self:
            raise InvalidArgumentError("{}: the tensor belongs to another context".format(argument))
        return value.handle

    # -- operators (see rill.h for the exact contracts) --------------------

    def residual_add(self, residual, update, gain=None, residual_scale=1.0, update_scale=1.0):
        """residual = residual_scale*residual + update_scale*(gain * update), in place."""
        check(lib().rill_residual_add(self.handle, self._arg(residual, "residual"), self._arg(update, "update"),
                                      self._arg(gain, "gain", True), _finite(residual_scale, "residual_scale"),
                                      _finite(update_scale, "update_scale")))
        return residual

    def rms_norm(self, x, weight=None, eps=1e-6, out=None):
        """out = x * rsqrt(mean(x^2) + eps) * weight per row; out None: a new tensor."""
        if out is None:
            out = self._like(x, "x")
        check(lib().rill_rms_norm(self.handle, self._arg(x, "x"), self._arg(weight, "weight", True),
                                  _finite(eps, "eps"), self._arg(out, "out")))
        return out

    def layer_norm(self, x, weight=None, bias=None, eps=1e-5, out=None):
        """out = (x - mean) * rsqrt(var + eps) * weight + bias per row (biased variance)."""
        if out is None:
            out = self._like(x, "x")
        check(lib().rill_layer_norm(self.handle, self._arg(x, "x"), self._arg(weight, "weight", True),
                                    self._arg(bias, "bias", True), _finite(eps, "eps"), self._arg(out, "out")))
        return out

    def fused_add_rms_norm(self, x, residual, gain=None, weight=None, eps=1e-6, residual_scale=1.0,
                           update_scale=1.0):
        """residual += scaled gain*x; x = rms_norm(residual) * weight. Both in place."""
        check(lib().rill_fused_add_rms_norm(
            self.handle, self._arg(x, "x"), self._arg(residual, "residual"), self._arg(gain, "gain", True),
            self._arg(weight, "weight", True), _finite(eps, "eps"), _finite(residual_scale, "residual_scale"),
            _finite(update_scale, "update_scale")))
        return x

    def fused_add_layer_norm(self, x, residual, gain=None, weight=None, bias=None, eps=1e-5, residual_scale=1.0,
                             update_scale=1.0):
        """residual += scaled gain*x; x = layer_norm(residual) * weight + bias. Both in place."""
        check(lib().rill_fused_add_layer_norm(
            self.handle, self._arg(x, "x"), self._arg(residual, "residual"), self._arg(gain, "gain", True),
            self._arg(weight, "weight", True), self._arg(bias, "bias", True), _finite(eps, "eps"),
            _finite(residual_scale, "residual_scale"), _finite(update_scale, "update_scale")))
        return x

    def gemm(self, a, w, bias=None, alpha=1.0, beta=0.0, out=None):
        """out[rows, N] = alpha * a[rows, K] @ w[N, K]^T + beta * out + bias[N].
        out None: a new tensor of a's leading dims and N (beta must be 0 then)."""
        if out is None:
            self._arg(a, "a")
            self._arg(w, "w")
            if w.ndim != 2:
                raise ShapeError("w: expected 2 dims [N, K], got shape {}".format(w.shape))
            if beta != 0:
                raise InvalidArgumentError("beta: must be 0 when out is None (a new out has no prior "
                                           "contents), got {!r}".format(beta))
            out = self.empty(a.shape[:-1] + (w.shape[0],), a.dtype)
        check(lib().rill_gemm(self.handle, self._arg(a, "a"), self._arg(w, "w"), self._arg(bias, "bias", True),
                              _finite(alpha, "alpha"), _finite(beta, "beta"), self._arg(out, "out")))
        return out

    def get_rows(self, table, ids, out=None, dtype=DType.F32):
        """out[i, :] = table[ids[i], :] (an embedding lookup; a block table is
        dequantized). out None: a new [len(ids), D] tensor of dtype."""
        handle = self._arg(table, "table")
        rows = int32_array(ids, "ids")
        if out is None:
            out = self.empty((len(rows), table.shape[-1]), dtype)
        check(lib().rill_get_rows(self.handle, handle, rows.ctypes.data_as(_library.c_int32_p), len(rows),
                                  self._arg(out, "out")))
        return out

    def rope(self, x, positions, theta=10000.0, rotary_dim=None):
        """Rotary embedding (NeoX rotate-half layout) of x [tokens, heads, hd] or
        [B, T, heads, hd] in place; positions: one int per token; rotary_dim
        None = hd."""
        handle = self._arg(x, "x")
        pos = int32_array(positions, "positions")
        dim = x.shape[-1] if rotary_dim is None else rotary_dim
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise InvalidArgumentError("rotary_dim: expected an int or None, got {!r}".format(rotary_dim))
        check(lib().rill_rope(self.handle, handle, pos.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), pos.size,
                              _finite(theta, "theta"), int(dim)))
        return x

    def rope_freqs(self, x, positions, inv_freq, attention_factor=1.0, rotary_dim=None):
        """rope with the inverse frequencies given (rotary_dim / 2 floats) and
        cos and sin multiplied by attention_factor (rill_rope_freqs)."""
        handle = self._arg(x, "x")
        pos = int32_array(positions, "positions")
        freqs = np.asarray(inv_freq)
        if freqs.dtype.kind not in "iuf":
            raise InvalidArgumentError("inv_freq: expected numbers, got an array of {}".format(freqs.dtype))
        freqs = np.ascontiguousarray(freqs.ravel(), dtype=np.float32)
        dim = x.shape[-1] if rotary_dim is None else rotary_dim
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise InvalidArgumentError("rotary_dim: expected an int or None, got {!r}".format(rotary_dim))
        check(lib().rill_rope_freqs(self.handle, handle, pos.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                                    pos.size, freqs.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), freqs.size,
                                    _finite(attention_factor, "attention_factor"), int(dim)))
        return x

    def _attention_operands(self, q, kv_lengths, scale, out):
        """What attention and attention_ex pass alike: the scale (None:
        1/sqrt(hd)), kv_lengths as a pointer to int32s (which keeps its array
        alive) and a count, and out (None: a new tensor of q's shape)."""
        self._arg(q, "q")
        if scale is None:
            scale = 1.0 / float(q.shape[-1]) ** 0.5
        lengths_ptr, count = None, 0
        if kv_lengths is not None:
            lengths = int32_array(kv_lengths, "kv_lengths")
            lengths_ptr, count = lengths.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), lengths.size
        if out is None:
            out = self._like(q, "q")
        return scale, lengths_ptr, count, out

    def attention(self, q, k, v, kv_lengths=None, scale=None, out=None):
        """Causal attention: q [B, T, Hq, hd], k and v [B, S, Hkv, hd];
        kv_lengths: B ints or None; scale None = 1/sqrt(hd); out None: a new
        tensor of q's shape."""
        scale, lengths_ptr, count, out = self._attention_operands(q, kv_lengths, scale, out)
        check(lib().rill_attention(self.handle, self._arg(q, "q"), self._arg(k, "k"), self._arg(v, "v"), lengths_ptr,
                                   count, _finite(scale, "scale"), self._arg(out, "out")))
        return out

    def attention_ex(self, q, k, v, kv_lengths=None, scale=None, window=0, softcap=0.0, out=None):
        """attention with a sliding window (0 = none) and a logit soft-cap
        (0 = off), as rill_attention_ex; the other arguments as attention."""
        from ._library import AttentionParams

        scale, lengths_ptr, count, out = self._attention_operands(q, kv_lengths, scale, out)
        params = AttentionParams(_finite(scale, "scale"), int(window), _finite(softcap, "softcap"))
        check(lib().rill_attention_ex(self.handle, self._arg(q, "q"), self._arg(k, "k"), self._arg(v, "v"),
                                      lengths_ptr, count, ctypes.byref(params), self._arg(out, "out")))
        return out

    def activation(self, fn, x, up=None, out=None):
        """out = fn(x) * up (gated) or fn(x); fn: a rill.ActFn. out None: a new tensor."""
        from ._model import ActFn

        try:
            kind = ActFn(fn)
        except ValueError:
            raise InvalidArgumentError("fn: expected a rill.ActFn, got {!r}".format(fn)) from None
        if out is None:
            out = self._like(x, "x")
        check(lib().rill_activation(self.handle, int(kind), self._arg(x, "x"), self._arg(up, "up", True),
                                    self._arg(out, "out")))
        return out

    def model(self, desc):
        """A new decoder stack in this context (rill.Model(ctx, desc))."""
        from ._model import Model

        return Model(self, desc)

    def _like(self, x, argument):
        self._arg(x, argument)
        return self.empty(x.shape, x.dtype)


# --------------------------------------------------------------------------
# Tensor
# --------------------------------------------------------------------------

class Tensor(Owned):
    """A row-major contiguous array of 1 to 4 dims in one context
    (rill_tensor). Create with Context.empty or Context.tensor. Keeps its
    context alive; released by close(), a with block, or when collected."""

    _argument, _class_name = "tensor", "rill.Tensor"

    def __init__(self):
        raise TypeError("create tensors with Context.empty(shape, dtype) or Context.tensor(array)")

    @classmethod
    def _adopt(cls, context, handle):
        self = cls.__new__(cls)
        self._context = context
        self._handle = handle
        library = lib()
        self._shape = tuple(int(library.rill_tensor_dim(handle, i)) for i in range(library.rill_tensor_ndim(handle)))
        self._dtype = DType(library.rill_tensor_dtype(handle))
        self._finalizer = weakref.finalize(self, destroy_after_sync, library, "rill_tensor_destroy", context._handle,
                                           handle)
        context._children.add(self)
        return self

    def __repr__(self):
        state = " closed" if self.closed else ""
        return "<rill.Tensor {} {}{}>".format(self._dtype.name.lower(), self._shape, state)

    @property
    def context(self):
        return self._context

    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def dtype(self):
        return self._dtype

    numel = _handle_query("rill_tensor_numel", int)
    nbytes = _handle_query("rill_tensor_nbytes", int)

    def _storage_shape(self):
        """The shape of the storage array: the tensor's, or [N, bytes per row] for a block dtype."""
        if dtype_size(self._dtype) == 0:
            return (self._shape[0], self.nbytes // self._shape[0])
        return self._shape

    def _check_array_shape(self, arr, argument, shape=None):
        expected = self._shape if shape is None else shape
        if arr.shape != expected:
            raise ShapeError("{}: expected shape {} (the tensor's), got {}".format(argument, expected, arr.shape))

    def write(self, array):
        """Copies an array of the tensor's shape in. An array already in the
        storage format (float32 for f32, float16 for f16, uint16 bits for bf16)
        is copied bit for bit; other float arrays are converted to float32 and
        rounded to the storage dtype by librill (nearest even)."""
        arr = np.asarray(array)
        storage = _STORAGE[self._dtype]
        self._check_array_shape(arr, "array", self._storage_shape() if arr.dtype == storage else None)
        if arr.dtype == storage:
            data = np.ascontiguousarray(arr)
            check(lib().rill_tensor_write(self.handle, data.ctypes.data, data.nbytes))
        elif arr.dtype.kind == "f":
            self.write_f32(arr)
        else:
            raise DtypeError("array: expected {} (raw {}) or a float array, got {}".format(
                storage, self._dtype.name.lower(), arr.dtype))

    def write_f32(self, array):
        """Copies float values in, converting them to the storage dtype."""
        arr = np.asarray(array)
        self._check_array_shape(arr, "array")
        if arr.dtype.kind != "f":
            raise DtypeError("array: expected a float array, got {}".format(arr.dtype))
        data = np.ascontiguousarray(arr, dtype=np.float32)
        check(lib().rill_tensor_write_f32(self.handle, data.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                          data.size))

    def read(self):
        """The contents in the storage format: float32, float16, or uint16 bits for bf16."""
        out = np.empty(self._storage_shape(), dtype=_STORAGE[self._dtype])
        check(lib().rill_tensor_read(self.handle, out.ctypes.data, out.nbytes))
        return out

    def read_f32(self):
        """The contents converted to float32."""
        out = np.empty(self._shape, dtype=np.float32)
        check(lib().rill_tensor_read_f32(self.handle, out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), out.size))
        return out

    def numpy(self):
        """Same as read()."""
        return self.read()

    def __array__(self, dtype=None, copy=None):
        arr = self.read()
        return arr if dtype is None else arr.astype(dtype)


def library_path():
    """Where librill was loaded from."""
    return _library.library_path()
