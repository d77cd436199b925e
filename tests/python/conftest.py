"""Shared fixtures of the Python binding's tests.

Run against a build tree with, e.g.:
    RILL_LIBRARY=<build>/lib/librill.so PYTHONPATH=bindings/python python3 -m pytest tests/python
RILL_TEST_BACKEND picks the backend the op tests use (default cpu). When that
backend is not available here its tests are skipped and the run exits with 77,
which CTest reports as skipped.
"""

import contextlib
import os

import numpy as np
import pytest

import rill

BACKEND = os.environ.get("RILL_TEST_BACKEND", "cpu")
SKIPPED_EXIT_CODE = 77
_backend_missing = []


def _config():
    return '[runtime]\nbackend = "{}"\n'.format(BACKEND)


@pytest.fixture
def ctx():
    try:
        context = rill.Context(_config())
    except rill.BackendUnavailableError as exc:
        _backend_missing.append(str(exc))
        pytest.skip("backend {} not available: {}".format(BACKEND, exc))
    with context:
        yield context


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@contextlib.contextmanager
def optional_op():
    """Decoder-layer ops are optional on a plugin backend (RILL_ERROR_UNSUPPORTED):
    skip there. The CPU backend runs every op, so there it is a failure."""
    try:
        yield
    except rill.UnsupportedError as exc:
        if BACKEND == "cpu":
            raise
        pytest.skip("not supported on {}: {}".format(BACKEND, exc))


def pytest_sessionfinish(session, exitstatus):
    if _backend_missing and exitstatus == 0:
        session.exitstatus = SKIPPED_EXIT_CODE
