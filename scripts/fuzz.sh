#!/usr/bin/env bash
# Builds rill's libFuzzer targets (tests/fuzz) with clang under
# AddressSanitizer + UndefinedBehaviorSanitizer and runs each for a bounded
# time, starting from its seed corpus (docs/RELIABILITY.md).
#   scripts/fuzz.sh [SECONDS [TARGET...]]   default: 60 seconds each, every target
# Environment: RILL_FUZZ_BUILD_DIR (default build-fuzz), RILL_JOBS (default:
# all cores), RILL_FUZZ_PARALLEL: targets run at once (default: RILL_JOBS),
# RILL_FUZZ_CORPUS_DIR: where each target's growing corpus is
# kept (default: inside the build folder; the seeds in tests/fuzz/corpus are
# only read). A crash leaves its input as crash-* in RILL_FUZZ_BUILD_DIR/findings
# and fails the script; each target's last line (executions, coverage) is
# printed.
set -euo pipefail

seconds=${1:-60}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${RILL_FUZZ_BUILD_DIR:-$root/build-fuzz}")
jobs=${RILL_JOBS:-$(nproc)}
parallel=${RILL_FUZZ_PARALLEL:-$jobs}
corpus_root=$(realpath -m "${RILL_FUZZ_CORPUS_DIR:-$build/corpus}")

# A folder already configured with -DRILL_FUZZ=ON (CI's sanitizer build) is
# used as it is; any other is configured here with only what the targets need.
if ! grep -qx 'RILL_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  cc=$(command -v clang-14 || command -v clang)
  cxx=$(command -v clang++-14 || command -v clang++)
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DRILL_FUZZ=ON -DRILL_SANITIZE=address,undefined -DRILL_WARNINGS_AS_ERRORS=ON -DRILL_BUILD_TESTS=ON \
    -DRILL_BACKEND_CUDA=OFF -DRILL_BACKEND_VULKAN=OFF -DRILL_BUILD_EXAMPLES=OFF >/dev/null
fi
cmake --build "$build" -j "$jobs" --target rill_fuzzers

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for seeds in "$root"/tests/fuzz/corpus/*/; do targets+=("$(basename "$seeds")"); done
fi

source "$root/scripts/sanitizer-options.sh"
findings=$build/findings
mkdir -p "$findings"

run_target() {  # <target>: one libFuzzer run; its summary line goes to findings/<target>.summary
  local target=$1 corpus=$corpus_root/$1 log=$findings/$1.log status=ok
  # The inputs name files to write (the CLI's output paths, a pipeline
  # cache): relative ones land in the target's own folder, not where the
  # script was started. Every path given to the fuzzer is absolute.
  local files=$findings/$1-files
  mkdir -p "$corpus" "$files"
  # -rss_limit_mb: a reader that allocates what a header claims shows up as
  # an out-of-memory finding. -close_fd_mask=3: the CLI's own output is noise.
  cd "$files" && ASAN_OPTIONS=$rill_asan_options:allocator_may_return_null=1 LSAN_OPTIONS=$rill_lsan_options \
    UBSAN_OPTIONS=$rill_ubsan_options "$build/bin/fuzz_$target" "$corpus" "$root/tests/fuzz/corpus/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -close_fd_mask=3 \
    -artifact_prefix="$findings/$target-" -print_final_stats=1 >"$log" 2>&1 || status=FAILED
  local runs cov
  runs=$(grep -Eo '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)
  echo "fuzz $target: $status, $runs executions in ${seconds}s, $cov" | tee "$findings/$target.summary"
}

# RILL_FUZZ_PARALLEL targets at once: each libFuzzer run uses one core.
rm -f "$findings"/*.summary
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  run_target "$target" &
done
wait

# grep finds nothing when every target passed: its status 1 must not end the script.
failed=$({ grep -l FAILED "$findings"/*.summary 2>/dev/null || true; } | xargs -r -n1 basename | sed 's/\.summary$//' |
  tr '\n' ' ')
if [ -n "$failed" ]; then
  # The findings folder may not outlive the run (a CI machine): each failed
  # target's report goes to the output too.
  for target in $failed; do
    echo "---- fuzz $target: the end of its log" >&2
    grep -v -E '^#[0-9]+' "$findings/$target.log" | tail -n 40 >&2
  done
  echo "fuzz: failures in $failed; inputs and logs in $findings" >&2
  exit 1
fi
