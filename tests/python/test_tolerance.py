"""The tolerance module fails what it must: each of its three checks on its own."""

import numpy as np

from tolerance import PROFILES, compare


def reference(size=1 << 20):
    return np.random.default_rng(7).standard_normal(size)


def test_exact_output_passes():
    expected = reference()
    assert compare(expected.copy(), expected, "f32", "layers").ok


def test_a_few_wrong_elements_in_a_large_tensor_fail():
    expected = reference()
    got = expected.copy()
    got[[3, 1000, 500000]] += 1e-4  # three elements of 2^20 off by 1e-4 of the tensor's scale
    result = compare(got, expected, "f32", "layers")
    assert result.nmse <= PROFILES["layers"]["f32"].nmse, "the NMSE alone would pass this"
    assert not result.ok, str(result)


def test_spread_error_fails_by_nmse():
    expected = reference()
    got = expected + 2e-6 * np.sign(expected)  # every element off by 2e-6 of the tensor's scale
    result = compare(got, expected, "f32", "layers")
    assert result.worst <= PROFILES["layers"]["f32"].worst, "the worst element alone would pass this"
    assert not result.ok, str(result)


def test_nan_and_inf_fail():
    expected = reference(64)
    for bad in (np.nan, np.inf, -np.inf):
        got = expected.copy()
        got[5] = bad
        result = compare(got, expected, "bf16", "layers")
        assert not result.finite and not result.ok, str(result)


def test_shape_mismatch_is_an_error():
    try:
        compare(np.zeros(4), np.zeros(5), "f32", "layers")
    except ValueError as exc:
        assert "shape" in str(exc)
    else:
        raise AssertionError("compare accepted shapes (4,) and (5,)")
