"""Finding librill and declaring the C functions of rill.h to ctypes.

Search order: the path given to load_library(); else the package's own
folder, where the wheel puts the librill it was built with (with the plugins
beside it), so that an installed package always uses its own librill; then the
RILL_LIBRARY environment variable (a file or a folder: a source checkout on
PYTHONPATH has no librill in its package folder); then the system library
search path. Each attempt is recorded so that a failure says what was tried
and why it failed.
"""

import ctypes
import ctypes.util
import os
import sys
import threading

from .errors import LibraryNotFoundError, error_for_status

# The binding's folder: a wheel holds librill, its plugins and the rill tool here.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# The ABI this binding was written against: rill.h 0.x. A library of another
# major version has another ABI and is refused.
ABI_MAJOR = 0

c_size_p = ctypes.POINTER(ctypes.c_size_t)
c_float_p = ctypes.POINTER(ctypes.c_float)
c_int32_p = ctypes.POINTER(ctypes.c_int32)
c_int64_p = ctypes.POINTER(ctypes.c_int64)
c_void_pp = ctypes.POINTER(ctypes.c_void_p)

# void (*rill_log_fn)(rill_log_level level, const char* message, void* user_data)
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


ROPE_MAX_FACTORS = 256  # RILL_ROPE_MAX_FACTORS
MAX_MLP_ONLY_LAYERS = 256  # RILL_MAX_MLP_ONLY_LAYERS


class ModelDesc(ctypes.Structure):
    """rill_model_desc, field for field. Create it with rill.ModelDesc() (the
    defaults of rill_model_desc_init) or rill.ModelDesc.from_toml(text)."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("dtype", ctypes.c_int),
        ("num_layers", ctypes.c_int32),
        ("hidden_size", ctypes.c_int32),
        ("num_heads", ctypes.c_int32),
        ("num_kv_heads", ctypes.c_int32),
        ("head_dim", ctypes.c_int32),
        ("intermediate_size", ctypes.c_int32),
        ("norm", ctypes.c_int),
        ("norm_eps", ctypes.c_float),
        ("norm_placement", ctypes.c_int),
        ("activation", ctypes.c_int),
        ("rope_theta", ctypes.c_float),
        ("rope_dim", ctypes.c_int32),
        ("qkv_bias", ctypes.c_uint32),
        ("o_bias", ctypes.c_uint32),
        ("mlp_bias", ctypes.c_uint32),
        ("final_norm", ctypes.c_uint32),
        ("residual_scale", ctypes.c_float),
        ("branch_scale", ctypes.c_float),
        ("layer_scale", ctypes.c_uint32),
        ("qk_norm", ctypes.c_int),
        ("norm_weight_offset", ctypes.c_float),
        ("query_pre_attn_scalar", ctypes.c_float),
        ("parallel_residual", ctypes.c_uint32),
        ("parallel_norms", ctypes.c_int32),
        ("sliding_window", ctypes.c_int32),
        ("sliding_window_pattern", ctypes.c_int32),
        ("max_window_layers", ctypes.c_int32),
        ("attn_logit_softcapping", ctypes.c_float),
        ("rope_local_base_freq", ctypes.c_float),
        ("rope_type", ctypes.c_int),
        ("rope_factor", ctypes.c_float),
        ("max_position_embeddings", ctypes.c_int32),
        ("rope_original_max_position_embeddings", ctypes.c_int32),
        ("rope_low_freq_factor", ctypes.c_float),
        ("rope_high_freq_factor", ctypes.c_float),
        ("rope_beta_fast", ctypes.c_float),
        ("rope_beta_slow", ctypes.c_float),
        ("rope_attention_factor", ctypes.c_float),
        ("rope_factor_count", ctypes.c_int32),
        ("rope_short_factor", ctypes.c_float * ROPE_MAX_FACTORS),
        ("rope_long_factor", ctypes.c_float * ROPE_MAX_FACTORS),
        ("no_rope_layer_interval", ctypes.c_int32),
        ("num_experts", ctypes.c_int32),
        ("num_experts_per_tok", ctypes.c_int32),
        ("norm_topk_prob", ctypes.c_uint32),
        ("moe_intermediate_size", ctypes.c_int32),
        ("shared_expert_intermediate_size", ctypes.c_int32),
        ("rope_interleave", ctypes.c_uint32),
        ("decoder_sparse_step", ctypes.c_int32),
        ("mlp_only_layer_count", ctypes.c_int32),
        ("mlp_only_layers", ctypes.c_int32 * MAX_MLP_ONLY_LAYERS),
        ("weight_format", ctypes.c_int),
        ("clip_qkv", ctypes.c_float),
    ]

    def __init__(self, **fields):
        super().__init__()
        lib().rill_model_desc_init(ctypes.byref(self))
        for name, value in fields.items():
            if name not in self._field_names():
                raise AttributeError("ModelDesc has no field {!r}".format(name))
            setattr(self, name, value)

    @classmethod
    def _field_names(cls):
        return [name for name, _ in cls._fields_]

    @classmethod
    def from_toml(cls, toml, source_name=None):
        """Parses the [model] table of TOML text (rill_model_desc_from_toml)."""
        desc = cls()
        check(lib().rill_model_desc_from_toml(toml.encode("utf-8"),
                                              None if source_name is None else source_name.encode("utf-8"),
                                              ctypes.byref(desc)))
        return desc

    def __repr__(self):
        return "rill.ModelDesc({})".format(", ".join(
            "{}={!r}".format(name, getattr(self, name)) for name in self._field_names()[1:]))


c_desc_p = ctypes.POINTER(ModelDesc)


class AttentionParams(ctypes.Structure):
    """rill_attention_params, field for field; struct_size is filled in."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("scale", ctypes.c_float),
        ("window", ctypes.c_int32),
        ("softcap", ctypes.c_float),
    ]

    def __init__(self, scale, window=0, softcap=0.0):
        super().__init__(ctypes.sizeof(AttentionParams), scale, window, softcap)


c_attention_params_p = ctypes.POINTER(AttentionParams)


class VulkanDevice(ctypes.Structure):
    """rill_vulkan_device: a host's Vulkan handles (as integers); struct_size is filled in."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("instance", ctypes.c_void_p),
        ("physical_device", ctypes.c_void_p),
        ("device", ctypes.c_void_p),
        ("queue", ctypes.c_void_p),
        ("queue_family", ctypes.c_uint32),
        ("storage_16bit", ctypes.c_uint32),
    ]

    def __init__(self, instance, physical_device, device, queue, queue_family, storage_16bit=False):
        super().__init__(ctypes.sizeof(VulkanDevice), instance, physical_device, device, queue, queue_family,
                         1 if storage_16bit else 0)


c_vulkan_device_p = ctypes.POINTER(VulkanDevice)


class LmLoadOptions(ctypes.Structure):
    """rill_lm_load_options."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("override_dtype", ctypes.c_uint32), ("dtype", ctypes.c_int),
                ("weight_format", ctypes.c_int), ("copy_weights", ctypes.c_uint32)]


class LmInfo(ctypes.Structure):
    """rill_lm_info."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("vocab_size", ctypes.c_int32),
        ("hidden_size", ctypes.c_int32),
        ("num_layers", ctypes.c_int32),
        ("max_position_embeddings", ctypes.c_int32),
        ("dtype", ctypes.c_int),
        ("bos_token_id", ctypes.c_int32),
        ("eos_token_count", ctypes.c_int32),
        ("eos_token_ids", ctypes.c_int32 * 8),
        ("do_sample", ctypes.c_uint32),
        ("temperature", ctypes.c_float),
        ("top_k", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("min_p", ctypes.c_float),
        ("repetition_penalty", ctypes.c_float),
        ("model_type", ctypes.c_char * 64),
        ("weight_bytes", ctypes.c_uint64),
        ("weight_bytes_mapped", ctypes.c_uint64),
    ]


class SamplerParams(ctypes.Structure):
    """rill_sampler_params, field for field; SamplerParams() holds rill_sampler_params_init's defaults."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("temperature", ctypes.c_float),
        ("top_k", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("min_p", ctypes.c_float),
        ("repetition_penalty", ctypes.c_float),
        ("presence_penalty", ctypes.c_float),
        ("frequency_penalty", ctypes.c_float),
        ("seed", ctypes.c_uint64),
    ]

    def __init__(self, **fields):
        super().__init__(ctypes.sizeof(SamplerParams), 1.0, 0, 1.0, 0.0, 1.0, 0.0, 0.0, 0)
        for name, value in fields.items():
            if name not in dict(self._fields_) or name == "struct_size":
                raise TypeError("SamplerParams: no field {!r}".format(name))
            setattr(self, name, value)


c_sampler_params_p = ctypes.POINTER(SamplerParams)


class SessionOptions(ctypes.Structure):
    """rill_session_options, field for field; fill with rill_session_options_init."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("capacity", ctypes.c_int32),
        ("max_new_tokens", ctypes.c_int32),
        ("prefill_chunk", ctypes.c_int32),
        ("sampler", SamplerParams),
    ]


c_session_options_p = ctypes.POINTER(SessionOptions)
# int (*rill_token_fn)(void* user_data, int32_t token, const char* text, size_t text_len)
TOKEN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_char),
                            ctypes.c_size_t)
_vp = ctypes.c_void_p
_st = ctypes.c_int  # rill_status, rill_dtype and rill_log_level are 32-bit enums
_f = ctypes.c_float

# name: (restype, argtypes) for every function of include/rill.h.
_PROTOTYPES = {
    "rill_version_number": (ctypes.c_uint32, []),
    "rill_status_string": (ctypes.c_char_p, [_st]),
    "rill_last_error": (ctypes.c_char_p, []),
    "rill_dtype_size": (ctypes.c_size_t, [_st]),
    "rill_dtype_name": (ctypes.c_char_p, [_st]),
    "rill_dtype_block_elements": (ctypes.c_size_t, [_st]),
    "rill_dtype_block_bytes": (ctypes.c_size_t, [_st]),
    "rill_set_log_callback": (_st, [LOG_FN, _vp, _st]),
    "rill_info_report": (_st, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, c_size_p]),
    "rill_context_create": (_st, [ctypes.c_char_p, c_void_pp]),
    "rill_context_create_from_file": (_st, [ctypes.c_char_p, c_void_pp]),
    "rill_context_create_on_vulkan_device": (_st, [ctypes.c_char_p, c_vulkan_device_p, c_void_pp]),
    "rill_context_vulkan_wait": (_st, [_vp, ctypes.c_uint64, ctypes.c_uint64]),
    "rill_context_vulkan_signal": (_st, [_vp, ctypes.c_uint64, ctypes.c_uint64]),
    "rill_context_destroy": (None, [_vp]),
    "rill_context_backend_name": (ctypes.c_char_p, [_vp]),
    "rill_context_device_name": (ctypes.c_char_p, [_vp]),
    "rill_context_selection_report": (ctypes.c_char_p, [_vp]),
    "rill_context_synchronize": (_st, [_vp]),
    "rill_tensor_create": (_st, [_vp, _st, ctypes.c_int32, c_int64_p, c_void_pp]),
    "rill_tensor_destroy": (None, [_vp]),
    "rill_tensor_write": (_st, [_vp, _vp, ctypes.c_size_t]),
    "rill_tensor_read": (_st, [_vp, _vp, ctypes.c_size_t]),
    "rill_tensor_write_f32": (_st, [_vp, c_float_p, ctypes.c_size_t]),
    "rill_tensor_read_f32": (_st, [_vp, c_float_p, ctypes.c_size_t]),
    "rill_tensor_dtype": (_st, [_vp]),
    "rill_tensor_ndim": (ctypes.c_int32, [_vp]),
    "rill_tensor_dim": (ctypes.c_int64, [_vp, ctypes.c_int32]),
    "rill_tensor_numel": (ctypes.c_size_t, [_vp]),
    "rill_tensor_nbytes": (ctypes.c_size_t, [_vp]),
    "rill_tensor_context": (_vp, [_vp]),
    "rill_residual_add": (_st, [_vp, _vp, _vp, _vp, _f, _f]),
    "rill_rms_norm": (_st, [_vp, _vp, _vp, _f, _vp]),
    "rill_layer_norm": (_st, [_vp, _vp, _vp, _vp, _f, _vp]),
    "rill_fused_add_rms_norm": (_st, [_vp, _vp, _vp, _vp, _vp, _f, _f, _f]),
    "rill_fused_add_layer_norm": (_st, [_vp, _vp, _vp, _vp, _vp, _vp, _f, _f, _f]),
    "rill_gemm": (_st, [_vp, _vp, _vp, _vp, _f, _f, _vp]),
    "rill_get_rows": (_st, [_vp, _vp, c_int32_p, ctypes.c_size_t, _vp]),
    "rill_rope": (_st, [_vp, _vp, c_int32_p, ctypes.c_size_t, _f, ctypes.c_int32]),
    "rill_rope_freqs": (_st, [_vp, _vp, c_int32_p, ctypes.c_size_t, ctypes.POINTER(_f), ctypes.c_size_t, _f,
                              ctypes.c_int32]),
    "rill_attention": (_st, [_vp, _vp, _vp, _vp, c_int32_p, ctypes.c_size_t, _f, _vp]),
    "rill_attention_ex": (_st, [_vp, _vp, _vp, _vp, c_int32_p, ctypes.c_size_t, c_attention_params_p, _vp]),
    "rill_activation": (_st, [_vp, _st, _vp, _vp, _vp]),
    "rill_model_desc_init": (None, [c_desc_p]),
    "rill_model_desc_from_toml": (_st, [ctypes.c_char_p, ctypes.c_char_p, c_desc_p]),
    "rill_model_create": (_st, [_vp, c_desc_p, c_void_pp]),
    "rill_model_destroy": (None, [_vp]),
    "rill_model_set_weight": (_st, [_vp, ctypes.c_char_p, _st, ctypes.c_int32, c_int64_p, _vp, ctypes.c_size_t]),
    "rill_model_load_safetensors": (_st, [_vp, ctypes.c_char_p]),
    "rill_model_check_weights": (_st, [_vp]),
    "rill_kv_cache_create": (_st, [_vp, ctypes.c_int32, ctypes.c_int32, c_void_pp]),
    "rill_kv_cache_destroy": (None, [_vp]),
    "rill_kv_cache_length": (ctypes.c_int32, [_vp, ctypes.c_int32]),  # deprecated in rill.h; unused
    "rill_kv_cache_get_length": (_st, [_vp, ctypes.c_int32, c_int32_p]),
    "rill_kv_cache_set_length": (_st, [_vp, ctypes.c_int32, ctypes.c_int32]),
    "rill_model_forward": (_st, [_vp, _vp, _vp, c_int32_p, ctypes.c_size_t]),
    "rill_lm_load_options_init": (None, [ctypes.POINTER(LmLoadOptions)]),
    "rill_lm_load": (_st, [_vp, ctypes.c_char_p, ctypes.POINTER(LmLoadOptions), c_void_pp]),
    "rill_lm_destroy": (None, [_vp]),
    "rill_lm_create_shared": (_st, [_vp, _vp, c_void_pp]),
    "rill_lm_get_info": (_st, [_vp, ctypes.POINTER(LmInfo)]),
    "rill_lm_model": (_vp, [_vp]),
    "rill_lm_logits": (_st, [_vp, _vp, ctypes.c_int32, ctypes.c_int32, c_int32_p, ctypes.c_uint32, c_float_p,
                             ctypes.c_size_t]),
    # tokenizer
    "rill_tokenizer_load": (_st, [ctypes.c_char_p, c_void_pp]),
    "rill_tokenizer_destroy": (None, [_vp]),
    "rill_tokenizer_vocab_size": (_st, [_vp, c_int32_p]),
    "rill_tokenizer_encode": (_st, [_vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32, c_int32_p,
                                    ctypes.c_size_t, c_size_p]),
    "rill_tokenizer_decode": (_st, [_vp, c_int32_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_char_p,
                                    ctypes.c_size_t, c_size_p]),
    "rill_tokenizer_token_to_id": (_st, [_vp, ctypes.c_char_p, c_int32_p]),
    "rill_detokenizer_create": (_st, [_vp, ctypes.c_uint32, c_void_pp]),
    "rill_detokenizer_push": (_st, [_vp, ctypes.c_int32, ctypes.c_char_p, ctypes.c_size_t, c_size_p]),
    "rill_detokenizer_flush": (_st, [_vp, ctypes.c_char_p, ctypes.c_size_t, c_size_p]),
    "rill_detokenizer_destroy": (None, [_vp]),
    "rill_sampler_params_init": (None, [c_sampler_params_p]),
    "rill_sampler_probabilities": (_st, [c_sampler_params_p, c_float_p, ctypes.c_size_t, c_int32_p, ctypes.c_size_t,
                                         c_float_p, ctypes.c_size_t]),
    "rill_sampler_create": (_st, [c_sampler_params_p, c_void_pp]),
    "rill_sampler_destroy": (None, [_vp]),
    "rill_sampler_sample": (_st, [_vp, c_float_p, ctypes.c_size_t, c_int32_p, ctypes.c_size_t, c_int32_p]),
    "rill_session_options_init": (None, [c_session_options_p, _vp]),
    "rill_session_create": (_st, [_vp, c_session_options_p, c_void_pp]),
    "rill_session_destroy": (None, [_vp]),
    "rill_session_set_sampler": (_st, [_vp, c_sampler_params_p]),
    "rill_session_set_eos_ids": (_st, [_vp, c_int32_p, ctypes.c_size_t]),
    "rill_session_append_ids": (_st, [_vp, c_int32_p, ctypes.c_size_t]),
    "rill_session_set_ids": (_st, [_vp, c_int32_p, ctypes.c_size_t]),
    "rill_session_rewind": (_st, [_vp, ctypes.c_int32]),
    "rill_session_get_ids": (_st, [_vp, c_int32_p, ctypes.c_size_t, c_size_p]),
    "rill_session_step": (_st, [_vp, ctypes.c_int32, TOKEN_FN, _vp, c_int32_p, ctypes.POINTER(_st)]),
    "rill_session_cancel": (None, [_vp]),
    "rill_session_set_tokenizer": (_st, [_vp, _vp]),
    "rill_session_append_text": (_st, [_vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32]),
    "rill_session_set_text": (_st, [_vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32]),
    "rill_session_add_stop_string": (_st, [_vp, ctypes.c_char_p, ctypes.c_size_t]),
    "rill_session_clear_stop_strings": (_st, [_vp]),
}

_lock = threading.Lock()
_loaded = None  # (CDLL, path)


def _platform_names():
    if sys.platform == "win32":
        return ["rill.dll"]
    if sys.platform == "darwin":
        return ["librill.dylib"]
    return ["librill.so", "librill.so.{}".format(ABI_MAJOR)]


def _declare(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _check_version(lib, path):
    version = lib.rill_version_number()
    if version // 10000 != ABI_MAJOR:
        raise OSError("{} is rill {}.{}.{}; this binding needs major version {}".format(
            path, version // 10000, version // 100 % 100, version % 100, ABI_MAJOR))


def _candidates(path):
    """(label, name-to-dlopen) in search order."""
    if path is not None:
        yield "load_library(path)", os.fspath(path)
        return
    for name in _platform_names():
        yield "package folder", os.path.join(PACKAGE_DIR, name)
    env = os.environ.get("RILL_LIBRARY")
    if env and os.path.isdir(env):
        for name in _platform_names():
            yield "RILL_LIBRARY folder", os.path.join(env, name)
    elif env:
        yield "RILL_LIBRARY", env
    found = ctypes.util.find_library("rill")
    if found:
        yield "system (find_library)", found
    for name in _platform_names():
        yield "system search path", name


def load_library(path=None):
    """Loads librill and returns the ctypes.CDLL with every function of rill.h
    declared. path: a file to load instead of searching. Later calls return
    the library already loaded; asking for a different path then is an error,
    because one process holds one librill."""
    global _loaded
    with _lock:
        if _loaded is not None:
            lib, loaded_path = _loaded
            if path is not None and os.path.realpath(os.fspath(path)) != os.path.realpath(loaded_path):
                raise OSError("librill is already loaded from {}; cannot switch to {}".format(loaded_path, path))
            return lib
        tried = []
        for label, candidate in _candidates(path):
            where = "{} ({})".format(candidate, label)
            if os.sep in candidate and not os.path.exists(candidate):
                tried.append((where, "no such file"))
                continue
            try:
                lib = ctypes.CDLL(candidate)
                _declare(lib)
                _check_version(lib, candidate)
            except (OSError, AttributeError) as exc:
                tried.append((where, str(exc)))
                continue
            _loaded = (lib, candidate)
            return lib
        raise LibraryNotFoundError(tried)


def library_path():
    """The path or name librill was loaded from (loading it if needed)."""
    load_library()
    return _loaded[1]


def lib():
    """The loaded librill (see load_library)."""
    if _loaded is not None:
        return _loaded[0]
    return load_library()


def check(status):
    """Raises the exception for a nonzero rill_status, with rill_last_error()."""
    if status != 0:
        message = lib().rill_last_error().decode("utf-8", "replace")
        raise error_for_status(status, message)


def text(value):
    """A char* result as str ("" for NULL)."""
    return value.decode("utf-8", "replace") if value else ""
