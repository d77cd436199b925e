#!/usr/bin/env python3
"""layer_reference.py reports what happened, checked with stand-ins for `rill`
that fail in set ways: the CPU backend refusing an op is a failure, a plugin
backend refusing one or an absent backend a skip, and a skip never hides a
failure found before it.

Exit codes: 0 passed, 1 a failure, 77 skipped (no torch, which
layer_reference.py needs).
"""
import os
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))

from reference_imports import require

require("torch")  # layer_reference.py's own requirement

# The stand-in: `rill run ... --input X --output Y ...` as the real one is called.
STAND_IN = '''#!{python}
import sys
import numpy as np
args = sys.argv[2:]
value = dict(zip(args, args[1:]))
mode = "{mode}"
if mode == "wrong_then_unsupported" and "/qwen2_f32/" in value["--output"]:
    np.save(value["--output"], np.zeros_like(np.load(value["--input"])))  # a wrong result
    sys.exit(0)
print("rill run: " + ("RILL_ERROR_BACKEND_UNAVAILABLE: no device" if mode == "unavailable"
                      else "RILL_ERROR_UNSUPPORTED: rill_attention: head_dim 16"))
sys.exit(1)
'''

# (stand-in mode, backend, the exit code layer_reference.py must give)
EXPECTED = [
    ("unsupported", "cpu", 1),
    ("unsupported", "vulkan", SKIP),
    ("unavailable", "cpu", SKIP),
    ("unavailable", "vulkan", SKIP),
    ("wrong_then_unsupported", "vulkan", 1),
]


def main():
    failures = []
    with tempfile.TemporaryDirectory(prefix="rill-reporting-") as workdir:
        for mode, backend, expected in EXPECTED:
            rill = os.path.join(workdir, mode)
            with open(rill, "w") as f:
                f.write(STAND_IN.format(python=sys.executable, mode=mode))
            os.chmod(rill, 0o755)
            proc = subprocess.run([sys.executable, os.path.join(HERE, "layer_reference.py"), "--rill", rill,
                                   "--backend", backend, "--case", "qwen2_f32", "--case", "qwen2_f16"],
                                  capture_output=True, text=True)
            verdict = "ok" if proc.returncode == expected else "FAIL"
            print(f"{mode:24s} on {backend:6s}: exit {proc.returncode}, expected {expected} {verdict}")
            if proc.returncode != expected:
                failures.append(f"{mode} on {backend}:\n{proc.stdout}{proc.stderr}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
