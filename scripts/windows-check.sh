#!/usr/bin/env bash
# The Windows build, cross-built with MinGW-w64 and tested under Wine:
#   scripts/windows-check.sh
# Builds what the tests a Windows build registers run (tests/windows.cmake:
# the C API, plugin loading with fake plugin DLLs, UTF-8 file names, the
# conformance suite on CPU and Vulkan, rill.exe and the examples), and only
# that (the target rill_windows_tests), then runs them with CTest under Wine.
# Wine's Vulkan (winevulkan, over the host's lavapipe) needs Wine's X11
# driver, so the tests run inside Xvfb. The CUDA plugin needs MSVC and is not
# built here.
# Environment: RILL_WINDOWS_BUILD_DIR (default build-windows), RILL_JOBS (default: all cores),
# RILL_DEPS_INSTALLED=1 (scripts/install-deps.sh has just run: scripts/quickstart.sh test).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${RILL_WINDOWS_BUILD_DIR:-$root/build-windows}
jobs=${RILL_JOBS:-$(nproc)}
start=$SECONDS

[ "${RILL_DEPS_INSTALLED:-}" = 1 ] || "$root/scripts/install-deps.sh"
RILL_JOBS=$jobs "$root/scripts/windows-deps.sh" "$build/deps"

cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/mingw-w64-x86_64.cmake" \
  -DRILL_WINDOWS_DEPS="$build/deps" -DCMAKE_BUILD_TYPE=Release -DRILL_WARNINGS_AS_ERRORS=ON \
  -DRILL_BUILD_TESTS=ON -DRILL_BUILD_EXAMPLES=ON -DRILL_BACKEND_CUDA=OFF
cmake --build "$build" -j "$jobs" --target rill_windows_tests

# One Wine prefix for the build, set up once; without the debug channels
# Wine prints nothing of its own into the tests' output.
export WINEPREFIX=$build/wineprefix WINEDEBUG=-all
wine=$(sed -n 's/^RILL_WINE:FILEPATH=//p' "$build/CMakeCache.txt")
if [ -z "$wine" ] || [ "$wine" = RILL_WINE-NOTFOUND ]; then
  echo "windows-check: wine64 not found (Debian wine64)" >&2
  exit 1
fi
# wineboot returns before the new prefix is complete: until its wineserver
# has exited, the first programs see no Vulkan driver (vkCreateInstance fails).
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  "$wine" wineboot -i >/dev/null 2>&1
  "$(dirname "$wine")/wineserver" -w
fi
(cd "$build" && xvfb-run -a ctest --output-on-failure -j "$jobs")
echo "windows-check: done in $((SECONDS - start)) s"
