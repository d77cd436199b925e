#!/usr/bin/env bash
# llama.cpp reads `rill quantize` files and gives rill's logits (not run in CI).
#
#   scripts/check-llamacpp.sh [--rill PATH]
#
# Builds llama.cpp as scripts/bench-llamacpp.sh does (scripts/llamacpp-common.sh, the same
# cache) and scripts/llamacpp_logits.cpp against it. Makes a small random llama, qwen2, gemma,
# gemma2 and phi3 Hugging Face folder with transformers, writes each as q8_0 and q4_k_m with
# `rill quantize` (and a qwen2 with rows of 384, not whole K blocks, as q4_k_m and q5_k_m, which
# then hold llama.cpp's Q5_0 / Q5_1 fallbacks), and compares the logits of a fixed id sequence
# from llama.cpp (llamacpp_logits) and from rill
# (`rill logits --backend cpu`) on the same file: NMSE and the worst element against the
# format's bounds (LIMITS in scripts/bench_llamacpp_model.py). Negative control: rill's logits of
# the llama file written without llama.cpp's q/k row permutation must miss the bounds against
# llama.cpp's logits of the right file.
#
# Exit codes: 0 passed, 1 a miss or a failure, 2 a bad argument, 77 skipped (llama.cpp or the
# Python venv could not be built). --rill defaults to build/bin/rill of this checkout.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/llamacpp-common.sh"
helper="$repo/scripts/bench_llamacpp_model.py"
rill="$repo/build/bin/rill"
while [ $# -gt 0 ]; do
  case "$1" in
    --rill) rill=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-llamacpp.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$rill" ] || { echo "check-llamacpp.sh: --rill: '$rill' is not an executable (build rill first)" >&2; exit 2; }

skip() { echo "skipped: $1"; exit 77; }
llama_cpp_build llama || skip "llama.cpp could not be built"
rill_bench_venv || skip "the Python venv could not be made"
logits_tool="$llama_build/bin/rill-llamacpp-logits"
if [ ! -x "$logits_tool" ] || [ "$repo/scripts/llamacpp_logits.cpp" -nt "$logits_tool" ]; then
  mkdir -p "$llama_build/bin"
  c++ -O2 -std=c++17 -I"$llama_src/include" -I"$llama_src/ggml/include" "$repo/scripts/llamacpp_logits.cpp" \
    "$llama_build/src/libllama.a" "$llama_build/ggml/src/libggml.a" "$llama_build/ggml/src/libggml-cpu.a" \
    "$llama_build/ggml/src/libggml-base.a" -fopenmp -lpthread -ldl -o "$logits_tool" ||
    skip "scripts/llamacpp_logits.cpp could not be built against llama.cpp"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
for shape in tiny-llama tiny-qwen2 tiny-gemma tiny-gemma2 tiny-phi3 narrow-qwen2; do
  "$venv/bin/python" "$helper" make "$shape" "$work/$shape" "$repo" f32 >/dev/null
  ids=$(python3 "$helper" ids "$shape" 24)
  formats="q8_0 q4_k_m"
  [ "$shape" = narrow-qwen2 ] && formats="q4_k_m q5_k_m"  # llama.cpp's Q5_0 / Q5_1 fallbacks
  for format in $formats; do
    file="$work/$shape-$format.gguf"
    "$rill" quantize "$work/$shape-f32" "$file" --format "$format"
    "$logits_tool" "$file" "$ids" "$work/llama.f32" >/dev/null
    "$rill" logits --model "$file" --ids "$ids" --output "$work/rill.npy" --backend cpu >/dev/null
    "$venv/bin/python" "$helper" compare "$work/rill.npy" "$work/llama.f32" "$format" "$shape $format" || failed=1
    if [ "$shape" = tiny-llama ]; then  # control: the file without the q/k permutation
      [ -d "$work/$shape-unpermuted" ] ||
        "$venv/bin/python" "$helper" unpermute-qk "$work/$shape-f32" "$work/$shape-unpermuted" >/dev/null
      "$rill" quantize "$work/$shape-unpermuted" "$work/control.gguf" --format "$format"
      "$rill" logits --model "$work/control.gguf" --ids "$ids" --output "$work/rill.npy" --backend cpu >/dev/null
      "$venv/bin/python" "$helper" compare "$work/rill.npy" "$work/llama.f32" "$format" \
        "control: $shape $format without the q/k permutation, against the right file" --expect-miss || failed=1
    fi
  done
done
[ "$failed" = 0 ] && echo "passed: llama.cpp and rill agree on every file" || echo "FAILED"
exit "$failed"
