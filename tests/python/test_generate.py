"""Generation through the Python binding: rill.LanguageModel.generate,
generate_ids and stream, and rill.Session, on test_lm's small Llama folder
with test_tokenizer's tokenizer.json. Greedy ids against a numpy greedy loop
over test_lm's float64 reference logits."""

import json
import threading

import numpy as np
import pytest

import rill
from test_lm import folder, load, reference_logits  # noqa: F401  (folder is a fixture)
from test_tokenizer import TOKENIZER

EOS = (2, 3)  # test_lm's config.json


def numpy_greedy(weights, prompt, n):
    """Greedy ids by the float64 reference, stopping after an EOS id as rill does."""
    ids, new = list(prompt), []
    for _ in range(n):
        token = int(np.argmax(reference_logits(weights, ids)[-1]))
        new.append(token)
        ids.append(token)
        if token in EOS:
            break
    return new


@pytest.fixture
def lm(folder):  # noqa: F811
    path, weights = folder
    with load(path) as model:
        yield model, weights


def test_generate_ids_greedy_matches_numpy(lm):
    model, weights = lm
    prompt = [1, 7, 30, 4]
    got = model.generate_ids(prompt, max_new_tokens=12, temperature=0)
    assert got == numpy_greedy(weights, prompt, 12)


def test_session_steps_stops_and_rewind(lm):
    model, weights = lm
    prompt = [1, 7, 30, 4]
    with model.session(temperature=0, prefill_chunk=2) as session:
        session.set_eos_ids([])
        session.append_ids(prompt)
        assert session.step(1) == ([], rill.StopReason.NONE)  # the first prefill chunk
        tokens, reason = session.step(3)  # the second chunk and a token, then two decode steps
        assert [t for t, _ in tokens] == numpy_greedy(weights, prompt, 3) and reason == rill.StopReason.NONE
        assert all(text is None for _, text in tokens)  # no tokenizer in this folder
        session.rewind(len(prompt))
        assert session.ids == prompt
        assert [t for t, _ in session.step(2)[0]] == numpy_greedy(weights, prompt, 2)
    with model.session(temperature=0, max_new_tokens=3) as session:
        session.set_eos_ids([])
        session.append_ids(prompt)
        assert [t for t, _ in session.stream()] == numpy_greedy(weights, prompt, 3)
        assert session.stop_reason == rill.StopReason.MAX_NEW_TOKENS


def test_cancel_from_another_thread(lm):
    model, _ = lm
    with model.session(temperature=0) as session:
        session.set_eos_ids([])
        session.append_ids([1, 7])
        thread = threading.Thread(target=session.cancel)
        thread.start()
        thread.join()
        assert session.step(100) == ([], rill.StopReason.CANCELLED)


def test_sampling_seed_and_arguments(lm):
    model, _ = lm
    a = model.generate_ids([1, 7], max_new_tokens=10, temperature=1.0, seed=9)
    b = model.generate_ids([1, 7], max_new_tokens=10, temperature=1.0, seed=9)
    assert a == b
    with pytest.raises(rill.InvalidArgumentError, match="bogus"):
        model.session(bogus=1)
    with pytest.raises(rill.InvalidArgumentError, match="top_p"):
        model.generate_ids([1], top_p=0.0)
    with pytest.raises(rill.InvalidArgumentError, match="tokenizer"):
        model.generate("text without a tokenizer")


def test_text_generation_with_the_folders_tokenizer(folder, tmp_path):  # noqa: F811
    path, weights = folder
    with open(path + "/tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(TOKENIZER, f)
    with load(path) as model:
        ids = model.generate_ids("ab", max_new_tokens=8, temperature=0)
        assert ids == numpy_greedy(weights, model.tokenizer.encode("ab"), 8)
        text = model.generate("ab", max_new_tokens=8, temperature=0)
        # Ids past the tokenizer's 7 (the model has 40) have no text.
        known = [i for i in ids if i < model.tokenizer.vocab_size]
        assert text == model.tokenizer.decode(known, skip_special_tokens=True)
        assert "".join(model.stream("ab", max_new_tokens=8, temperature=0)) == text
