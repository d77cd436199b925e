#!/usr/bin/env bash
# Side-by-side generation benchmark of rill against llama.cpp on the CPU (not run in CI).
#
#   scripts/bench-llamacpp.sh [--rill PATH] [--output FILE] [--shape qwen2-0.5b|llama-3.2-1b]
#                             [--dtypes "f32 f16 bf16"] [--threads "2 1"] [--repeats 3]
#                             [--max-wait SECONDS]
#
# Once, into $RILL_BENCH_CACHE (default ~/.cache/rill-bench; scripts/llamacpp-common.sh):
# downloads PyPI's llama-cpp-python source distribution (llama.cpp's source under
# vendor/llama.cpp), builds its llama-bench CPU-only and native; makes a venv with transformers
# and the converter's requirements; writes a random-weight Hugging Face folder of the --shape
# (default qwen2-0.5b) per dtype. f32, f16 and bf16 run that folder in rill and its conversion
# by llama.cpp's convert_hf_to_gguf.py in llama.cpp; q8_0 and q4_k_m (also accepted by
# --dtypes) run one GGUF file that `rill quantize` writes from the f32 folder in both. Then, per
# dtype and thread count, alternates `rill generate` and `llama-bench` --repeats times each,
# waiting for an idle CPU (at most --max-wait seconds) before every run, and prints the table of
# medians (docs/BENCHMARKS.md says what each side measures). --rill defaults to build/bin/rill
# of this checkout.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/llamacpp-common.sh"
helper="$repo/scripts/bench_llamacpp_model.py"
rill="$repo/build/bin/rill"
shape=qwen2-0.5b
output=""
dtypes="f32 f16 bf16"
threads_list="2 1"
repeats=3
max_wait=300
prompt_tokens=64
decode_tokens=16

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rill) rill=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --dtypes) dtypes=$2; shift 2 ;;
    --threads) threads_list=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --max-wait) max_wait=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench-llamacpp.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$shape" in
  qwen2-0.5b|llama-3.2-1b) ;;
  *) echo "bench-llamacpp.sh: --shape: expected qwen2-0.5b or llama-3.2-1b, got '$shape'" >&2; exit 2 ;;
esac
for d in $dtypes; do
  case "$d" in
    f32|f16|bf16|q8_0|q4_k_m) ;;
    *) echo "bench-llamacpp.sh: --dtypes: expected f32, f16, bf16, q8_0 or q4_k_m, got '$d'" >&2; exit 2 ;;
  esac
done
[ -x "$rill" ] || { echo "bench-llamacpp.sh: --rill: '$rill' is not an executable (build rill first)" >&2; exit 2; }

llama_cpp_build llama-bench || { echo "bench-llamacpp.sh: llama.cpp could not be built" >&2; exit 1; }
llama_bench="$llama_build/bin/llama-bench"
rill_bench_venv || { echo "bench-llamacpp.sh: the venv could not be made" >&2; exit 1; }

# The models: one set of random weights, as Hugging Face folders in the float dtypes asked for
# (f32 for the quantized ones) and GGUF files: llama.cpp's conversion of each float folder,
# `rill quantize` of the f32 folder for each quantized format.
models="$cache/models"
prefix="$models/$shape-random"
mkdir -p "$models"
folder_dtypes=$(for d in $dtypes; do case "$d" in q*) echo f32 ;; *) echo "$d" ;; esac; done | sort -u | tr '\n' ' ')
"$venv/bin/python" "$helper" make "$shape" "$prefix" "$repo" "$folder_dtypes"
for d in $dtypes; do
  [ -f "$prefix-$d.gguf" ] && continue
  case "$d" in
    q*) "$rill" quantize "$prefix-f32" "$prefix-$d.gguf.part" --format "$d" ;;
    *) "$venv/bin/python" "$helper" convert "$llama_src" "$prefix-$d" "$prefix-$d.gguf.part" "$d" "$shape" ;;
  esac
  mv "$prefix-$d.gguf.part" "$prefix-$d.gguf"
done

# The runs. rill's prompt: 64 ids spread over the vocabulary; llama-bench draws its own.
ids=$(python3 "$helper" ids "$shape" $prompt_tokens)
results=$(mktemp)
trap 'rm -f "$results" "$results".*' EXIT
for d in $dtypes; do
  for t in $threads_list; do
    printf '[runtime]\nbackend = "cpu"\n\n[backend.cpu]\nthreads = %d\n' "$t" > "$results.toml"
    for r in $(seq "$repeats"); do
      load=$(python3 "$helper" wait-idle "$max_wait")
      # The first token comes from the prompt's forward pass: ask for one more than the
      # decode steps so that rill runs $decode_tokens single-token forward passes, as tg does.
      case "$d" in q*) rill_model="$prefix-$d.gguf" ;; *) rill_model="$prefix-$d" ;; esac
      "$rill" generate --model "$rill_model" --ids "$ids" --max-new-tokens $((decode_tokens + 1)) \
        --temperature 0 --config "$results.toml" --print-ids --stats >/dev/null 2>"$results.rill"
      read -r ttft pp tg <<<"$(python3 "$helper" rill-stats "$results.rill" $decode_tokens)"
      echo "$d $t rill $pp $tg $ttft $load" >> "$results"
      echo "$d t=$t run $r: rill      prefill $pp tokens/s, decode $tg tokens/s (load $load)" >&2

      load=$(python3 "$helper" wait-idle "$max_wait")
      "$llama_bench" -m "$prefix-$d.gguf" -p $prompt_tokens -n $decode_tokens -t "$t" -r 1 -o json \
        >"$results.json" 2>"$results.llama" || { cat "$results.llama" >&2; exit 1; }
      read -r pp tg <<<"$(python3 "$helper" llama-bench-ts "$results.json")"
      echo "$d $t llama.cpp $pp $tg 0 $load" >> "$results"
      echo "$d t=$t run $r: llama.cpp prefill $pp tokens/s, decode $tg tokens/s (load $load)" >&2
    done
  done
done

{
  echo "$("$rill" --version) vs llama.cpp from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION"
  cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
  echo "on $cpu, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "$(python3 "$helper" title "$shape"), random weights; prefill $prompt_tokens tokens, decode $decode_tokens tokens"
  echo
  python3 "$helper" table "$results"
} | tee "${output:-/dev/null}"
