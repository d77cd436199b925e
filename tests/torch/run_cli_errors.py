#!/usr/bin/env python3
"""`rill run` on bad input: each must exit non-zero with a message that names
the file (and the tensor or key) at fault. Writes safetensors files by hand
(the format is an 8-byte header length, a JSON header, then the data) so that
it needs only numpy. Exit codes: 0 passed, 1 failed, 77 skipped (no numpy)."""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

from reference_imports import require

(np,) = require("numpy")

CONFIG = """[runtime]
backend = "cpu"
[model]
dtype = "f32"
num_layers = 1
hidden_size = 8
num_heads = 2
num_kv_heads = 1
intermediate_size = 12
"""


def weights_for_config():
    d, hd, hkv, inter = 8, 4, 1, 12
    p = "model.layers.0."
    shapes = {
        p + "self_attn.q_proj.weight": (8, d), p + "self_attn.k_proj.weight": (hkv * hd, d),
        p + "self_attn.v_proj.weight": (hkv * hd, d), p + "self_attn.o_proj.weight": (d, 8),
        p + "mlp.gate_proj.weight": (inter, d), p + "mlp.up_proj.weight": (inter, d),
        p + "mlp.down_proj.weight": (d, inter), p + "input_layernorm.weight": (d,),
        p + "post_attention_layernorm.weight": (d,), "model.norm.weight": (d,),
    }
    rng = np.random.default_rng(7)
    return {name: rng.standard_normal(shape).astype(np.float32) * 0.2 for name, shape in shapes.items()}


def write_safetensors(path, tensors, header_patch=None, truncate=0):
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        raw = array.tobytes()
        header[name] = {"dtype": {np.float32: "F32", np.float64: "F64"}[array.dtype.type],
                        "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if header_patch:
        header_patch(header)
    text = json.dumps(header).encode()
    data = struct.pack("<Q", len(text)) + text + b"".join(blobs)
    with open(path, "wb") as f:
        f.write(data[:len(data) - truncate] if truncate else data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rill", required=True)
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="rill-run-errors-") as tmp:
        def path(name):
            return os.path.join(tmp, name)

        with open(path("model.toml"), "w") as f:
            f.write(CONFIG)
        good = weights_for_config()
        write_safetensors(path("good.safetensors"), good)
        np.save(path("x.npy"), np.random.default_rng(1).standard_normal((1, 3, 8)).astype(np.float32))

        missing = dict(good)
        del missing["model.layers.0.mlp.up_proj.weight"]
        write_safetensors(path("missing.safetensors"), missing)
        misshapen = dict(good)
        misshapen["model.layers.0.self_attn.k_proj.weight"] = np.zeros((8, 8), np.float32)
        write_safetensors(path("misshapen.safetensors"), misshapen)
        write_safetensors(path("truncated.safetensors"), good, truncate=10)
        f64 = dict(good)
        f64["model.norm.weight"] = good["model.norm.weight"].astype(np.float64)
        write_safetensors(path("f64.safetensors"), f64)

        def overlap(header):
            header["model.norm.weight"]["data_offsets"] = list(header["model.layers.0.input_layernorm.weight"]["data_offsets"])
        write_safetensors(path("overlap.safetensors"), good, header_patch=overlap)
        np.save(path("x_f64.npy"), np.zeros((1, 3, 8)))
        np.save(path("x_rank2.npy"), np.zeros((3, 8), np.float32))
        np.save(path("x_wrong_d.npy"), np.zeros((1, 3, 6), np.float32))
        # Headers whose shape or header length claim far more than the file holds.
        header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4000000000000, 8), }"
        header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
        with open(path("x_huge_shape.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header)
        with open(path("x_huge_header.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + header)
        os.mkfifo(path("x_fifo.npy"))  # no writer: must be refused, not waited on
        with open(path("bad_heads.toml"), "w") as f:
            f.write(CONFIG.replace("num_kv_heads = 1", "num_kv_heads = 3"))
        with open(path("unknown_key.toml"), "w") as f:
            f.write(CONFIG + "rope_scaling = 2.0\n")

        base = ["--config", path("model.toml"), "--weights", path("good.safetensors"), "--input", path("x.npy"),
                "--output", path("y.npy")]

        def with_arg(flag, value):
            out = list(base)
            out[out.index(flag) + 1] = value
            return out

        cases = [
            ("missing tensor", with_arg("--weights", path("missing.safetensors")),
             ["missing.safetensors", "model.layers.0.mlp.up_proj.weight"]),
            ("wrong shape", with_arg("--weights", path("misshapen.safetensors")),
             ["misshapen.safetensors", "model.layers.0.self_attn.k_proj.weight", "[4, 8]", "[8, 8]"]),
            ("truncated safetensors", with_arg("--weights", path("truncated.safetensors")),
             ["truncated.safetensors", "truncated"]),
            ("unsupported tensor dtype", with_arg("--weights", path("f64.safetensors")),
             ["f64.safetensors", "model.norm.weight", "F64"]),
            ("overlapping tensors", with_arg("--weights", path("overlap.safetensors")),
             ["overlap.safetensors", "overlap"]),
            ("npy of float64", with_arg("--input", path("x_f64.npy")), ["x_f64.npy", "float32"]),
            ("npy of rank 2", with_arg("--input", path("x_rank2.npy")), ["x_rank2.npy", "[3, 8]"]),
            ("npy of the wrong width", with_arg("--input", path("x_wrong_d.npy")), ["x_wrong_d.npy", "hidden_size"]),
            ("npy shape past the file's end", with_arg("--input", path("x_huge_shape.npy")),
             ["x_huge_shape.npy", "truncated"]),
            ("npy header past the file's end", with_arg("--input", path("x_huge_header.npy")),
             ["x_huge_header.npy", "truncated"]),
            ("npy that is a named pipe", with_arg("--input", path("x_fifo.npy")), ["x_fifo.npy", "regular file"]),
            ("kv heads not dividing", with_arg("--config", path("bad_heads.toml")),
             ["bad_heads.toml:8:", "num_kv_heads"]),
            ("unknown model key", with_arg("--config", path("unknown_key.toml")),
             ["unknown_key.toml:10:", "rope_scaling"]),
            ("decode-from past the end", base + ["--decode-from", "4"], ["--decode-from 4"]),
            ("missing weights file", with_arg("--weights", path("nope.safetensors")), ["nope.safetensors"]),
        ]
        for label, argv, expected in cases:
            try:
                proc = subprocess.run([args.rill, "run", *argv], capture_output=True, text=True, timeout=20)
            except subprocess.TimeoutExpired:
                print(f"FAIL {label}: no answer within 20 s")
                failures.append(label)
                continue
            message = (proc.stdout + proc.stderr).strip()
            absent = [e for e in expected if e not in message]
            ok = proc.returncode != 0 and not absent
            print(f"{'ok  ' if ok else 'FAIL'} {label}: exit {proc.returncode}: {message}")
            if not ok:
                failures.append(label)
        proc = subprocess.run([args.rill, "run", *base], capture_output=True, text=True)
        if proc.returncode != 0 or np.load(path("y.npy")).shape != (1, 3, 8):
            failures.append("the good files")
            print(f"FAIL the good files: {proc.stdout}{proc.stderr}")
    print(f"{len(cases) + 1 - len(failures)}/{len(cases) + 1} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
