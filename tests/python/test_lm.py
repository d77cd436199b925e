"""Language models through the Python binding (rill.Model.load): a small
Llama folder written here, its logits against a float64 numpy reference
(test_model's decoder stack plus the embedding and the LM head), and the
binding's shapes, caches and argument checks."""

import json
import os
import struct

import numpy as np
import pytest

import rill
from conftest import BACKEND, optional_op
from test_model import D, HEADS, INTER, KV_HEADS, LAYERS, random_weights, reference_forward
from tolerance import compare

VOCAB = 40


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)  # padded as the safetensors library pads it: 8-byte aligned data
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


@pytest.fixture
def folder(tmp_path, rng):
    weights = random_weights(rng)
    weights["model.embed_tokens.weight"] = rng.standard_normal((VOCAB, D)).astype(np.float32)
    weights["lm_head.weight"] = (rng.standard_normal((VOCAB, D)) / np.sqrt(D)).astype(np.float32)
    config = dict(model_type="llama", vocab_size=VOCAB, hidden_size=D, intermediate_size=INTER,
                  num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                  rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=64, bos_token_id=1,
                  eos_token_id=[2, 3], tie_word_embeddings=False)
    (tmp_path / "config.json").write_text(json.dumps(config))
    write_safetensors(str(tmp_path / "model.safetensors"), weights)
    return str(tmp_path), weights


def reference_logits(weights, ids):
    hidden = weights["model.embed_tokens.weight"][ids].astype(np.float64)
    return reference_forward(weights, hidden) @ weights["lm_head.weight"].astype(np.float64).T


def load(path, **kwargs):
    try:
        return rill.Model.load(path, backend=BACKEND, **kwargs)
    except rill.BackendUnavailableError as exc:
        pytest.skip("backend {} not available: {}".format(BACKEND, exc))


def test_logits_match_numpy(folder):
    path, weights = folder
    ids = [1, 7, 30, 4, 4, 39]
    with load(path) as lm:
        assert isinstance(lm, rill.LanguageModel)
        assert (lm.vocab_size, lm.hidden_size, lm.num_layers, lm.model_type) == (VOCAB, D, LAYERS, "llama")
        assert lm.dtype == rill.DType.F32 and lm.bos_token_id == 1 and lm.eos_token_ids == [2, 3]
        assert lm.generation_defaults["temperature"] == 1.0 and lm.generation_defaults["top_k"] == 50  # GenerationConfig's default
        with optional_op():
            got = lm.logits(ids)
        assert got.shape == (len(ids), VOCAB) and got.dtype == np.float32
        result = compare(got, reference_logits(weights, ids), "f32", "lm")
        assert result.ok, str(result)
        last = lm.logits(ids, last_only=True)
        assert last.shape == (VOCAB,)
        assert compare(last, got[-1], "f32", "lm").ok
        batched = lm.logits([ids, ids])
        assert batched.shape == (2, len(ids), VOCAB)
        assert compare(batched[1], got, "f32", "lm").ok
        with lm.kv_cache(batch=1, capacity=8) as cache:
            first = lm.logits(ids[:4], cache)
            steps = [lm.logits(ids[t:t + 1], cache, last_only=True) for t in (4, 5)]
            assert cache.length(0) == 6
        assert compare(np.concatenate([first, np.stack(steps)]), got, "f32", "lm").ok


def test_dtype_override_and_errors(folder, tmp_path):
    path, _ = folder
    with load(path, dtype="bf16") as lm:
        assert lm.dtype == rill.DType.BF16
        with optional_op():
            assert np.isfinite(lm.logits([1, 2, 3])).all()
        with pytest.raises(rill.InvalidArgumentError, match=r"ids\[1\]"):
            lm.logits([1, VOCAB, 3])
        with pytest.raises(rill.InvalidArgumentError, match="ids"):
            lm.logits([])
    with pytest.raises(rill.IoError, match="config.json"):
        rill.Model.load(str(tmp_path / "absent"), backend="cpu")
    config = json.loads((tmp_path / "config.json").read_text())
    config["model_type"] = "mamba"
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(rill.UnsupportedError, match="mamba"):
        rill.Model.load(path, backend="cpu")


def test_weight_bytes_and_a_gguf_file_read_in_place(folder):
    path, weights = folder
    # The folder is f32 and so is the model: on the CPU backend every tensor is
    # read in place from the file (its data 8-byte aligned, as written above).
    total = sum(w.nbytes for w in weights.values())
    with load(path) as lm:
        assert lm.weight_bytes == total
        assert lm.weight_bytes_mapped == (total if BACKEND == "cpu" else 0)
    with load(path, copy_weights=True) as lm:
        assert (lm.weight_bytes, lm.weight_bytes_mapped) == (total, 0)
    with load(path, dtype="bf16") as lm:  # converted: allocated
        assert (lm.weight_bytes, lm.weight_bytes_mapped) == (total // 2, 0)
    # A Q8_0 llama written by PyPI's gguf (tests/fuzz/make_gguf_seeds.py): on
    # the CPU backend its tensors are read in place, but for q_proj and k_proj
    # (32 rows of one 34-byte block each), whose rows the load reorders.
    seed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "gguf", "llama_q8_0.gguf")
    runs = {}
    for copy in (False, True):
        with rill.LanguageModel.load(seed, backend="cpu", copy_weights=copy) as lm:
            runs[copy] = (lm.weight_bytes, lm.weight_bytes_mapped, lm.logits([1, 5, 9, 3]))
    assert runs[True][1] == 0
    assert runs[False][1] == runs[False][0] - 2 * 32 * 34 and runs[False][0] == runs[True][0]
    assert np.array_equal(runs[False][2], runs[True][2])
