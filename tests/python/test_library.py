"""The Python binding's library-level behaviour: loading, versions, errors,
lifetimes, logging, the info report."""

import ctypes
import gc
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import rill
from rill import _library

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HEADER = os.path.join(ROOT, "include", "rill.h")


def header_text():
    with open(HEADER, encoding="utf-8") as f:
        return f.read()


def c_to_ctypes():
    """The ctypes type each C type of rill.h must be declared as."""
    handle, handle_out = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
    return {
        "void": None, "rill_status": ctypes.c_int, "rill_dtype": ctypes.c_int, "rill_log_level": ctypes.c_int,
        "rill_act_fn": ctypes.c_int, "float": ctypes.c_float, "int32_t": ctypes.c_int32,
        "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t,
        "char*": ctypes.c_char_p, "void*": ctypes.c_void_p, "size_t*": ctypes.POINTER(ctypes.c_size_t),
        "float*": ctypes.POINTER(ctypes.c_float), "int32_t*": ctypes.POINTER(ctypes.c_int32),
        "int64_t*": ctypes.POINTER(ctypes.c_int64), "rill_log_fn": _library.LOG_FN,
        "rill_model_desc*": ctypes.POINTER(rill.ModelDesc),
        "rill_attention_params*": _library.c_attention_params_p,
        "rill_vulkan_device*": _library.c_vulkan_device_p,
        "rill_context*": handle, "rill_tensor*": handle, "rill_model*": handle, "rill_kv_cache*": handle,
        "rill_context**": handle_out, "rill_tensor**": handle_out, "rill_model**": handle_out,
        "rill_kv_cache**": handle_out, "rill_lm*": handle, "rill_lm**": handle_out,
        "rill_lm_load_options*": ctypes.POINTER(_library.LmLoadOptions),
        "rill_lm_info*": ctypes.POINTER(_library.LmInfo),
        "rill_tokenizer*": handle, "rill_detokenizer*": handle, "rill_tokenizer**": handle_out,
        "rill_detokenizer**": handle_out,
        "rill_sampler_params*": _library.c_sampler_params_p, "rill_sampler*": handle, "rill_sampler**": handle_out,
        "rill_session_options*": _library.c_session_options_p, "rill_session*": handle, "rill_session**": handle_out,
        "rill_token_fn": _library.TOKEN_FN, "rill_stop_reason*": ctypes.POINTER(ctypes.c_int),
    }


def c_type(declaration, named):
    """'const int64_t* shape' -> 'int64_t*'."""
    text = re.sub(r"\bconst\b", "", declaration).strip()
    if named:
        text = re.sub(r"\w+$", "", text)
    return re.sub(r"\s+", "", text)


def test_every_function_of_rill_h_is_declared_with_its_types():
    mapping = c_to_ctypes()
    found = re.findall(r"RILL_API\s+([^;{]*?)\b(rill_\w+)\s*\(([^)]*)\)\s*;", header_text())
    assert len(found) > 40
    assert {name for _, name, _ in found} == set(_library._PROTOTYPES), "missing here, or not in rill.h"
    library = rill.lib()
    for result, name, params in found:
        fn = getattr(library, name)  # the symbol exists in librill
        params = [] if params.strip() in ("", "void") else params.split(",")
        assert fn.restype is mapping[c_type(result, False)], name
        assert list(fn.argtypes) == [mapping[c_type(p, True)] for p in params], name


def test_version_matches_the_header():
    text = header_text()
    major, minor, patch = (int(re.search(r"#define RILL_VERSION_{} (\d+)".format(part), text).group(1))
                           for part in ("MAJOR", "MINOR", "PATCH"))
    assert rill.version() == (major, minor, patch)
    assert rill.version_number() == major * 10000 + minor * 100 + patch


def test_library_is_the_one_named_by_rill_library():
    expected = os.environ.get("RILL_LIBRARY")
    if not expected:
        pytest.skip("RILL_LIBRARY not set")
    assert os.path.realpath(rill.library_path()) == os.path.realpath(expected)


def test_missing_library_names_every_path_tried(tmp_path):
    missing = str(tmp_path / "no-such-librill.so")
    env = dict(os.environ, RILL_LIBRARY=missing, LD_LIBRARY_PATH=str(tmp_path))
    script = "import rill\ntry:\n    rill.version()\nexcept rill.LibraryNotFoundError as e:\n    print(e)\n"
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert missing in result.stdout
    assert "RILL_LIBRARY" in result.stdout
    assert "package folder" in result.stdout
    assert "system search path" in result.stdout


def test_status_and_dtype_names():
    for status in rill.Status:
        expected = "RILL_OK" if status == rill.Status.OK else "RILL_ERROR_" + status.name
        assert rill.status_string(status) == expected
    assert rill.status_string(12345) == "RILL_STATUS_UNKNOWN"
    assert [rill.dtype_size(d) for d in rill.DType] == [4, 2, 2, 0, 0, 0, 0, 0, 0, 0]
    assert [rill.dtype_name(d) for d in rill.DType] == ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k",
                                                        "q5_0", "q5_1"]
    assert [rill.dtype_block_elements(d) for d in rill.DType] == [1, 1, 1, 32, 32, 256, 256, 256, 32, 32]
    assert [rill.dtype_block_bytes(d) for d in rill.DType] == [4, 2, 2, 34, 18, 144, 176, 210, 22, 24]
    assert rill.dtype_size(10) == 0 and rill.dtype_name(10) == "invalid" and rill.dtype_block_bytes(10) == 0


def test_each_status_has_its_own_exception_class():
    classes = [rill.errors.error_for_status(s, "m").__class__ for s in rill.Status if s != rill.Status.OK]
    assert len(set(classes)) == len(classes)
    for s, cls in zip([s for s in rill.Status if s != rill.Status.OK], classes):
        assert issubclass(cls, rill.RillError) and cls.status == s
    unknown = rill.errors.error_for_status(99, "m")
    assert type(unknown) is rill.RillError and unknown.status == 99


def test_config_error_carries_last_error():
    with pytest.raises(rill.ConfigError) as info:
        rill.Context('[runtime]\nno_such_key = 1\n')
    assert "no_such_key" in info.value.message
    assert info.value.message == rill.last_error()
    assert info.value.status == rill.Status.CONFIG


def test_context_from_missing_file_is_io_error(tmp_path):
    with pytest.raises(rill.IoError) as info:
        rill.Context.from_file(tmp_path / "missing.toml")
    assert "missing.toml" in str(info.value)


def test_context_from_file(tmp_path):
    path = tmp_path / "rill.toml"
    path.write_text('[runtime]\nbackend = "cpu"\n')
    with rill.Context.from_file(path) as ctx:
        assert ctx.backend_name == "cpu"
        assert ctx.device_name
        assert "cpu" in ctx.selection_report


def test_config_must_be_text():
    with pytest.raises(rill.InvalidArgumentError, match="config"):
        rill.Context(b'[runtime]\n')


def test_tensor_keeps_its_context_alive(ctx):
    def make():
        local = rill.Context('[runtime]\nbackend = "cpu"\n')
        return local.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))

    t = make()
    gc.collect()
    assert not t.context.closed
    np.testing.assert_array_equal(t.read(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_closing_a_context_closes_its_tensors(ctx):
    t = ctx.empty((4,))
    other = rill.Context('[runtime]\nbackend = "cpu"\n')
    u = other.empty((4,))
    other.close()
    other.close()  # closing twice is harmless
    assert u.closed and other.closed
    with pytest.raises(rill.InvalidArgumentError, match="closed"):
        u.read()
    with pytest.raises(rill.InvalidArgumentError, match="closed"):
        other.synchronize()
    assert not t.closed


def test_closed_tensor_is_rejected_as_an_operand(ctx):
    x = ctx.tensor(np.ones((2, 8), np.float32))
    x.close()
    with pytest.raises(rill.InvalidArgumentError, match="x: the tensor is closed"):
        ctx.rms_norm(x)


def test_tensors_of_another_context_are_rejected(ctx):
    with rill.Context('[runtime]\nbackend = "cpu"\n') as other:
        x = other.tensor(np.ones((2, 8), np.float32))
        with pytest.raises(rill.InvalidArgumentError, match="another context"):
            ctx.rms_norm(x)


def test_log_callback_receives_messages():
    messages = []
    rill.set_log_callback(lambda level, text: messages.append((level, text)), rill.LogLevel.DEBUG)
    try:
        with rill.Context('[runtime]\nbackend = "cpu"\n'):
            pass
    finally:
        rill.set_log_callback(None)
    assert messages, "creating a context logs its backend selection"
    assert all(isinstance(level, rill.LogLevel) and isinstance(text, str) for level, text in messages)
    with pytest.raises(rill.InvalidArgumentError, match="min_level"):
        rill.set_log_callback(print, 17)


def test_info_report_lists_the_backends():
    report = rill.info_report()
    assert "rill {}.{}.{}".format(*rill.version()) in report
    for backend in ("cpu", "cuda", "vulkan"):
        assert backend in report
    with pytest.raises(rill.ConfigError):
        rill.info_report("[runtime]\nplugin_dir = 3\n")


def test_python_m_rill_info_prints_what_rill_info_prints():
    env = dict(os.environ)
    module = subprocess.run([sys.executable, "-m", "rill", "info"], env=env, capture_output=True, text=True)
    assert module.returncode == 0, module.stderr
    assert module.stdout == rill.info_report()
    tool = os.environ.get("RILL_TOOL")
    if not tool:
        pytest.skip("RILL_TOOL (the rill executable) not set")
    cli = subprocess.run([tool, "info"], env=env, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert module.stdout == cli.stdout


def test_python_m_rill_info_reports_a_bad_config_file(tmp_path):
    missing = tmp_path / "missing.toml"
    result = subprocess.run([sys.executable, "-m", "rill", "info", "--config", str(missing)], capture_output=True,
                            text=True)
    assert result.returncode == 1 and str(missing) in result.stderr and result.stdout == ""
    bad = tmp_path / "bad.toml"
    bad.write_text("[runtime]\nplugin_dir = 3\n")
    result = subprocess.run([sys.executable, "-m", "rill", "info", "--config", str(bad)], capture_output=True,
                            text=True)
    assert result.returncode == 1 and "plugin_dir" in result.stderr


def test_python_m_rill_runs_the_tool_for_other_commands():
    tool = os.environ.get("RILL_TOOL")
    if not tool:
        pytest.skip("RILL_TOOL (the rill executable) not set")
    module = subprocess.run([sys.executable, "-m", "rill", "run", "--help"], capture_output=True, text=True)
    cli = subprocess.run([tool, "run", "--help"], capture_output=True, text=True)
    assert module.returncode == cli.returncode == 0, module.stderr
    assert module.stdout == cli.stdout and module.stdout.startswith("usage: rill run")
    bad = subprocess.run([sys.executable, "-m", "rill", "generate", "--max-new-tokens"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--max-new-tokens" in bad.stderr  # the tool's status and message come through


def test_python_m_rill_without_a_tool_says_where_it_looked():
    env = {k: v for k, v in os.environ.items() if k != "RILL_TOOL"}
    result = subprocess.run([sys.executable, "-m", "rill", "generate", "--help"], env=env, capture_output=True,
                            text=True)
    assert result.returncode == 1 and result.stdout == ""
    assert "package folder" in result.stderr and "RILL_TOOL: not set" in result.stderr
