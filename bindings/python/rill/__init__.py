"""rill: Python bindings for rill's C API (include/rill.h) over ctypes.

    import numpy as np, rill
    with rill.Context('[runtime]\\nbackend = "cpu"\\n') as ctx:
        x = ctx.tensor(np.random.rand(4, 64).astype(np.float32))
        y = ctx.rms_norm(x, eps=1e-6)
        print(y.read())

Every failing call raises a subclass of RillError carrying rill_last_error().
The raw library, with every function of rill.h declared, is rill.lib().
"""

from ._core import (MAX_DIMS, Context, DType, LogLevel, Tensor, as_dtype, bf16_to_f32, dtype_block_bytes,
                    dtype_block_elements, dtype_name, dtype_size,
                    f32_to_bf16, info_report, last_error, library_path, set_log_callback, status_string,
                    storage_numpy_dtype, version, version_number)
from ._generate import Session, StopReason
from ._library import ModelDesc, SamplerParams, lib, load_library
from ._lm import LanguageModel
from ._model import ActFn, KVCache, MlpActivation, Model, NormKind, NormPlacement, QkNorm
from ._tokenizer import Detokenizer, Tokenizer
from .errors import (BackendError, BackendUnavailableError, ConfigError, DtypeError, InternalError,
                     InvalidArgumentError, IoError, LibraryNotFoundError, NotFoundError, OutOfMemoryError, RillError,
                     ShapeError, Status, UnsupportedError)

__version__ = "0.1.0"

__all__ = [
    "MAX_DIMS", "Context", "DType", "LogLevel", "Tensor", "as_dtype", "bf16_to_f32", "dtype_block_bytes",
    "dtype_block_elements", "dtype_name", "dtype_size",
    "f32_to_bf16", "info_report", "last_error", "library_path", "set_log_callback", "status_string",
    "storage_numpy_dtype", "version", "version_number", "lib", "load_library", "ModelDesc", "ActFn", "KVCache",
    "LanguageModel", "SamplerParams", "Session", "StopReason",
    "MlpActivation", "Model", "NormKind", "NormPlacement", "QkNorm", "Tokenizer", "Detokenizer", "BackendError",
    "BackendUnavailableError", "ConfigError", "DtypeError", "InternalError", "InvalidArgumentError", "IoError",
    "LibraryNotFoundError", "NotFoundError", "OutOfMemoryError", "RillError", "ShapeError", "Status", "UnsupportedError",
]
