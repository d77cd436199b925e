#!/usr/bin/env python3
"""`rill generate` refuses bad command lines with exit 2 (1 for a model it
cannot load) and a message naming the option; with --stats it prints its timings
line on stderr even when that is not a terminal."""
import argparse
import re
import subprocess
import sys

CASES = [
    (["--model", "m"], 2, "expected --model and one of --prompt or --ids"),
    (["--ids", "1"], 2, "expected --model and one of --prompt or --ids"),
    (["--model", "m", "--ids", "1", "--prompt", "hi"], 2, "expected --model and one of --prompt or --ids"),
    (["--model", "m", "--ids", "1 x"], 2, "--ids: expected token ids >= 0 separated by spaces, got '1 x'"),
    (["--model", "m", "--ids", " "], 2, "--ids: expected at least one token id"),
    (["--model", "m", "--ids", "1", "--top-p", "0"], 2, "--top-p: expected a number from 1e-06 to 1, got '0'"),
    (["--model", "m", "--ids", "1", "--temperature", "-1"], 2, "--temperature: expected a number from 0"),
    (["--model", "m", "--ids", "1", "--max-new-tokens", "0"], 2, "--max-new-tokens: expected an integer from 1"),
    (["--model", "m", "--ids", "1", "--seed", "-3"], 2, "--seed: expected an integer from 0"),
    (["--model", "m", "--ids", "1", "--dtype", "f64"], 2, "--dtype: expected f32, f16 or bf16, got 'f64'"),
    (["--model", "m", "--ids", "1", "--bogus", "1"], 2, "unknown option '--bogus'"),
    (["--model", "m", "--ids", "1", "--backend", "no such"], 2, "backend"),
    (["--model", "/nonexistent", "--ids", "1", "--backend", "cpu"], 1, "rill generate: /nonexistent: RILL_ERROR_IO"),
    (["--model", "m", "--ids", "1", "--config", "/nonexistent.toml"], 1, "cannot read config file '/nonexistent.toml'"),
    (["--model", "m", "--ids", "1", "--config", "c.toml", "--backend", "cpu"], 2,
     "give --config or --backend, not both"),
]
STATS_LINE = re.compile(r"^prompt: 3 tokens, time to first token [0-9.]+ s \([0-9.]+ tokens/s\); "
                        r"decode: [0-9]+ tokens, [0-9.]+ tokens/s$", re.MULTILINE)


def check_stats(rill, model):
    argv = ["--model", model, "--ids", "2 3 4", "--max-new-tokens", "5", "--temperature", "0", "--print-ids",
            "--backend", "cpu"]
    failures = 0
    for extra, expect_line in (([], False), (["--stats"], True)):
        proc = subprocess.run([rill, "generate"] + argv + extra, capture_output=True, text=True)
        ok = proc.returncode == 0 and bool(STATS_LINE.search(proc.stderr)) == expect_line
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(extra) or 'no --stats'}: exit {proc.returncode}: "
              f"stderr {proc.stderr.strip()[:140]!r}")
        failures += not ok
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rill", required=True)
    parser.add_argument("--model", required=True, help="a model folder for the --stats check")
    args = parser.parse_args()
    failures = 0
    for argv, code, needle in CASES:
        proc = subprocess.run([args.rill, "generate"] + argv, capture_output=True, text=True)
        ok = proc.returncode == code and needle in proc.stderr and proc.stdout == ""
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(argv)!r}: exit {proc.returncode}: {proc.stderr.strip()[:140]}")
        failures += not ok
    failures += check_stats(args.rill, args.model)
    print(f"{len(CASES) + 2} cases, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
