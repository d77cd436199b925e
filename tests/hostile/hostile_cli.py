#!/usr/bin/env python3
"""The hostile-input campaign against the `rill` command line and the readers
behind it (docs/RELIABILITY.md).

Each case starts from inputs that work, spoils one of them — corrupt or
truncated files, absurd sizes and counts, a named pipe, a symlink loop, a
folder where a file belongs, an output path that cannot be written, the
output equal to an input — and runs one command. Every case must end with a
non-zero exit status, a message on stderr naming the problem, no sanitizer
report, within the time limit, and leave no output file behind.

    hostile_cli.py RILL_BINARY FORTUNE_MODEL_FOLDER [--list] [-k SUBSTRING]
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

TIMEOUT_S = 20

# The small decoder stack of `rill run`: one layer, D 8, 2 heads of 4, 1 KV head, MLP width 4.
MODEL_TOML = """[runtime]
backend = "cpu"
[model]
num_layers = 1
hidden_size = 8
num_heads = 2
num_kv_heads = 1
intermediate_size = 4
"""
WEIGHTS = [("model.layers.0.input_layernorm.weight", [8]), ("model.layers.0.self_attn.q_proj.weight", [8, 8]),
           ("model.layers.0.self_attn.k_proj.weight", [4, 8]), ("model.layers.0.self_attn.v_proj.weight", [4, 8]),
           ("model.layers.0.self_attn.o_proj.weight", [8, 8]),
           ("model.layers.0.post_attention_layernorm.weight", [8]),
           ("model.layers.0.mlp.gate_proj.weight", [4, 8]), ("model.layers.0.mlp.up_proj.weight", [4, 8]),
           ("model.layers.0.mlp.down_proj.weight", [8, 4]), ("model.norm.weight", [8])]


def safetensors_bytes(entries, header_length=None):
    header, data = {}, b""
    for name, shape in entries:
        count = 1
        for d in shape:
            count *= d
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + 4 * count]}
        data += struct.pack("<%df" % count, *[0.01 * (i % 7) for i in range(count)])
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text) if header_length is None else header_length) + text + data


def npy_bytes(shape, descr="<f4", values=None, major=1):
    shape_text = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    head = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, shape_text)
    head += " " * ((64 - (12 + len(head) + 1) % 64) % 64) + "\n"
    count = 1
    for d in shape:
        count *= d
    data = struct.pack("<%df" % count, *([0.5] * count)) if values is None else values
    length = struct.pack("<H", len(head)) if major == 1 else struct.pack("<I", len(head))
    return b"\x93NUMPY" + bytes([major, 0]) + length + head.encode() + data


class Case:
    def __init__(self, name, args, expect, setup=None, output=None):
        self.name, self.args, self.expect, self.setup, self.output = name, args, expect, setup, output


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def fifo(path):
    if os.path.exists(path):
        os.remove(path)
    os.mkfifo(path)


def loop(path):
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(path, path)  # a link to itself: ELOOP


def folder(path):
    if os.path.exists(path):
        os.remove(path)
    os.mkdir(path)


def cases(work, fortune):
    run = lambda **over: ["run", "--config", over.get("config", "m.toml"), "--weights", over.get("weights", "w.safetensors"),
                          "--input", over.get("input", "x.npy"), "--output", over.get("output", "y.npy")] + over.get("extra", [])
    model = os.path.join(work, "lm")
    logits = lambda **over: ["logits", "--model", over.get("model", model), "--ids", over.get("ids", "1 2 3"),
                             "--output", over.get("output", "logits.npy")]
    tokenize = lambda path: ["tokenize", "--model", path, "--text", "hello"]
    generate = lambda *extra: ["generate", "--model", model, "--prompt", "A fool", "--backend", "cpu"] + list(extra)
    cfg = os.path.join(model, "config.json")
    st = os.path.join(model, "model.safetensors")
    tok = os.path.join(model, "tokenizer.json")
    good_config = json.load(open(os.path.join(fortune, "config.json")))
    return [
        # rill run: the model TOML
        Case("run: config missing", run(config="nothing.toml"), "nothing.toml", output="y.npy"),
        Case("run: config is a named pipe", run(config="pipe.toml"), "pipe.toml", lambda: fifo("pipe.toml"), "y.npy"),
        Case("run: config is a symlink loop", run(config="loop.toml"), "loop.toml", lambda: loop("loop.toml"), "y.npy"),
        Case("run: config is a folder", run(config="dir.toml"), "dir.toml", lambda: folder("dir.toml"), "y.npy"),
        Case("run: config is binary garbage", run(config="bad.toml"), "bad.toml",
             lambda: write("bad.toml", bytes(range(256)) * 4), "y.npy"),
        Case("run: config with absurd sizes", run(config="big.toml"), "hidden_size",
             lambda: write("big.toml", MODEL_TOML.replace("hidden_size = 8", "hidden_size = 99999999999")), "y.npy"),
        Case("run: config with a huge layer count", run(config="layers.toml"), "num_layers",
             lambda: write("layers.toml", MODEL_TOML.replace("num_layers = 1", "num_layers = 1000000")), "y.npy"),
        # rill run: the weights
        Case("run: weights truncated", run(weights="cut.safetensors"), "cut.safetensors",
             lambda: write("cut.safetensors", safetensors_bytes(WEIGHTS)[:-100]), "y.npy"),
        Case("run: weights header length 2^63", run(weights="len.safetensors"), "len.safetensors",
             lambda: write("len.safetensors", safetensors_bytes(WEIGHTS, 1 << 63)), "y.npy"),
        Case("run: weights empty file", run(weights="empty.safetensors"), "empty.safetensors",
             lambda: write("empty.safetensors", b""), "y.npy"),
        Case("run: weights a named pipe", run(weights="pipe.safetensors"), "pipe.safetensors",
             lambda: fifo("pipe.safetensors"), "y.npy"),
        Case("run: weights a symlink loop", run(weights="loop.safetensors"), "loop.safetensors",
             lambda: loop("loop.safetensors"), "y.npy"),
        Case("run: weights of the wrong shape", run(weights="shape.safetensors"), "q_proj",
             lambda: write("shape.safetensors", safetensors_bytes(
                 [(n, [9, 8] if "q_proj" in n else s) for n, s in WEIGHTS])), "y.npy"),
        Case("run: weights missing a tensor", run(weights="few.safetensors"), "down_proj",
             lambda: write("few.safetensors", safetensors_bytes([w for w in WEIGHTS if "down_proj" not in w[0]])), "y.npy"),
        # rill run: the input
        Case("run: input truncated", run(input="cut.npy"), "cut.npy", lambda: write("cut.npy", npy_bytes([1, 3, 8])[:-5]),
             "y.npy"),
        Case("run: input with an absurd shape", run(input="huge.npy"), "huge.npy",
             lambda: write("huge.npy", npy_bytes([1 << 40, 1 << 20, 8], values=b"")), "y.npy"),
        Case("run: input of float64", run(input="f8.npy"), "f8.npy",
             lambda: write("f8.npy", npy_bytes([1, 3, 8], descr="<f8", values=b"\0" * 192)), "y.npy"),
        Case("run: input of the wrong width", run(input="wide.npy"), "wide.npy", lambda: write("wide.npy", npy_bytes([1, 3, 7])),
             "y.npy"),
        Case("run: input a named pipe", run(input="pipe.npy"), "pipe.npy", lambda: fifo("pipe.npy"), "y.npy"),
        Case("run: input a symlink loop", run(input="loop.npy"), "loop.npy", lambda: loop("loop.npy"), "y.npy"),
        Case("run: input not .npy", run(input="text.npy"), "text.npy", lambda: write("text.npy", "hello\n"), "y.npy"),
        Case("run: --decode-from absurd", run(extra=["--decode-from", "99999999999"]), "--decode-from", output="y.npy"),
        # rill run: the output
        Case("run: output in a missing folder", run(output="no/such/dir/y.npy"), "no/such/dir/y.npy"),
        Case("run: output is a folder", run(output="outdir"), "outdir", lambda: folder("outdir")),
        Case("run: output under /proc", run(output="/proc/rill_hostile.npy"), "/proc/rill_hostile.npy"),
        Case("run: output equal to the input", run(output="x.npy"), "x.npy"),
        Case("run: output equal to the weights", run(output="w.safetensors"), "w.safetensors"),
        Case("run: output equal to the config", run(output="m.toml"), "m.toml"),
        # rill logits and rill generate: a Hugging Face folder
        Case("logits: folder missing", logits(model="nowhere"), "nowhere", output="logits.npy"),
        Case("logits: config.json a named pipe", logits(), "config.json", lambda: fifo(cfg), "logits.npy"),
        Case("logits: config.json a symlink loop", logits(), "config.json", lambda: loop(cfg), "logits.npy"),
        Case("logits: config.json a folder", logits(), "config.json", lambda: folder(cfg), "logits.npy"),
        Case("logits: config.json garbage", logits(), "config.json", lambda: write(cfg, bytes(range(256))), "logits.npy"),
        Case("logits: config.json absurd sizes", logits(), "hidden_size",
             lambda: write(cfg, json.dumps(dict(good_config, hidden_size=1 << 40))), "logits.npy"),
        Case("logits: config.json absurd vocab", logits(), "vocab_size",
             lambda: write(cfg, json.dumps(dict(good_config, vocab_size=1 << 40))), "logits.npy"),
        Case("logits: weights truncated", logits(), "model.safetensors",
             lambda: write(st, open(os.path.join(fortune, "model.safetensors"), "rb").read()[:100000]), "logits.npy"),
        Case("logits: weights a named pipe", logits(), "model.safetensors", lambda: fifo(st), "logits.npy"),
        Case("logits: an id beyond the vocabulary", logits(ids="1 99999999"), "99999999", output="logits.npy"),
        Case("logits: output in a missing folder", logits(output="no/such/dir/l.npy"), "no/such/dir/l.npy"),
        Case("logits: output equal to the weights", logits(output=st), "model.safetensors"),
        Case("generate: config.json a named pipe", generate(), "config.json", lambda: fifo(cfg)),
        Case("generate: tokenizer.json a named pipe", generate(), "tokenizer.json", lambda: fifo(tok)),
        Case("generate: tokenizer.json garbage", generate(), "tokenizer.json", lambda: write(tok, b"\xff\xfe{")),
        Case("generate: --max-new-tokens absurd", generate("--max-new-tokens", "99999999999"), "--max-new-tokens"),
        # rill tokenize
        Case("tokenize: tokenizer.json a named pipe", tokenize(tok), "tokenizer.json", lambda: fifo(tok)),
        Case("tokenize: tokenizer.json a symlink loop", tokenize(tok), "tokenizer.json", lambda: loop(tok)),
        Case("tokenize: tokenizer.json truncated", tokenize(tok), "tokenizer.json",
             lambda: write(tok, open(os.path.join(fortune, "tokenizer.json"), "rb").read()[:3000])),
        Case("tokenize: a folder without tokenizer.json", tokenize("outdir2"), "outdir2", lambda: folder("outdir2")),
    ]


def fresh_inputs(work, fortune):
    """The inputs every case starts from, all valid."""
    for entry in os.listdir(work):
        path = os.path.join(work, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    write(os.path.join(work, "m.toml"), MODEL_TOML)
    write(os.path.join(work, "w.safetensors"), safetensors_bytes(WEIGHTS))
    write(os.path.join(work, "x.npy"), npy_bytes([1, 3, 8]))
    shutil.copytree(fortune, os.path.join(work, "lm"))


def snapshot(work):
    """Each file under work with its size and modification time."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(work):
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
                seen[os.path.relpath(path, work)] = (st.st_size, st.st_mtime_ns)
            except OSError:
                pass
    return seen


def run_case(rill, work, fortune, case):
    fresh_inputs(work, fortune)
    os.chdir(work)
    if case.setup:
        case.setup()
    before = snapshot(work)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=99")
    try:
        done = subprocess.run([rill] + case.args, cwd=work, capture_output=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return "hung (no answer in %d s)" % TIMEOUT_S
    err = done.stderr.decode(errors="replace")
    problems = []
    if done.returncode == 0:
        problems.append("exit status 0")
    if done.returncode < 0:
        problems.append("killed by signal %d" % -done.returncode)
    if "Sanitizer" in err or "runtime error:" in err:
        problems.append("sanitizer report")
    if case.expect not in err:
        problems.append("message does not name '%s'" % case.expect)
    if case.output and os.path.lexists(os.path.join(work, case.output)):
        problems.append("left %s behind" % case.output)
    after = snapshot(work)
    changed = [p for p in after if p in before and after[p] != before[p]]
    new = [p for p in after if p not in before]
    if changed:
        problems.append("changed %s" % ", ".join(changed))
    if new:
        problems.append("left %s behind" % ", ".join(new))
    if problems:
        return "; ".join(problems) + "\n    stderr: " + err.strip().replace("\n", "\n            ")
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("rill")
    parser.add_argument("fortune")
    parser.add_argument("-k", default="", help="only the cases whose name holds this")
    parser.add_argument("--list", action="store_true")
    options = parser.parse_args()
    rill, fortune = os.path.abspath(options.rill), os.path.abspath(options.fortune)
    work = tempfile.mkdtemp(prefix="rill_hostile_")
    failures, ran = 0, 0
    try:
        for case in cases(work, fortune):
            if options.k not in case.name:
                continue
            if options.list:
                print(case.name)
                continue
            ran += 1
            problem = run_case(rill, work, fortune, case)
            print(("FAIL " if problem else "ok   ") + case.name + (": " + problem if problem else ""), flush=True)
            failures += problem is not None
    finally:
        os.chdir("/")
        shutil.rmtree(work, ignore_errors=True)
    if not options.list:
        print("hostile: %d of %d cases failed" % (failures, ran))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
