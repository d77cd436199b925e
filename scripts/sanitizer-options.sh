# Sourced by scripts/quickstart.sh (the sanitizer pass of the suite) and
# scripts/fuzz.sh: the sanitizer runtime options both runs share.
# LeakSanitizer's suppressions (tests/sanitizers/lsan.supp) match function
# names, so stacks must be symbolized: llvm-14's symbolizer, named here since
# Debian puts only versioned names on PATH without the llvm package. The
# fuzz targets create Vulkan contexts too (runtime_toml, cli), so lavapipe's
# leaks reach them as they reach the tests.
rill_sanitizer_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rill_asan_options="detect_leaks=1:external_symbolizer_path=/usr/lib/llvm-14/bin/llvm-symbolizer"
rill_lsan_options="suppressions=$rill_sanitizer_root/tests/sanitizers/lsan.supp"
rill_ubsan_options="print_stacktrace=1:halt_on_error=1"
