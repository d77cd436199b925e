"""What the generation tests share: transformers from the reference venv,
ready for generate() on this machine; its greedy ids; and how a check reports."""
import glob
import importlib
import os
import sys


def import_transformers(venv):
    """transformers from venv's site-packages (beside this interpreter's own),
    or None, printing why, when it cannot be imported."""
    sys.path += glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))
    try:
        import transformers
        import transformers.generation.utils
    except ImportError as missing:
        print(f"skipped: {missing}")
        return None
    # generate() asks torch.distributed.fsdp whether the model is sharded; that
    # module does not import with Debian's torch 1.13 on Python 3.11. Nothing
    # the tests run is sharded.
    transformers.generation.utils.is_fsdp_managed_module = lambda module: False
    return transformers


def import_references(venv, *names):
    """[transformers (as import_transformers gives it), then each module named],
    or None, printing why, when any of them cannot be imported: the caller then
    reports the test skipped."""
    transformers = import_transformers(venv)
    if transformers is None:
        return None
    try:
        return [transformers] + [importlib.import_module(name) for name in names]
    except ImportError as missing:
        print(f"skipped: {missing}")
        return None


def hf_greedy(model, ids, n):
    """transformers' n greedy ids after ids, never stopping early."""
    import torch
    with torch.no_grad():
        ids = torch.tensor([ids])  # attention_mask given: generate() would mask every pad_token_id in ids
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=n,
                             min_new_tokens=n)
    return out[0, ids.shape[1]:].tolist()


def check(lib, status):
    """Raises with rill's message when a call through the binding failed."""
    if status != 0:
        raise RuntimeError(lib.rill_last_error().decode())


def expect(failures, what, ok, detail=""):
    """Prints one check's outcome and records it in failures when it failed."""
    print(f"  {'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail and not ok else ''}")
    if not ok:
        failures.append(f"{what}: {detail}")
