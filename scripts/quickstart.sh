#!/usr/bin/env bash
# The README's quick start on a fresh Debian machine, in one script:
#   scripts/quickstart.sh          install what is missing, build, run the main job: text from the
#                                  demo model (rill generate), then rill demo
#   scripts/quickstart.sh test     install what is missing, build, run the whole test suite,
#                                  then the Windows build's tests under Wine, the suite again
#                                  under AddressSanitizer + UndefinedBehaviorSanitizer (clang),
#                                  each fuzz target for 10 s in that same build, and the threading
#                                  tests under ThreadSanitizer
# Environment: RILL_BUILD_DIR (default build), RILL_JOBS (default: all cores).
set -euo pipefail

mode=${1:-demo}
case "$mode" in
  demo|test) ;;
  *) echo "usage: scripts/quickstart.sh [demo|test]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
build=${RILL_BUILD_DIR:-$root/build}
jobs=${RILL_JOBS:-$(nproc)}

"$root/scripts/install-deps.sh"

# The CUDA toolkit is not a Debian package: its usual home is put on PATH so
# that CMake finds nvcc when it is installed; without it the CUDA backend is
# simply not built.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

configure_and_build() {  # <build dir> [extra cmake args...]
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DRILL_WARNINGS_AS_ERRORS=ON "$@"
  cmake --build "$dir" -j "$jobs"
}

if [ "$mode" = demo ]; then
  configure_and_build "$build" -DRILL_BUILD_TESTS=OFF
  # The main job: text from the demo model kept in the repository, sampled on
  # the built-in CPU backend (rill generate prints what follows the prompt).
  # Its output goes through a pipe so that the prompt and the text stay on one
  # line: off a terminal rill shows no load or prompt progress, and --stats
  # still prints the time to first token and tokens/s at the end.
  prompt="A fool and his money"
  echo
  printf '%s' "$prompt"
  "$build/bin/rill" generate --model "$root/models/fortune" --prompt "$prompt" --max-new-tokens 64 \
    --seed 2 --backend cpu --stats 2>&1 | cat
  echo
  # Then a Qwen2-0.5B-shaped decoder stack's speed on the default backend.
  exec "$build/bin/rill" demo
fi

# Each stage of the test run says when it starts, so that a slow CI run shows
# where its time went.
stage() { echo "== quickstart test: $1 (${SECONDS} s since start)"; }

stage "build and native suite"
# The CUDA plugin for one architecture, not the shipped four: the kernels have
# no per-architecture code, so sm_80 (the oldest shipped) still compiles every
# one of them warning-free at a quarter of the device compile; the machine
# running this has no GPU to run them on (scripts/gpu-check.sh builds for its own).
configure_and_build "$build" -DCMAKE_CUDA_ARCHITECTURES=80
# Every test but the Vulkan conformance cases under the validation layer: the
# sanitizer pass below runs that same test (the slowest of the suite on
# lavapipe), so here it would only repeat it.
(cd "$build" && ctest --output-on-failure -j "$jobs" -E '^conformance_vulkan_validation$')

# The Windows build: cross-built with MinGW-w64 beside the native build, its
# tests run under Wine (scripts/windows-check.sh, which builds only what those
# tests run). The packages were installed above.
stage "Windows build under Wine"
RILL_WINDOWS_BUILD_DIR=$build-windows RILL_JOBS=$jobs RILL_DEPS_INSTALLED=1 "$root/scripts/windows-check.sh"

# The sanitizer pass: the same suite built with clang under ASan+UBSan (LSan
# included). Tests that load librill into an uninstrumented interpreter
# (Python, Mono) or rebuild rill as a consumer carry the label no-sanitize and
# run only in the pass above. The CUDA plugin is left out here: without a GPU
# it only exercises its absence. Some Vulkan tests are left to the native
# pass, as the code they would check here is checked by others: the plugin's
# ops by conformance_vulkan_validation (conformance_vulkan's cases under the
# validation layers), the runtime's layer and model code by the _cpu twins of
# the PyTorch comparisons; under ASan on lavapipe those took a third of the
# stage. The build carries libFuzzer's coverage (-DRILL_FUZZ=ON), so the fuzz
# targets come with it at no extra build.
stage "sanitizer suite"
configure_and_build "$build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DRILL_SANITIZE=address,undefined -DRILL_FUZZ=ON -DRILL_BACKEND_CUDA=OFF \
  -DRILL_BUILD_EXAMPLES=OFF
source "$root/scripts/sanitizer-options.sh"
(cd "$build-asan" && ASAN_OPTIONS=$rill_asan_options:abort_on_error=1 LSAN_OPTIONS=$rill_lsan_options \
  UBSAN_OPTIONS=$rill_ubsan_options ctest --output-on-failure -j "$jobs" -LE no-sanitize \
  -E '^(conformance_vulkan|layer_torch_.*_vulkan|lm_torch_logits_vulkan)$')

# Every fuzz target for 10 s from its seed corpus, two at a time, in the
# sanitizer build above (scripts/fuzz.sh; docs/RELIABILITY.md says how to run
# longer).
stage "fuzz targets"
RILL_FUZZ_BUILD_DIR="$build-asan" RILL_FUZZ_PARALLEL=2 RILL_JOBS=$jobs "$root/scripts/fuzz.sh" 10

# ThreadSanitizer over the tests that run rill on several threads (contexts on
# several threads, the CPU thread pool, logging, the plugin loader): only
# those targets are built, to keep the stage short.
stage "thread sanitizer"
cmake -S "$root" -B "$build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRILL_WARNINGS_AS_ERRORS=ON \
  -DRILL_SANITIZE=thread -DRILL_BACKEND_CUDA=OFF -DRILL_BACKEND_VULKAN=OFF -DRILL_BUILD_EXAMPLES=OFF
cmake --build "$build-tsan" -j "$jobs" --target threads_test cpu_pool_errors_test plugin_loader_test
(cd "$build-tsan" && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1 \
  ctest --output-on-failure -j "$jobs" -R '^(threads|cpu_pool_errors|plugin_loader)$')
stage "done"
