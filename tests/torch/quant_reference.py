"""rill's block formats against PyPI's gguf package (gguf.quants), an
independent implementation of GGUF's reference quantizers:
  - dequantization of every format is bit for bit gguf's, on random blocks;
  - quantization is bit for bit gguf's where gguf.quants implements it (Q8_0,
    Q4_0, Q5_0, Q5_1); for the other formats rill's own quantizer is checked against the
    format's error bound (on the values gguf dequantizes) and for stability:
    quantizing the dequantized values gives back the same blocks.
rill is driven through its Python binding (PYTHONPATH, RILL_LIBRARY), gguf
comes from --venv (reference_venv.cmake). Exit codes: 0 passed, 1 a failure,
77 skipped (gguf or the binding missing).
"""

import argparse
import sys

import numpy as np

from outcome import conclude
from reference_imports import require, use_venv

FORMATS = ("q8_0", "q4_0", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k")
# Per element, |x - dequantized| may not exceed this many quantization levels
# of the block's coarsest sub-block: a level is the sub-block's range over its
# level count (Q8_0/Q4_0/Q5_0/Q5_1: the block's). Rounding to nearest costs half a level
# where the scales are exact; the rounding of the scales to f16 (coarse where
# a tiny block's d is subnormal in f16), of the K formats' 6-bit scales and
# mins to their grid, and Q4_0's and Q5_0's asymmetric range (the far end of the sign
# without the extra level lies 7/8 of the way) add the rest. Measured worst
# case beside each bound.
LEVELS_BOUND = {"q8_0": 1.0,   # 0.658 (a block of N(0, 1e-3) values, d subnormal in f16)
                "q4_0": 1.1,   # 0.928
                "q5_0": 1.0,   # 0.785
                "q5_1": 1.0,   # 0.514
                "q4_k": 1.0,   # 0.499
                "q5_k": 1.0,   # 0.499
                "q6_k": 1.0}   # 0.549
# NMSE of quantize -> dequantize on N(0, 1) data, about twice the measured figure.
NMSE_LIMIT = {"q8_0": 6.0e-5,  # 2.87e-5
              "q4_0": 1.5e-2,  # 7.34e-3
              "q5_0": 4.0e-3,  # 1.83e-3
              "q5_1": 3.0e-3,  # 1.43e-3
              "q4_k": 1.2e-2,  # 6.17e-3
              "q5_k": 3.0e-3,  # 1.46e-3
              "q6_k": 8.0e-4}  # 3.73e-4
LEVELS = {"q8_0": 254, "q4_0": 15, "q5_0": 31, "q5_1": 31, "q4_k": 15, "q5_k": 31, "q6_k": 62}
SUB_BLOCK = {"q8_0": 32, "q4_0": 32, "q5_0": 32, "q5_1": 32, "q4_k": 32, "q5_k": 32, "q6_k": 16}
BLOCK32 = ("q8_0", "q4_0", "q5_0", "q5_1")


def random_blocks(rng, qtype, gguf, rows, cols):
    """Random raw blocks whose f16 scale fields hold finite values."""
    block, nbytes = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(rows, cols // block, nbytes), dtype=np.uint8)
    scales = lambda n: rng.normal(0, 0.05, size=(rows, cols // block, n)).astype(np.float16).view(np.uint8)
    name = qtype.name
    if name in ("Q8_0", "Q4_0", "Q5_0"):
        raw[..., 0:2] = scales(1)
    elif name in ("Q4_K", "Q5_K", "Q5_1"):
        raw[..., 0:4] = scales(2)
    else:  # Q6_K: d last
        raw[..., nbytes - 2:] = scales(1)
    return raw.reshape(rows, -1)


def test_data(rng, cols):
    """Rows that exercise the quantizers: normal data, large and small scales,
    all zeros, a constant, one outlier, one sign only, a sparse row."""
    rows = [rng.normal(0, 1, cols), rng.normal(0, 1e-3, cols), rng.normal(0, 30, cols), np.zeros(cols),
            np.full(cols, 0.25), np.where(np.arange(cols) == 5, 40.0, rng.normal(0, 0.1, cols)),
            np.abs(rng.normal(0, 1, cols)), -np.abs(rng.normal(0, 1, cols)),
            np.where(rng.random(cols) < 0.1, rng.normal(0, 1, cols), 0.0)]
    return np.stack(rows).astype(np.float32)


def worst_levels(x, y, fmt):
    """The largest |x - y| in units of the coarsest sub-block's level, per block."""
    sub = SUB_BLOCK[fmt]
    block = 32 if fmt in BLOCK32 else 256
    xs = x.reshape(-1, block // sub, sub)
    if fmt in ("q4_k", "q5_k"):
        level = (xs.max(axis=-1) - np.minimum(xs.min(axis=-1), 0)) / LEVELS[fmt]
    elif fmt == "q5_1":
        level = (xs.max(axis=-1) - xs.min(axis=-1)) / LEVELS[fmt]
    else:
        level = 2 * np.abs(xs).max(axis=-1) / LEVELS[fmt]
    coarsest = level.max(axis=-1)
    err = np.abs(x - y).reshape(-1, block).max(axis=-1)
    ok = coarsest > 0
    if np.any(err[~ok] > 0):
        return np.inf
    return float((err[ok] / coarsest[ok]).max()) if ok.any() else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", help="a virtual environment holding gguf (see reference_venv.cmake)")
    args = parser.parse_args()
    use_venv(args.venv)
    gguf, _, rill = require("gguf", "gguf.quants", "rill")

    rng = np.random.default_rng(12)
    failed = []
    cols = 512
    with rill.Context('[runtime]\nbackend = "cpu"\n') as ctx:
        for fmt in FORMATS:
            qtype = getattr(gguf.GGMLQuantizationType, fmt.upper())
            dtype = getattr(rill.DType, fmt.upper())
            block, nbytes = gguf.GGML_QUANT_SIZES[qtype]
            if (rill.dtype_block_elements(dtype), rill.dtype_block_bytes(dtype)) != (block, nbytes):
                failed.append(f"{fmt}: rill's block is {rill.dtype_block_elements(dtype)} elements in "
                              f"{rill.dtype_block_bytes(dtype)} bytes, gguf's {block} in {nbytes}")
                continue

            # Dequantization: random blocks, bit for bit.
            raw = random_blocks(rng, qtype, gguf, 64, cols)
            t = ctx.empty((64, cols), dtype)
            t.write(raw)
            mine = t.read_f32()
            theirs = gguf.quants.dequantize(raw, qtype).astype(np.float32)
            differing = int(np.count_nonzero(mine.view(np.uint32) != theirs.view(np.uint32)))
            if differing:
                failed.append(f"{fmt}: dequantize: {differing} of {mine.size} values differ from gguf's bits")

            # Quantization.
            x = test_data(rng, cols)
            t = ctx.empty(x.shape, dtype)
            t.write_f32(x)
            q = t.read()
            try:
                reference = gguf.quants.quantize(x, qtype)
            except NotImplementedError:
                reference = None
            if reference is not None:
                differing = int(np.count_nonzero(q != reference))
                note = "bit for bit gguf's"
                if differing:
                    failed.append(f"{fmt}: quantize: {differing} of {q.size} bytes differ from gguf.quants.quantize")
            else:
                note = "gguf.quants has no quantizer"
            y = gguf.quants.dequantize(q, qtype).astype(np.float32)
            levels = worst_levels(x, y, fmt)
            if not levels <= LEVELS_BOUND[fmt]:
                failed.append(f"{fmt}: quantize: an error of {levels:.4f} levels, bound {LEVELS_BOUND[fmt]}")
            t.write_f32(y)
            if not np.array_equal(t.read(), q):
                changed = int(np.count_nonzero(t.read() != q))
                failed.append(f"{fmt}: quantize(dequantize(q)) != q: {changed} bytes changed")
            g = rng.normal(0, 1, (256, cols)).astype(np.float32)
            tg = ctx.empty(g.shape, dtype)
            tg.write_f32(g)
            gy = gguf.quants.dequantize(tg.read(), qtype).astype(np.float64)
            nmse = float(((gy - g) ** 2).sum() / (g.astype(np.float64) ** 2).sum())
            if not nmse <= NMSE_LIMIT[fmt]:
                failed.append(f"{fmt}: quantize: NMSE {nmse:.3e} on N(0,1), limit {NMSE_LIMIT[fmt]:.1e}")
            print(f"{fmt}: dequantize bit for bit; quantize: {note}, worst error {levels:.4f} levels "
                  f"(bound {LEVELS_BOUND[fmt]}), NMSE {nmse:.3e} (limit {NMSE_LIMIT[fmt]:.1e}), stable")

        # Negative control: a one-bit change in a block (a q4_k quant, a q5_1 fifth bit) is seen by the
        # comparison.
        for fmt, byte in (("q4_k", 20), ("q5_1", 5)):
            qtype = getattr(gguf.GGMLQuantizationType, fmt.upper())
            raw = random_blocks(rng, qtype, gguf, 4, 256)
            t = ctx.empty((4, 256), getattr(rill.DType, fmt.upper()))
            broken = raw.copy()
            broken[0, byte] ^= 1
            t.write(broken)
            if np.array_equal(t.read_f32().view(np.uint32),
                              gguf.quants.dequantize(raw, qtype).astype(np.float32).view(np.uint32)):
                failed.append(f"negative control: a flipped bit in a {fmt} block went unnoticed")
    return conclude(failed, None, "cpu", "all formats agree with gguf.quants")


if __name__ == "__main__":
    sys.exit(main())
