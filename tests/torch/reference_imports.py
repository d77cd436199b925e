"""What every reference script does before its own code: the test folders it
imports from on sys.path, a venv's site-packages beside this interpreter's
own, and the third-party modules it needs, or a skip (never a pass) without
them."""
import glob
import importlib
import os
import sys

from outcome import SKIP

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def use_test_folders(*names):
    """tests/NAME for each name on sys.path, ahead of the rest, in the order given."""
    for name in reversed(names):
        sys.path.insert(0, os.path.join(TESTS, name))


def use_venv(venv):
    """venv's site-packages after this interpreter's own (nothing when venv is empty or None)."""
    if venv:
        sys.path += glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))


def require(*names):
    """The modules named, imported, in order; else prints which is missing and exits with SKIP."""
    try:
        return [importlib.import_module(name) for name in names]
    except ImportError as missing:
        print(f"skipped: {missing}")
        sys.exit(SKIP)
