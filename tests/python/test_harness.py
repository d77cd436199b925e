"""The shared fixtures report what they must: an op the CPU backend refuses is
a failure, on a plugin backend a skip."""

import pytest

import conftest
import rill


def refuse():
    with conftest.optional_op():
        raise rill.UnsupportedError("rill_rope: not supported by this backend")


def test_unsupported_on_cpu_is_a_failure(monkeypatch):
    monkeypatch.setattr(conftest, "BACKEND", "cpu")
    try:
        refuse()
    except pytest.skip.Exception:  # caught here, or this test would itself be skipped
        pytest.fail("an op the CPU backend refuses was skipped")
    except rill.UnsupportedError:
        return
    pytest.fail("the CPU backend's UNSUPPORTED was swallowed")


def test_unsupported_on_a_plugin_backend_is_a_skip(monkeypatch):
    monkeypatch.setattr(conftest, "BACKEND", "vulkan")
    with pytest.raises(pytest.skip.Exception):
        refuse()
