"""Shared fixtures of the Python binding's tests.

Run against a build tree with, e.g.:
    RILL_LIBRARY=<build>/lib/librill.so PYTHONPATH=bindings/python python3 -m pytest tests/python
RILL_TEST_BACKEND picks the backend the op tests use (default cpu).
"""

import os

import numpy as np
import pytest

import rill

BACKEND = os.environ.get("RILL_TEST_BACKEND", "cpu")


@pytest.fixture
def ctx():
    try:
        context = rill.Context('[runtime]\nbackend = "{}"\n'.format(BACKEND))
    except rill.BackendUnavailableError as exc:
        pytest.skip("backend {} not available: {}".format(BACKEND, exc))
    with context:
        yield context


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
