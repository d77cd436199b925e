#!/usr/bin/env bash
# Remakes the demo model in models/fortune (the quick start generates from it;
# nobody needs to run this to use rill):
#   scripts/train-demo-model.sh [OUT]     OUT defaults to models/fortune
# Installs what is missing (the build's Debian packages, which include
# python3-torch and python3-venv, and the `fortunes` package, the training
# text), then transformers and tokenizers from PyPI into a venv in the build
# tree that uses Debian's torch. About twelve minutes on two idle cores.
# Environment: RILL_BUILD_DIR (default build).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/models/fortune}
venv=${RILL_BUILD_DIR:-$root/build}/demo-model-venv

"$root/scripts/install-deps.sh"
if ! dpkg-query -W -f='${Status}' fortunes 2>/dev/null | grep -q "ok installed"; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends fortunes
fi
# The same pinned transformers and tokenizers as the tests' reference venv.
cmake -DPYTHON=/usr/bin/python3 -DVENV="$venv" -P "$root/tests/torch/reference_venv.cmake"
if ! "$venv/bin/python" -c "import transformers, tokenizers" 2>/dev/null; then
  echo "train-demo-model: transformers and tokenizers could not be installed into $venv (no PyPI?)" >&2
  exit 1
fi
"$venv/bin/python" "$root/scripts/train_demo_model.py" --out "$out"
