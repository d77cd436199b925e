#!/usr/bin/env python3
"""`rill generate` refuses bad command lines with exit 2 (1 for a model it
cannot load) and a message naming the option."""
import argparse
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
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rill", required=True)
    args = parser.parse_args()
    failures = 0
    for argv, code, needle in CASES:
        proc = subprocess.run([args.rill, "generate"] + argv, capture_output=True, text=True)
        ok = proc.returncode == code and needle in proc.stderr and proc.stdout == ""
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(argv)!r}: exit {proc.returncode}: {proc.stderr.strip()[:140]}")
        failures += not ok
    print(f"{len(CASES)} cases, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
