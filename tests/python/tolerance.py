"""The one home of the Python tests' tolerances: how close rill's output must be
to a float64 reference, per storage dtype.

Three checks, each of which fails a comparison on its own:
  * every element is finite (NaN or Inf never passes);
  * NMSE = sum((got - ref)^2) / sum(ref^2), the conformance suite's metric, for
    errors spread over the whole tensor;
  * the worst element, max|got - ref| / rms(ref), so that a few wrong elements
    in a large tensor fail although they barely move the NMSE.

Each limit is at most 10x the worst figure measured on the CPU and Vulkan
(lavapipe) backends, written beside it. A profile groups the limits of one
kind of computation: a whole decoder stack accumulates more rounding than one op.
"""
import collections

import numpy as np

Limit = collections.namedtuple("Limit", "nmse worst")

PROFILES = {
    # Decoder stacks: rill run against the float64 PyTorch references
    # (tests/torch/layer_reference.py), worst of 58 cases x 3 modes x 2 backends;
    # also the binding's small model (tests/python/test_model.py, f32 measured
    # NMSE 6.8e-14, worst 6.3e-7). The f32 NMSE limit stays under 4.6e-12, what
    # the reference with eps 10x too large gives in deepnorm_layer, the case
    # least sensitive to eps.
    "layers": {
        "f32": Limit(nmse=1e-12, worst=1e-5),  # measured NMSE 3.4e-13 (Vulkan, gemma3_local), worst 2.9e-6
        "f16": Limit(nmse=8e-6, worst=5e-2),  # measured NMSE 1.7e-6 (gemma2_query_scalar), worst 7.1e-3
        "bf16": Limit(nmse=3.7e-4, worst=2e-1),  # measured NMSE 1.6e-4, worst 7.2e-2 (gemma3_local)
    },
    # Logits of whole language models from Hugging Face folders: rill logits
    # against transformers in float64 (tests/torch/lm_reference.py), worst of
    # 23 cases (18 model_types and variants) x 3 modes x 2 backends. Issue 11
    # asks f32 NMSE <= 1e-10; the limit sits under 10x the measured figure.
    "lm": {
        "f32": Limit(nmse=3e-12, worst=3e-5),  # measured NMSE 4.1e-13, worst 3.9e-6 (olmo2)
        "f16": Limit(nmse=2e-5, worst=6e-2),  # measured NMSE 2.9e-6 (gemma), worst 8.7e-3 (gemma2)
        "bf16": Limit(nmse=1e-3, worst=4e-1),  # measured NMSE 2.0e-4 (gemma), worst 8.0e-2 (olmo2)
    },
    # Logits of quantized GGUF models (tests/gguf/gguf_quant_reference.py)
    # against transformers in float64 on the weights gguf dequantizes: what is
    # left is the CPU backend's 8-bit quantization of the activations.
    "quant_lm": {
        # measured NMSE 2.98e-3 (llama, weight_format q8_0), worst 3.29e-1 (the
        # same); the negative control (the unquantized weights) NMSE 0.21-0.32,
        # worst 1.37-2.52. Random weights of std 0.15 amplify the 8-bit
        # activations' error (GEMM NMSE ~3e-5, docs/QUANTIZATION.md) through the stack.
        "f32": Limit(nmse=8e-3, worst=8e-1),
    },
    # The sampler's distribution (tests/generate/sampler_reference.py) against
    # transformers' logits processors in float64: rill computes in double and
    # rounds to f32 once.
    "sampler": {
        "f32": Limit(nmse=5e-13, worst=5e-6),  # measured NMSE 5.6e-14, worst 1.05e-6 (logits spread 30, -inf)
    },
    # One op of the Python binding against float64 numpy
    # (tests/python/test_tensors_ops.py), worst of every op on both backends.
    "ops": {
        "f32": Limit(nmse=1e-13, worst=4e-6),  # measured NMSE 1.1e-14 (attention), worst 4.7e-7
        "f16": Limit(nmse=5e-7, worst=1e-2),  # measured NMSE 5.5e-8, worst 1.1e-3 (residual_add)
        "bf16": Limit(nmse=3e-5, worst=7e-2),  # measured NMSE 3.2e-6 (gemm), worst 7.3e-3 (rms_norm)
    },
}


class Comparison(collections.namedtuple("Comparison", "nmse worst finite limit")):
    @property
    def ok(self):
        return self.finite and self.nmse <= self.limit.nmse and self.worst <= self.limit.worst

    def __str__(self):
        text = "NMSE {:.2e} (limit {:.1e}) worst {:.2e} (limit {:.1e})".format(
            self.nmse, self.limit.nmse, self.worst, self.limit.worst)
        return text if self.finite else text + " NaN/Inf in the output"


def compare(got, expected, dtype, profile):
    """got against the float64 reference expected, by the limits of profile for dtype ("f32", "f16", "bf16")."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        raise ValueError("compare: got has shape {}, the reference {}".format(got.shape, expected.shape))
    finite = bool(np.isfinite(got).all())
    diff = np.where(np.isfinite(got), got - expected, np.inf)
    power = float((expected ** 2).sum())
    nmse = float((diff ** 2).sum()) / power if power > 0 else float((diff ** 2).sum())
    rms = np.sqrt(power / expected.size) if power > 0 else 1.0
    worst = float(np.abs(diff).max()) / rms
    return Comparison(nmse, worst, finite, PROFILES[profile][dtype])


def check(failures, label, got, expected, dtype, profile):
    """compare(), printed as one line that ends in ok or FAIL; a failure is appended to failures."""
    result = compare(got, expected, dtype, profile)
    print(f"  {label} {result} {'ok' if result.ok else 'FAIL'}")
    if not result.ok:
        failures.append(f"{' '.join(label.split())}: {result}")


def check_control(failures, label, got, wrong_expected, dtype, profile):
    """A negative control: got against a reference that is wrong on purpose must fail compare()."""
    caught = compare(got, wrong_expected, dtype, profile)
    print(f"  {label}: {caught} {'FAIL (passed)' if caught.ok else 'caught'}")
    if caught.ok:
        failures.append(f"negative control passed: {' '.join(label.split())}: {caught}")
