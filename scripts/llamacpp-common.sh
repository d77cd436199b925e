# Shared by scripts/bench-llamacpp.sh and scripts/check-llamacpp.sh (sourced, not run): llama.cpp
# from PyPI's llama-cpp-python source distribution and a Python venv, both kept in
# $RILL_BENCH_CACHE (default ~/.cache/rill-bench). llama.cpp is downloaded and built, never
# vendored into the repository.

LLAMA_CPP_PYTHON_VERSION=0.3.16   # vendors llama.cpp 4227c9b
cache=${RILL_BENCH_CACHE:-$HOME/.cache/rill-bench}
llama_src="$cache/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
llama_build="$cache/llama-build-$LLAMA_CPP_PYTHON_VERSION"
venv="$cache/venv"

# llama_cpp_build TARGET...: downloads llama.cpp's source once and builds the targets CPU-only,
# native, with static libraries (libllama.a and ggml's under $llama_build). Returns non-zero
# when the download or the build fails.
llama_cpp_build() {
  mkdir -p "$cache" || return 1
  if [ ! -d "$llama_src" ]; then
    (cd "$cache" &&
      python3 -m pip download --no-binary :all: --no-deps -d "$cache" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" &&
      tar -xzf "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz") || return 1
  fi
  if [ ! -f "$llama_build/CMakeCache.txt" ]; then
    cmake -S "$llama_src" -B "$llama_build" -DCMAKE_BUILD_TYPE=Release \
      -DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF \
      -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
      -DLLAMA_BUILD_TOOLS=ON -DBUILD_SHARED_LIBS=OFF || return 1
  fi
  cmake --build "$llama_build" -j "$(nproc)" --target "$@"
}

# rill_bench_venv: the venv with Debian's torch and numpy, transformers as the reference tests
# pin it, and what llama.cpp's converter imports (mistral-common; numpy kept below 2 for the
# system torch).
rill_bench_venv() {
  local packages="transformers==4.47.1 tokenizers==0.21.4 huggingface_hub==0.26.5 safetensors regex filelock tqdm fsspec"
  packages="$packages pyyaml packaging requests"
  local converter="mistral-common==1.8.3 numpy<2 sentencepiece~=0.2.0 protobuf<5"
  if [ "$(cat "$venv/rill-bench-stamp" 2>/dev/null)" != "$packages $converter" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$venv" &&
      "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps $packages &&
      "$venv/bin/python" -m pip install -q --disable-pip-version-check $converter &&
      echo "$packages $converter" > "$venv/rill-bench-stamp"
  fi
}
