#!/usr/bin/env bash
# Side-by-side generation benchmark of rill against llama.cpp on the CPU (not run in CI).
#
#   scripts/bench-llamacpp.sh [--rill PATH] [--output FILE] [--dtypes "f32 f16 bf16"]
#                             [--threads "2 1"] [--repeats 3] [--max-wait SECONDS]
#
# Once, into $RILL_BENCH_CACHE (default ~/.cache/rill-bench): downloads PyPI's llama-cpp-python
# source distribution (llama.cpp's source under vendor/llama.cpp), builds its llama-bench
# CPU-only and native; makes a venv with transformers and the converter's requirements; writes a
# random-weight Qwen2-0.5B-shaped Hugging Face folder per dtype and converts each to GGUF with
# llama.cpp's convert_hf_to_gguf.py. Then, per dtype and thread count, alternates
# `rill generate` and `llama-bench` --repeats times each, waiting for an idle CPU (at most
# --max-wait seconds) before every run, and prints the table of medians (docs/BENCHMARKS.md
# says what each side measures). --rill defaults to build/bin/rill of this checkout.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.16   # vendors llama.cpp 4227c9b
repo=$(cd "$(dirname "$0")/.." && pwd)
helper="$repo/scripts/bench_llamacpp_model.py"
cache=${RILL_BENCH_CACHE:-$HOME/.cache/rill-bench}
rill="$repo/build/bin/rill"
output=""
dtypes="f32 f16 bf16"
threads_list="2 1"
repeats=3
max_wait=300
prompt_tokens=64
decode_tokens=16

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rill) rill=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --dtypes) dtypes=$2; shift 2 ;;
    --threads) threads_list=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --max-wait) max_wait=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench-llamacpp.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for d in $dtypes; do
  case "$d" in
    f32|f16|bf16) ;;
    *) echo "bench-llamacpp.sh: --dtypes: expected f32, f16 or bf16, got '$d'" >&2; exit 2 ;;
  esac
done
[ -x "$rill" ] || { echo "bench-llamacpp.sh: --rill: '$rill' is not an executable (build rill first)" >&2; exit 2; }
mkdir -p "$cache"
cd "$cache"

# llama.cpp's source and llama-bench.
llama_src="$cache/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
if [ ! -d "$llama_src" ]; then
  python3 -m pip download --no-binary :all: --no-deps -d "$cache" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  tar -xzf "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
fi
llama_bench="$cache/llama-build-$LLAMA_CPP_PYTHON_VERSION/bin/llama-bench"
if [ ! -x "$llama_bench" ]; then
  cmake -S "$llama_src" -B "llama-build-$LLAMA_CPP_PYTHON_VERSION" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DBUILD_SHARED_LIBS=OFF
  cmake --build "llama-build-$LLAMA_CPP_PYTHON_VERSION" -j "$(nproc)" --target llama-bench
fi

# The venv: Debian's torch and numpy, transformers as the reference tests pin it, and what
# llama.cpp's converter imports (mistral-common; numpy kept below 2 for the system torch).
venv="$cache/venv"
venv_packages="transformers==4.47.1 tokenizers==0.21.4 huggingface_hub==0.26.5 safetensors regex filelock tqdm fsspec"
venv_packages="$venv_packages pyyaml packaging requests"
venv_converter="mistral-common==1.8.3 numpy<2 sentencepiece~=0.2.0 protobuf<5"
if [ "$(cat "$venv/rill-bench-stamp" 2>/dev/null)" != "$venv_packages $venv_converter" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps $venv_packages
  "$venv/bin/python" -m pip install -q --disable-pip-version-check $venv_converter
  echo "$venv_packages $venv_converter" > "$venv/rill-bench-stamp"
fi

# The models: one set of random weights in each dtype, as Hugging Face folders and GGUF files.
models="$cache/models"
prefix="$models/qwen2-0.5b-random"
if [ ! -f "$prefix-bf16/model.safetensors" ]; then
  mkdir -p "$models"
  "$venv/bin/python" "$helper" make "$prefix" "$repo/models/fortune"
fi
for d in $dtypes; do
  if [ ! -f "$prefix-$d.gguf" ]; then
    "$venv/bin/python" "$helper" convert "$llama_src" "$prefix-$d" "$prefix-$d.gguf.part" "$d"
    mv "$prefix-$d.gguf.part" "$prefix-$d.gguf"
  fi
done

# The runs. rill's prompt: 64 ids spread over the vocabulary; llama-bench draws its own.
ids=$(python3 -c "print(' '.join(str(2 + i * 7919 % 150000) for i in range($prompt_tokens)))")
results=$(mktemp)
trap 'rm -f "$results" "$results".*' EXIT
for d in $dtypes; do
  for t in $threads_list; do
    printf '[runtime]\nbackend = "cpu"\n\n[backend.cpu]\nthreads = %d\n' "$t" > "$results.toml"
    for r in $(seq "$repeats"); do
      load=$(python3 "$helper" wait-idle "$max_wait")
      # The first token comes from the prompt's forward pass: ask for one more than the
      # decode steps so that rill runs $decode_tokens single-token forward passes, as tg does.
      "$rill" generate --model "$prefix-$d" --ids "$ids" --max-new-tokens $((decode_tokens + 1)) \
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
  echo "Qwen2-0.5B shape, random weights; prefill $prompt_tokens tokens, decode $decode_tokens tokens"
  echo
  python3 "$helper" table "$results"
} | tee "${output:-/dev/null}"
